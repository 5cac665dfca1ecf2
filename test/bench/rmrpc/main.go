// Command rmrpc benchmarks getApplicationReport from the Java client
// (Hadoop's own YarnClient) against weft-rm and, in the same run, against
// a real ResourceManager (MiniYARNCluster), and prints the ratio.
//
//	go run ./test/bench/rmrpc [-threads 8] [-seconds 15]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/hadoop"
)

type result struct {
	Threads    int     `json:"threads"`
	Calls      int     `json:"calls"`
	TotalCalls int64   `json:"totalCalls"`
	CallsPerS  float64 `json:"callsPerSec"`
	P50Micros  float64 `json:"p50Micros"`
	P99Micros  float64 `json:"p99Micros"`
	P999Micros float64 `json:"p999Micros"`
	CPUPerCall float64 `json:"-"`
}

func main() {
	threads := flag.Int("threads", 8, "client threads, each its own connection")
	seconds := flag.Int("seconds", 15, "measured seconds per target")
	warmup := flag.Int("warmup", 5, "warm-up seconds per target")
	version := flag.String("hadoop", "3.4.1", "Hadoop release of client and peer")
	flag.Parse()
	if err := run(*version, *threads, *warmup, *seconds); err != nil {
		fmt.Fprintln(os.Stderr, "rmrpc:", err)
		os.Exit(1)
	}
}

func run(version string, threads, warmup, seconds int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
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
	// The load generator must not be the bottleneck: full JIT.
	client.JVMArgs = []string{"-Xmx1g", "-XX:TieredStopAtLevel=4"}
	// bench runs the Java client against one server and prices the
	// server's CPU per call over the client's whole run.
	bench := func(name, conf string, serverPID int) (result, error) {
		cpu0, err := e2e.ProcessCPU(serverPID)
		if err != nil {
			return result{}, err
		}
		out, errOut, err := client.Run(ctx, conf, "bench", "sh.weft.interop.RpcBench",
			"--threads", fmt.Sprint(threads), "--warmup", fmt.Sprint(warmup), "--seconds", fmt.Sprint(seconds))
		var r result
		if err == nil {
			err = json.Unmarshal([]byte(out), &r)
		}
		if err != nil {
			return r, fmt.Errorf("%s: %v\n%s", name, err, errOut)
		}
		cpu1, err := e2e.ProcessCPU(serverPID)
		if err != nil {
			return r, err
		}
		r.CPUPerCall = float64((cpu1 - cpu0).Microseconds()) / float64(max(r.TotalCalls, 1))
		fmt.Printf("%-22s %10.0f calls/s   p50 %7.0f µs   p99 %7.0f µs   p99.9 %7.0f µs   server CPU %5.1f µs/call\n",
			name, r.CallsPerS, r.P50Micros, r.P99Micros, r.P999Micros, r.CPUPerCall)
		return r, nil
	}

	// Weft.
	bin := filepath.Join(work, "bin")
	if err := e2e.BuildBinaries(ctx, bin); err != nil {
		return err
	}
	addrs := make([]string, 3)
	for i := range addrs {
		if addrs[i], err = e2e.FreeAddr(); err != nil {
			return err
		}
	}
	rm := &e2e.RM{Bin: filepath.Join(bin, "weft-rm"), DataDir: filepath.Join(work, "data"), ClientAddr: addrs[0], WebAddr: addrs[1]}
	if err := rm.Start(ctx); err != nil {
		return err
	}
	weftConf := filepath.Join(work, "weft-conf")
	if err := hadoop.WriteConf(weftConf, addrs[0], addrs[2], addrs[1]); err != nil {
		return err
	}
	weft, err := bench("weft-rm", weftConf, rm.PID())
	rm.Stop()
	if err != nil {
		return err
	}

	// The real ResourceManager, same client, same machine, right after.
	mini, err := hadoop.MiniCluster(ctx, version)
	if err != nil {
		return err
	}
	// The peer gets the full JIT and room, as a production RM would.
	mini.JVMArgs = []string{"-Xmx2g", "-XX:TieredStopAtLevel=4"}
	peer, err := mini.StartService(ctx, work, "sh.weft.interop.MiniRM")
	if err != nil {
		return err
	}
	defer peer.Stop()
	ready := peer.Ready
	if len(ready) != 3 {
		return fmt.Errorf("MiniRM said READY %v", ready)
	}
	miniConf := filepath.Join(work, "mini-client-conf")
	if err := hadoop.WriteConf(miniConf, ready[0], ready[1], ready[2]); err != nil {
		return err
	}
	yarn, err := bench("ResourceManager "+version, miniConf, peer.PID())
	if err != nil {
		return err
	}
	// With the load generator on the same cores, throughput is bounded by
	// the client; server CPU per call is what each server costs.
	fmt.Printf("ratio weft/yarn: throughput %.2fx, p99 %.2fx, server CPU per call %.2fx (yarn/weft: %.2fx cheaper)\n",
		weft.CallsPerS/yarn.CallsPerS, weft.P99Micros/yarn.P99Micros, weft.CPUPerCall/yarn.CPUPerCall, yarn.CPUPerCall/weft.CPUPerCall)
	return nil
}
