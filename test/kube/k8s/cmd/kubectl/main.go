// Command kubectl is the upstream kubectl at the version pinned in go.mod,
// so scripts and people use a client matching the local cluster.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand())
}
