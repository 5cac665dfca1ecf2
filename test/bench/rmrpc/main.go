// Command rmrpc benchmarks getApplicationReport from the Java client
// (Hadoop's own YarnClient) against weft-rm and, in the same run, against
// a real ResourceManager, and prints the ratios.
//
//	go run ./test/bench/rmrpc [-threads 2,4,8] [-warmup 10] [-seconds 15]
//
// Both servers run as they would be deployed and alone: weft-rm with its
// defaults and no node registered, the ResourceManager by its own main
// class with the JVM's defaults (DaemonJVM: no heap, GC or JIT flag, as
// the yarn script without YARN_RESOURCEMANAGER_HEAPSIZE) and no
// NodeManager. Each server's CPU (/proc/<pid>/stat) is read when the
// client's measured window opens and closes, and priced over the calls
// made in that window only: warm-up, the client's start and the
// server's own start-up are not counted.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/hadoop"
)

// result is one run of the client against one server.
type result struct {
	Threads    int     `json:"threads"`
	Calls      int     `json:"calls"`
	Seconds    float64 `json:"seconds"`
	CallsPerS  float64 `json:"callsPerSec"`
	P50Micros  float64 `json:"p50Micros"`
	P99Micros  float64 `json:"p99Micros"`
	P999Micros float64 `json:"p999Micros"`
	AppState   string  `json:"appState"`
	// ServerCPU is the server's user+system CPU over the measured window.
	ServerCPU time.Duration `json:"-"`
}

// CPUPerCall is the server's CPU per call made in the window, in µs.
func (r result) CPUPerCall() float64 {
	return float64(r.ServerCPU.Microseconds()) / float64(max(r.Calls, 1))
}

// Cores is how many cores the server used on average over the window.
func (r result) Cores() float64 {
	return r.ServerCPU.Seconds() / max(r.Seconds, 1e-9)
}

func main() {
	threadList := flag.String("threads", "8", "client threads, each its own connection; a comma-separated list runs each in turn")
	seconds := flag.Int("seconds", 15, "measured seconds per run")
	warmup := flag.Int("warmup", 10, "warm-up seconds per run, before the measured window")
	version := flag.String("hadoop", "3.4.1", "Hadoop release of client and peer")
	flag.Parse()
	threads, err := parseThreads(*threadList)
	if err == nil {
		err = run(*version, threads, *warmup, *seconds)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rmrpc:", err)
		os.Exit(1)
	}
}

