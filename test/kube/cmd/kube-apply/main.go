// Command kube-apply server-side-applies YAML manifests to a cluster, as
// `kubectl apply --server-side` does: what `make deploy` runs.
//
//	kube-apply [-kubeconfig FILE] manifest.yaml...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/weft-sh/weft/test/kube"
)

func main() {
	home, _ := os.UserHomeDir()
	def := os.Getenv("KUBECONFIG")
	if def == "" {
		def = filepath.Join(home, ".kube", "config")
	}
	kubeconfig := flag.String("kubeconfig", def, "kubeconfig of the cluster")
	flag.Parse()
	c, err := kube.Connect(*kubeconfig)
	if err == nil {
		var objs []string
		applied, aerr := c.Apply(context.Background(), flag.Args()...)
		for _, o := range applied {
			objs = append(objs, o.GetKind()+"/"+o.GetName())
		}
		for _, o := range objs {
			fmt.Println("applied", o)
		}
		err = aerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kube-apply:", err)
		os.Exit(1)
	}
}
