// Command weft-rm runs Weft's ResourceManager facade: YARN's client
// protocol on 8032 and REST API on 8088, over an embedded state store.
// Its configuration is an RMConfiguration (rmfacade/rmconfig): a file
// (--config) under the flags given.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/weft-sh/weft/rmfacade/rmconfig"
	"github.com/weft-sh/weft/rmfacade/server"
)

func main() {
	printConfig := flag.Bool("print-config", false, "print the configuration these flags and --config make, as an "+rmconfig.Kind+" document, and exit")
	c, err := rmconfig.Parse(flag.CommandLine, os.Args[1:])
	if err != nil {
		fail(2, err)
	}
	if err := c.Validate(); err != nil {
		fail(2, fmt.Errorf("invalid configuration:\n%w", err))
	}
	if *printConfig {
		doc, err := rmconfig.Encode(c)
		if err != nil {
			fail(1, err)
		}
		os.Stdout.Write(doc)
		return
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.Level()}))
	floor, err := heapFloor(c.Memory.HeapFloor)
	if err != nil {
		fail(2, err)
	}
	limit, err := setMemoryLimit(c.Memory.Limit)
	if err != nil {
		fail(2, err)
	} else if limit > 0 {
		logger.Info("soft memory limit set", "bytes", limit, "setting", c.Memory.Limit)
	}
	gcPct := defaultGCPercent
	if c.Memory.GCPercent != nil {
		gcPct = *c.Memory.GCPercent
	}
	setGC(gcPct, c.Memory.GCPercent != nil, floorUnder(floor, limit))

	cfg, ha, err := c.Server(logger)
	if err != nil {
		fail(2, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ha != nil {
		// A replica that lost the Lease exits non-zero, to come back as a
		// standby (the kubelet restarts it).
		if err := server.RunHA(ctx, cfg, *ha); err != nil {
			fail(1, err)
		}
		return
	}
	srv, err := server.New(cfg)
	if err != nil {
		fail(1, err)
	}
	if err := srv.Serve(ctx); err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
	os.Exit(code)
}
