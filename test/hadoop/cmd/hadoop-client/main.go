// Command hadoop-client runs a pinned Apache Hadoop client against a
// ResourceManager given by address, with nothing but a generated
// yarn-site.xml, as a user would:
//
//	hadoop-client [-rm 127.0.0.1:8032] [-web 127.0.0.1:8088] [-hadoop 3.4.1] [-user alice] yarn application -list
//	hadoop-client java sh.weft.interop.SubmitApp --name demo
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"

	"github.com/weft-sh/weft/test/hadoop"
)

func main() {
	rm := flag.String("rm", "127.0.0.1:8032", "yarn.resourcemanager.address")
	scheduler := flag.String("scheduler", "127.0.0.1:8030", "yarn.resourcemanager.scheduler.address")
	web := flag.String("web", "127.0.0.1:8088", "yarn.resourcemanager.webapp.address")
	version := flag.String("hadoop", "3.4.1", "Hadoop release ("+fmt.Sprint(hadoop.Versions)+")")
	who := flag.String("user", "", "user to act as (default: the current user)")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 || args[0] != "yarn" && args[0] != "java" {
		fmt.Fprintln(os.Stderr, "usage: hadoop-client [flags] yarn <subcommand> args... | java <main class> args...")
		os.Exit(2)
	}
	if *who == "" {
		if u, err := user.Current(); err == nil {
			*who = u.Username
		}
	}
	ctx := context.Background()
	dist, err := hadoop.Client(ctx, *version)
	if err != nil {
		fail(err)
	}
	conf, err := os.MkdirTemp("", "hadoop-conf-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(conf)
	if err := hadoop.WriteConf(filepath.Join(conf), *rm, *scheduler, *web); err != nil {
		fail(err)
	}
	var cmd *exec.Cmd
	if args[0] == "yarn" {
		cmd, err = dist.YarnCommand(ctx, conf, *who, args[1:]...)
		if err != nil {
			fail(err)
		}
	} else {
		cmd = dist.Command(ctx, conf, *who, args[1], args[2:]...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.RemoveAll(conf)
			os.Exit(exit.ExitCode())
		}
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hadoop-client:", err)
	os.Exit(1)
}
