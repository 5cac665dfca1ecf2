// Command kube-images builds the local cluster's images on this machine and
// imports those that changed into its containerd: -cluster the pause,
// busybox and node-runtime images up.sh needs, -weft Weft's own binaries,
// -coredns the cluster DNS from a CoreDNS binary up.sh built.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/weft-sh/weft/deploy/images"
)

func main() {
	address := flag.String("address", "", "containerd socket")
	dir := flag.String("dir", "", "where archives and digests are kept")
	cluster := flag.Bool("cluster", false, "the cluster's own images (pause, busybox, node-runtime)")
	weft := flag.Bool("weft", false, "Weft's image, from this module's ./cmd/...")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox")
	coredns := flag.String("coredns", "", "a static CoreDNS binary, for the cluster DNS image")
	flag.Parse()
	if err := run(context.Background(), *address, *dir, *cluster, *weft, *busybox, *coredns); err != nil {
		fmt.Fprintln(os.Stderr, "kube-images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, address, dir string, cluster, weft bool, busybox, coredns string) error {
	if address == "" || dir == "" {
		return fmt.Errorf("-address and -dir are required")
	}
	tmp, err := os.MkdirTemp("", "kube-images")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var todo []images.Image
	if cluster {
		pause, err := images.BuildStatic(tmp, "github.com/weft-sh/weft/cmd/pause", "pause")
		if err != nil {
			return err
		}
		todo = append(todo, images.Pause(pause), images.Busybox(busybox), images.NodeRuntime())
	}
	if coredns != "" {
		todo = append(todo, images.CoreDNS(coredns))
	}
	if weft {
		img, err := images.BuildWeft(tmp)
		if err != nil {
			return err
		}
		todo = append(todo, img)
	}
	im := images.Importer{Address: address, Dir: dir}
	for _, img := range todo {
		imported, err := im.Import(ctx, img)
		if err != nil {
			return err
		}
		if imported {
			fmt.Fprintf(os.Stderr, "kube-images: imported %s\n", img.Ref)
		}
	}
	return nil
}
