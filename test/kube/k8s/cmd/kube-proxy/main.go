// Command kube-proxy is the upstream kube-proxy, built at the version
// pinned in go.mod: Services' ClusterIPs on the kind-style cluster's nodes,
// in iptables mode, as kind runs it.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
