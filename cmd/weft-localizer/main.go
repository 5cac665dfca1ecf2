// Command weft-localizer is the init container of every YARN container
// pod: it fetches the container's LocalResources into its working
// directory before the container's commands run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/protobuf/proto"

	"github.com/weft-sh/weft/bigdataplugin/localizer"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
)

func main() {
	var resources, tokens, workDir string
	var opts localizer.Options
	flag.StringVar(&resources, "resources", "", "file holding a ContainerLaunchContextProto with the local resources")
	flag.StringVar(&tokens, "tokens", "", "the container's token storage (for secure filesystems; unused with SIMPLE)")
	flag.StringVar(&workDir, "work-dir", "", "the container's working directory")
	flag.StringVar(&opts.CacheDir, "cache-dir", "", "the node's cache of localized resources")
	flag.StringVar(&opts.User, "user", "", "the application's user (the scope of its PRIVATE resources)")
	flag.StringVar(&opts.App, "app", "", "the application's id, application_<cluster timestamp>_<n> (the scope of its APPLICATION resources)")
	flag.StringVar(&opts.RefsFile, "refs-file", "", "where to record the cache entries this container links, for the node's cache cleaner")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, resources, workDir, opts); err != nil {
		// The message is the pod's termination message, which becomes the
		// container's diagnostics.
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, resources, workDir string, opts localizer.Options) error {
	b, err := os.ReadFile(resources)
	if err != nil {
		return err
	}
	clc := &yarnpb.ContainerLaunchContextProto{}
	if err := proto.Unmarshal(b, clc); err != nil {
		return fmt.Errorf("local resources: %w", err)
	}
	return localizer.Localize(ctx, opts, clc.GetLocalResources(), workDir)
}
