// Command weft-rm runs Weft's ResourceManager facade: YARN's client
// protocol on 8032 and REST API on 8088, over an embedded state store.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/server"
)

func main() {
	var cfg server.Config
	var queuesFile string
	flag.StringVar(&cfg.ClientAddr, "client-address", "127.0.0.1:8032", "ApplicationClientProtocol address (yarn.resourcemanager.address)")
	flag.StringVar(&cfg.SchedulerAddr, "scheduler-address", "127.0.0.1:8030", "ApplicationMasterProtocol address (yarn.resourcemanager.scheduler.address)")
	flag.StringVar(&cfg.WebAddr, "webapp-address", "127.0.0.1:8088", "REST API address (yarn.resourcemanager.webapp.address)")
	flag.StringVar(&cfg.DataDir, "data-dir", ".weft/data", "directory of the embedded state store")
	flag.StringVar(&queuesFile, "queues", "", "JSON file with the queue tree (default: root.default)")
	flag.BoolVar(&cfg.LocalNode, "local-node", true, "register this machine as the cluster's node (embedded mode)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg.Logger = logger
	if queuesFile != "" {
		b, err := os.ReadFile(queuesFile)
		if err == nil {
			var qs []quota.QueueConfig
			if err = json.Unmarshal(b, &qs); err == nil {
				cfg.Queues = qs
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "weft-rm: queues %s: %v\n", queuesFile, err)
			os.Exit(2)
		}
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(1)
	}
}
