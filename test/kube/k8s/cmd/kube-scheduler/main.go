// Command kube-scheduler is the upstream scheduler, built at the version
// pinned in go.mod, for Weft's local test cluster (the default scheduler
// until Weft's binds its own pods, and the peer its benchmarks compare to).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