// parseThreads reads -threads: positive counts separated by commas.
func parseThreads(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-threads %q: %q is not a positive count", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// server is one server under test, running, with its clients'
// configuration.
type server struct {
	name string
	conf string
	pid  int
}

func run(version string, threads []int, warmup, seconds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	work, err := os.MkdirTemp("", "weft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	client, err := hadoop.Client(ctx, version)
	if err != nil {
		return err
	}
	// The load generator keeps its test flags (serial GC), with full JIT
	// and room, so it is not the bottleneck for longer than it must be.
	client.JVMArgs = []string{"-Xmx1g", "-XX:TieredStopAtLevel=4"}
	runAll := func(s server) ([]result, error) {
		var out []result
		for _, n := range threads {
			r, err := measure(ctx, client, s, n, warmup, seconds)
			if err != nil {
				return nil, fmt.Errorf("%s, %d threads: %w", s.name, n, err)
			}
			fmt.Printf("%-22s %2d threads %8.0f calls/s   p50 %6.0f µs   p99 %6.0f µs   p99.9 %6.0f µs   server CPU %5.1f µs/call (%.2f cores)   app %s\n",
				s.name, n, r.CallsPerS, r.P50Micros, r.P99Micros, r.P999Micros, r.CPUPerCall(), r.Cores(), r.AppState)
			out = append(out, r)
		}
		return out, nil
	}

	weft, err := runWeft(ctx, work, runAll)
	if err != nil {
		return err
	}
	// The real ResourceManager, same client, same machine, right after.
	yarn, err := runResourceManager(ctx, work, version, runAll)
	if err != nil {
		return err
	}
	// With the load generator on the same cores, throughput is bounded by
	// the client; server CPU per call is what each server costs.
	fmt.Println()
	fmt.Println("threads | server          | calls/s | p50 µs | p99 µs | server CPU µs/call")
	for i, n := range threads {
		w, y := weft[i], yarn[i]
		for _, row := range []struct {
			name string
			r    result
		}{{"weft-rm", w}, {"ResourceManager", y}} {
			fmt.Printf("%7d | %-15s | %7.0f | %6.0f | %6.0f | %5.1f\n", n, row.name, row.r.CallsPerS, row.r.P50Micros, row.r.P99Micros, row.r.CPUPerCall())
		}
		fmt.Printf("%7d | weft/yarn: throughput %.2fx, p50 %.2fx, p99 %.2fx, server CPU per call %.2fx (yarn/weft %.2fx)\n",
			n, w.CallsPerS/y.CallsPerS, w.P50Micros/y.P50Micros, w.P99Micros/y.P99Micros, w.CPUPerCall()/y.CPUPerCall(), y.CPUPerCall()/w.CPUPerCall())
	}
	return nil
}

// runWeft starts weft-rm with its defaults but --local-node=false: no
// node registered, as the ResourceManager here has no NodeManager, so the
// benchmark's application waits for a node on both (weft-rm has no node
// plugin in its process either way; the flag only adds a node record).
func runWeft(ctx context.Context, work string, runAll func(server) ([]result, error)) ([]result, error) {
	bin := filepath.Join(work, "bin")
	if err := e2e.BuildBinaries(ctx, bin); err != nil {
		return nil, err
	}
	addrs, err := e2e.FreeAddrs(3)
	if err != nil {
		return nil, err
	}
	rm := &e2e.RM{Bin: filepath.Join(bin, "weft-rm"), DataDir: filepath.Join(work, "data"), ClientAddr: addrs[0], WebAddr: addrs[1],
		Args: []string{"--local-node=false"}}
	if err := rm.Start(ctx); err != nil {
		return nil, err
	}
	defer rm.Stop()
	conf := filepath.Join(work, "weft-conf")
	if err := hadoop.WriteConf(conf, addrs[0], addrs[2], addrs[1]); err != nil {
		return nil, err
	}
	return runAll(server{name: "weft-rm", conf: conf, pid: rm.PID()})
}

// runResourceManager starts Hadoop's ResourceManager alone with a
// deployment's JVM defaults (hadoop.DaemonJVM).
func runResourceManager(ctx context.Context, work, version string, runAll func(server) ([]result, error)) ([]result, error) {
	dist, err := hadoop.MiniCluster(ctx, version) // its classpath holds the ResourceManager
	if err != nil {
		return nil, err
	}
	dist.JVM = hadoop.DaemonJVM
	a, err := e2e.FreeAddrs(5)
	if err != nil {
		return nil, err
	}
	addrs := hadoop.RMDaemonAddrs{RMAddrs: hadoop.RMAddrs{Client: a[0], Scheduler: a[1], Web: a[2]}, ResourceTracker: a[3], Admin: a[4]}
	dir := filepath.Join(work, "resourcemanager")
	peer, err := dist.StartResourceManager(ctx, dir, addrs)
	if err != nil {
		return nil, err
	}
	defer peer.Stop()
	conf := filepath.Join(work, "rm-client-conf")
	if err := hadoop.WriteConf(conf, addrs.Client, addrs.Scheduler, addrs.Web); err != nil {
		return nil, err
	}
	return runAll(server{name: "ResourceManager " + version, conf: conf, pid: peer.PID()})
}

// measure runs the Java client against s with n threads and prices the
// server's CPU over the client's measured window.
func measure(ctx context.Context, client *hadoop.Dist, s server, n, warmup, seconds int) (result, error) {
	cmd := client.Command(ctx, s.conf, "bench", "sh.weft.interop.RpcBench",
		"--threads", fmt.Sprint(n), "--warmup", fmt.Sprint(warmup), "--seconds", fmt.Sprint(seconds))
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	cpu, line, readErr := readWindow(stdout, func() (time.Duration, error) { return e2e.ProcessCPU(s.pid) })
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return result{}, fmt.Errorf("client: %v\n%s", err, errOut.String())
	}
	if readErr != nil {
		return result{}, fmt.Errorf("%w\n%s", readErr, errOut.String())
	}
	var r result
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return result{}, fmt.Errorf("client's result %q: %w", line, err)
	}
	r.ServerCPU = cpu
	return r, nil
}

// readWindow reads the client's output: it samples the server's CPU at
// "WINDOW start" and at "WINDOW end", and returns the difference and the
// JSON line that follows.
func readWindow(r io.Reader, sample func() (time.Duration, error)) (time.Duration, string, error) {
	var start, end time.Duration
	var opened, closed bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var err error
		switch {
		case line == "WINDOW start" && !opened:
			opened = true
			start, err = sample()
		case line == "WINDOW end" && opened && !closed:
			closed = true
			end, err = sample()
		case strings.HasPrefix(line, "{") && closed:
			return end - start, line, nil
		case strings.HasPrefix(line, "WINDOW"):
			return 0, "", fmt.Errorf("client said %q out of order", line)
		}
		if err != nil {
			return 0, "", fmt.Errorf("server CPU: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, "", err
	}
	return 0, "", fmt.Errorf("client's output ended before its window closed and its result (window opened %v, closed %v)", opened, closed)
}
