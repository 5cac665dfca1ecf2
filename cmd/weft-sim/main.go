// Command weft-sim replays a day of colocation on a virtual clock under
// each policy (online only, static split, request-gap reclaim, tide
// without and with notice, Weft's tide with usage-based reclaim) and
// prints them side by side, with plots and CSV (scheduler/sim).
//
//	go run ./cmd/weft-sim -config scheduler/sim/testdata/day.yaml -out .weft/sim
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/weft-sh/weft/scheduler/sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "weft-sim:", err)
		os.Exit(1)
	}
}

func run() error {
	config := flag.String("config", "", "scenario YAML (default: the built-in default day)")
	nodes := flag.Int("nodes", 0, "override the scenario's node count (the default mix's job rates scale with it)")
	hours := flag.Float64("hours", 0, "override the scenario's duration, in hours")
	seed := flag.Uint64("seed", 0, "override the scenario's seed")
	policies := flag.String("policies", "", "comma-separated policies to run (default: the scenario's)")
	out := flag.String("out", ".weft/sim", "directory for the PNGs and the CSV (empty: none)")
	parallel := flag.Int("parallel", runtime.GOMAXPROCS(0), "policies run at once")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	// The simulation allocates many short-lived objects (the store's
	// immutable trees); collecting less often saves a fifth of its time.
	debug.SetGCPercent(1000)
	debug.SetMemoryLimit(6 << 30)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	s := sim.DefaultScenario(5000)
	if *config != "" {
		var err error
		if s, err = sim.LoadScenario(*config); err != nil {
			return err
		}
	}
	if *nodes > 0 {
		s = s.WithNodes(*nodes)
	}
	if *hours > 0 {
		s.Duration.Duration = time.Duration(*hours * float64(time.Hour))
	}
	if *seed != 0 {
		s.Seed = *seed
	}
	if *policies != "" {
		s.Policies = nil
		for _, p := range strings.Split(*policies, ",") {
			s.Policies = append(s.Policies, sim.Policy(strings.TrimSpace(p)))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	start := time.Now()
	rs, err := sim.Run(ctx, s, *parallel)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	// The warm-up is simulated too: it costs as much as any other hour.
	simHours := s.Duration.Hours() + s.WarmUp.Hours()
	fmt.Printf("weft-sim: %d nodes, %.0f hours measured after %.0f of warm-up, seed %d, %d policies\n\n",
		s.Cluster.Nodes, s.Duration.Hours(), s.WarmUp.Hours(), s.Seed, len(rs))
	if err := sim.WriteTable(os.Stdout, rs); err != nil {
		return err
	}
	var cpu time.Duration
	for _, r := range rs {
		cpu += r.Wall
	}
	fmt.Printf("\nwall %.1f s in all (%d at once); a simulated hour cost %.2f s of wall time for all policies, %.2f s per policy on average\n",
		wall.Seconds(), *parallel, wall.Seconds()/simHours, cpu.Seconds()/simHours/float64(len(rs)))
	if *out == "" {
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(*out, "samples.csv"))
	if err != nil {
		return err
	}
	if err := sim.WriteCSV(f, rs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	files, err := sim.WritePlots(*out, rs)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s and %s\n", filepath.Join(*out, "samples.csv"), strings.Join(files, ", "))
	return nil
}
