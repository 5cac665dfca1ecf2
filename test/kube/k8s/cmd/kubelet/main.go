// Command kubelet is the upstream kubelet, built at the version pinned in
// go.mod, so pods of Weft's local test cluster really run (containerd + runc
// from Debian, cgroupfs driver).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	os.Exit(cli.Run(app.NewKubeletCommand()))
}
