// Command kube-apiserver is the upstream Kubernetes API server, built from
// the Go module proxy at the version pinned in go.mod, for Weft's local
// test cluster. It only calls the upstream command.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
