// Command weft-nodeplugin runs beside the kubelet on every node: it plays
// YARN's NodeManager to ApplicationMasters, running their containers as
// pods bound to this node.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/weft-sh/weft/bigdataplugin/plugin"
	"github.com/weft-sh/weft/translator"
)

func main() {
	var cfg plugin.Config
	var kubeconfig, profile string
	host, _ := os.Hostname()
	if n := os.Getenv("NODE_NAME"); n != "" {
		host = n
	}
	flag.StringVar(&cfg.Address, "address", "127.0.0.1:8041", "ContainerManagementProtocol address (yarn.nodemanager.address)")
	flag.StringVar(&cfg.NodeManager.NodeName, "node-name", strings.ToLower(host), "this node's name (default $NODE_NAME or the hostname)")
	flag.StringVar(&cfg.NMKeySecret, "nm-key-secret", "", "namespace/name of the Secret with the master key shared with weft-rm")
	flag.StringVar(&cfg.NMKeyFile, "nm-key-file", "", "file with the master key shared with weft-rm (instead of --nm-key-secret)")
	flag.StringVar(&kubeconfig, "kubeconfig", "in-cluster", "kubeconfig; \"in-cluster\" for the pod's service account")
	flag.StringVar(&cfg.NodeManager.ClusterID, "cluster-id", "weft", "the cluster id of the weft-rm this node serves")
	flag.StringVar(&cfg.NodeManager.Namespace, "namespace", "weft-jobs", "namespace of the pods of YARN applications")
	flag.StringVar(&profile, "profile", "plain", "colocation profile for reclaimed resources: plain, katalyst, koordinator")
	vcoreMilli := flag.Int64("milli-cpu-per-vcore", 1000, "CPU of one YARN vcore, in millicores (as weft-rm's)")
	flag.StringVar(&cfg.ShuffleAddress, "shuffle-address", "127.0.0.1:13562", "MapReduce shuffle service address (mapreduce.shuffle.port)")
	flag.StringVar(&cfg.HTTPAddress, "http-address", "127.0.0.1:8042", "containers' logs over HTTP (yarn.nodemanager.webapp.address)")
	cfg.NodeManager.Runtime.AddFlags(flag.CommandLine)
	flag.Parse()

	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	p, err := translator.ProfileByName(profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: %v\n", err)
		os.Exit(2)
	}
	p.MilliCPUPerVCore = *vcoreMilli
	cfg.NodeManager.Profile = p
	if kubeconfig == "in-cluster" {
		cfg.Kubernetes, err = rest.InClusterConfig()
	} else {
		cfg.Kubernetes, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: kubernetes: %v\n", err)
		os.Exit(2)
	}
	pl, err := plugin.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := pl.Serve(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "weft-nodeplugin: %v\n", err)
		os.Exit(1)
	}
}
