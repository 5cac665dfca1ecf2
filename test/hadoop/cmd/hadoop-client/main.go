// Command hadoop-client runs a pinned Apache Hadoop client against a
// ResourceManager given by address, with nothing but a generated
// yarn-site.xml, as a user would:
//
//	hadoop-client [-rm 127.0.0.1:8032] [-web 127.0.0.1:8088] [-fs hdfs://127.0.0.1:8020] [-hadoop 3.4.1] [-user alice] yarn application -list
//	hadoop-client java sh.weft.interop.SubmitApp --name demo
//	hadoop-client -conf .weft/demo/conf jar examples pi 4 1000
//
// -conf uses an existing client configuration directory (HADOOP_CONF_DIR,
// as make run writes one) instead of generating one. jar runs a jar as
// `hadoop jar` does; "examples" and "distributedshell" name the release's
// MapReduce examples and DistributedShell jars.
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
	confDir := flag.String("conf", "", "an existing client configuration directory to use (HADOOP_CONF_DIR); default: one generated from -rm, -scheduler, -web and -fs")
	defaultFS := flag.String("fs", "", "fs.defaultFS of the generated configuration (e.g. hdfs://127.0.0.1:8020)")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 || args[0] != "yarn" && args[0] != "java" && args[0] != "jar" {
		fmt.Fprintln(os.Stderr, "usage: hadoop-client [flags] yarn <subcommand> args... | java <main class> args... | jar <jar|examples|distributedshell> args...")
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
	conf, generated := *confDir, *confDir == ""
	if generated {
		if conf, err = os.MkdirTemp("", "hadoop-conf-"); err != nil {
			fail(err)
		}
		defer os.RemoveAll(conf)
		if err := hadoop.WriteConfWithFS(filepath.Join(conf), *rm, *scheduler, *web, *defaultFS); err != nil {
			fail(err)
		}
	} else if conf, err = filepath.Abs(conf); err != nil {
		fail(err)
	}
	var cmd *exec.Cmd
	switch args[0] {
	case "yarn":
		cmd, err = dist.YarnCommand(ctx, conf, *who, args[1:]...)
		if err != nil {
			fail(err)
		}
	case "jar":
		jar := args[1]
		if prefix, ok := map[string]string{"examples": "hadoop-mapreduce-examples-", "distributedshell": "hadoop-yarn-applications-distributedshell-"}[jar]; ok {
			if jar, err = dist.Jar(prefix); err != nil {
				fail(err)
			}
		}
		cmd = dist.Command(ctx, conf, *who, "org.apache.hadoop.util.RunJar", append([]string{jar}, args[2:]...)...)
	default:
		cmd = dist.Command(ctx, conf, *who, args[1], args[2:]...)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if generated { // os.Exit skips the deferred removal
				os.RemoveAll(conf)
			}
			os.Exit(exit.ExitCode())
		}
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hadoop-client:", err)
	os.Exit(1)
}
