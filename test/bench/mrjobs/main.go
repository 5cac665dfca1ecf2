// Command mrjobs measures the wall time of unmodified MapReduce jobs —
// hadoop-mapreduce-examples pi and wordcount, submitted by Hadoop's own
// client — on Weft (weft-rm and a node plugin over the local Kubernetes
// cluster) and, in the same run over the same MiniDFSCluster, on a real
// YARN (MiniMRYarnCluster), and prints the ratio Weft/YARN (target ≤ 1.2).
//
//	go run ./test/bench/mrjobs [-rounds 3]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
)

func main() {
	rounds := flag.Int("rounds", 3, "runs of each job on each cluster (alternating)")
	keep := flag.Bool("keep-cluster", false, "leave the local Kubernetes cluster up afterwards")
	logs := flag.String("logs", "", "write weft-rm's and the node plugin's logs into this directory")
	only := flag.String("only", "", "run only the jobs whose name starts with this")
	flag.Parse()
	if err := run(*rounds, *keep, *logs, *only); err != nil {
		fmt.Fprintln(os.Stderr, "mrjobs:", err)
		os.Exit(1)
	}
}

// job is one benchmarked job: its examples arguments, given a fresh
// output directory.
type job struct {
	name string
	args func(out string) []string
}

func run(rounds int, keep bool, logs, only string) (err error) {
	// Ctrl-C ends the run, and still stops what it started.
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, 60*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp("", "weft-bench-mr-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "bin")
	if err := e2e.BuildBinaries(ctx, bin); err != nil {
		return err
	}
	cluster, err := kube.Up(ctx)
	if err != nil {
		return err
	}
	if !keep {
		defer kube.Down(context.Background())
	}
	if _, err := cluster.Apply(ctx, "deploy/base/namespaces.yaml", "deploy/profiles/plain/priorityclasses.yaml"); err != nil {
		return err
	}
	if err := e2e.BuildWeftImage(ctx); err != nil {
		return err
	}
	weft, err := e2e.StartWeftOnKube(ctx, e2e.WeftOnKubeOptions{Cluster: cluster, Version: "3.4.1", Work: filepath.Join(work, "weft"), BinDir: bin})
	if err != nil {
		return err
	}
	defer weft.Stop()
	if logs != "" {
		defer func() {
			os.MkdirAll(logs, 0o755)
			os.WriteFile(filepath.Join(logs, "weft-rm.log"), []byte(weft.RM.Logs()), 0o644)
			os.WriteFile(filepath.Join(logs, "weft-nodeplugin.log"), []byte(weft.PluginLogs()), 0o644)
		}()
	}
	mini, err := hadoop.MiniCluster(ctx, "3.4.1")
	if err != nil {
		return err
	}
	peerDir := filepath.Join(work, "peer")
	if err := os.MkdirAll(peerDir, 0o755); err != nil {
		return err
	}
	peer, err := mini.StartService(ctx, peerDir, "sh.weft.interop.MiniMR", weft.DefaultFS, filepath.Join(peerDir, "conf"))
	if err != nil {
		return fmt.Errorf("MiniMRYarnCluster: %w", err)
	}
	defer peer.Stop()
	peerConf := peer.Ready[0]

	// wordcount's input: 4 files, about 4 MB of words, in the shared HDFS.
	input := filepath.Join(work, "words")
	if err := os.MkdirAll(input, 0o755); err != nil {
		return err
	}
	words := strings.Fields("weft yarn kubernetes hadoop spark shuffle reclaimed queue tier node pod colocation batch online trough")
	for f := 0; f < 4; f++ {
		var b strings.Builder
		for i := 0; b.Len() < 1<<20; i++ {
			b.WriteString(words[(i*7+f+i/13)%len(words)])
			b.WriteByte(" \n"[btoi(i%12 == 11)])
		}
		if err := os.WriteFile(filepath.Join(input, fmt.Sprintf("part-%d.txt", f)), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	dist := weft.Dist
	if _, errOut, err := dist.Hadoop(ctx, weft.Conf, "alice", "fs", "-mkdir", "-p", "/user/alice/bench/words"); err != nil {
		return fmt.Errorf("mkdir: %v: %s", err, errOut)
	}
	if _, errOut, err := dist.Hadoop(ctx, weft.Conf, "alice", "fs", "-put", "-f", input+"/part-0.txt", input+"/part-1.txt", input+"/part-2.txt", input+"/part-3.txt", "/user/alice/bench/words"); err != nil {
		return fmt.Errorf("put: %v: %s", err, errOut)
	}
	examples, err := dist.Jar("hadoop-mapreduce-examples-")
	if err != nil {
		return err
	}
	jobs := []job{
		{"pi 4 1000", func(string) []string { return []string{"pi", "4", "1000"} }},
		{"wordcount (4 MB, 2 reducers)", func(out string) []string {
			return []string{"wordcount", "-Dmapreduce.job.reduces=2", "/user/alice/bench/words", out}
		}},
	}
	targets := []struct{ name, conf string }{{"weft", weft.Conf}, {"yarn", peerConf}}
	times := map[string]map[string][]time.Duration{}
	n := 0
	for r := 0; r < rounds; r++ {
		for _, j := range jobs {
			if !strings.HasPrefix(j.name, only) {
				continue
			}
			for _, t := range targets {
				n++
				out := fmt.Sprintf("/user/alice/bench/out-%s-%d", t.name, n)
				cmd := dist.Command(ctx, t.conf, "alice", "org.apache.hadoop.util.RunJar", append([]string{examples}, j.args(out)...)...)
				var log bytes.Buffer
				cmd.Stdout, cmd.Stderr = &log, &log
				start := time.Now()
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("%s on %s: %v\n%s", j.name, t.name, err, log.String())
				}
				d := time.Since(start)
				if times[j.name] == nil {
					times[j.name] = map[string][]time.Duration{}
				}
				times[j.name][t.name] = append(times[j.name][t.name], d)
				fmt.Printf("round %d  %-30s %-5s %6.1fs\n", r+1, j.name, t.name, d.Seconds())
			}
		}
	}
	fmt.Printf("\nmedian wall time of %d runs, same machine, same HDFS (MiniDFSCluster), Hadoop 3.4.1 client:\n", rounds)
	fmt.Printf("%-30s %8s %8s %12s\n", "job", "weft", "yarn", "weft/yarn")
	for _, j := range jobs {
		if !strings.HasPrefix(j.name, only) {
			continue
		}
		w, y := median(times[j.name]["weft"]), median(times[j.name]["yarn"])
		fmt.Printf("%-30s %7.1fs %7.1fs %11.2fx\n", j.name, w.Seconds(), y.Seconds(), w.Seconds()/y.Seconds())
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
