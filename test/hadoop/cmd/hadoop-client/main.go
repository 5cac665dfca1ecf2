// Command hadoop-client runs a pinned Apache Hadoop client against a
// ResourceManager given by address, with nothing but a generated
// yarn-site.xml, as a user would:
//
//	hadoop-client [-rm 127.0.0.1:8032] [-web 127.0.0.1:8088] [-fs hdfs://127.0.0.1:8020] [-hadoop 3.4.1] [-user alice] yarn application -list
//	hadoop-client java sh.weft.interop.SubmitApp --name demo
//	hadoop-client -conf .weft/demo/conf jar examples pi 4 1000
//	hadoop-client -conf .weft/demo/conf jar distributedshell -shell_command 'echo hi' -num_containers 2
//	hadoop-client -conf .weft/demo/conf spark-submit --master yarn --deploy-mode cluster --class sh.weft.spark.SparkPi examples 10
//
// -conf uses an existing client configuration directory (HADOOP_CONF_DIR,
// as make run writes one) instead of generating one. jar runs a jar as
// `hadoop jar` does; "examples" and "distributedshell" name the release's
// MapReduce examples and DistributedShell jars (DistributedShell's client
// is given its own jar with -jar unless the arguments name one).
// spark-submit runs the pinned Spark's, its jars on the nodes
// (spark.yarn.jars=local:..., the node plugin mounts SPARK_HOME) unless
// the arguments set spark.yarn.jars; "examples" names the test harness's
// applications jar, whose sh.weft.spark.SparkPi is Spark's example (Spark
// publishes no examples jar to Maven).
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
	"slices"
	"strings"

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
	if len(args) < 2 || args[0] != "yarn" && args[0] != "java" && args[0] != "jar" && args[0] != "spark-submit" {
		fmt.Fprintln(os.Stderr, "usage: hadoop-client [flags] yarn <subcommand> args... | java <main class> args... | jar <jar|examples|distributedshell> args... | spark-submit args...")
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
		jar, rest := args[1], args[2:]
		if prefix, ok := map[string]string{"examples": "hadoop-mapreduce-examples-", "distributedshell": "hadoop-yarn-applications-distributedshell-"}[jar]; ok {
			if jar, err = dist.Jar(prefix); err != nil {
				fail(err)
			}
			if args[1] == "distributedshell" && !slices.Contains(rest, "-jar") {
				rest = append([]string{"-jar", jar}, rest...)
			}
		}
		cmd = dist.Command(ctx, conf, *who, "org.apache.hadoop.util.RunJar", append([]string{jar}, rest...)...)
	case "spark-submit":
		spark, err := hadoop.SparkDist(ctx)
		if err != nil {
			fail(err)
		}
		cmd = spark.Submit(ctx, conf, *who, sparkArgs(spark, args[1:])...)
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

// sparkArgs are spark-submit's arguments with "examples" as the
// application jar named, and Spark's jars taken from the nodes unless the
// arguments say where they are.
func sparkArgs(spark *hadoop.Spark, args []string) []string {
	out := make([]string, 0, len(args)+2)
	jars, named := false, false
	for i, a := range args {
		if strings.HasPrefix(a, "spark.yarn.jars=") || strings.HasPrefix(a, "spark.yarn.archive=") {
			jars = true
		}
		// The first argument that is neither an option nor an option's
		// value is the application jar.
		if a == "examples" && !named && (i == 0 || !strings.HasPrefix(args[i-1], "--")) {
			a, named = spark.AppJar, true
		}
		out = append(out, a)
	}
	if !jars {
		out = append([]string{"--conf", "spark.yarn.jars=local:" + spark.Home + "/jars/*"}, out...)
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hadoop-client:", err)
	os.Exit(1)
}
