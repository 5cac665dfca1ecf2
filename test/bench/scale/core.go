package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// coreBench is the scheduler core's benchmark at the same size
// (scheduler/bench_test.go): a cycle over 10,000 nodes and 100,000
// pending pods in 1,000 jobs and 20 queues, 96,000 placed with a 100-node
// search, and the plan checked and written by ApplyPlan — the scheduling
// decisions/s in memory, which the target (≥ 100,000/s) is set for.
// Through weft-rm the same work shares the machine with the AMs' calls
// and uses kube-scheduler's adaptive search (500 of 10,000 nodes per
// pod); the table prints both.
const coreBench = `Schedule/10k/score=100/cycle\+apply`

// buildCore builds the scheduler package's test binary of the tree at dir
// into bin.
func buildCore(ctx context.Context, dir, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "./scheduler")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go test -c ./scheduler in %s: %v\n%s", dir, err, out)
	}
	return nil
}

// measureCore runs each binary's core benchmark runs times, the binaries
// in turn so that the machine's drift falls on each alike, and returns
// each one's median decisions/s (0 for an empty bin, or a binary without
// the benchmark).
func measureCore(ctx context.Context, bins, labels []string, runs int) ([]float64, error) {
	got := make([][]float64, len(bins))
	for range runs {
		for i, bin := range bins {
			if bin == "" {
				continue
			}
			cmd := exec.CommandContext(ctx, bin, "-test.run", "^$", "-test.bench", coreBench, "-test.benchtime", "3x")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("%s: %v\n%s", bin, err, out)
			}
			if v, ok := decisionsPerSecond(string(out)); ok {
				got[i] = append(got[i], v)
			}
		}
	}
	medians := make([]float64, len(bins))
	for i, vs := range got {
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		medians[i] = vs[len(vs)/2]
		runs := make([]string, len(vs))
		for j, v := range vs {
			runs[j] = rate(v)
		}
		fmt.Printf("   scheduler core in memory, %s: %s decisions/s (runs, sorted)\n", labels[i], strings.Join(runs, ", "))
	}
	return medians, nil
}

// decisionsPerSecond finds the decisions/s metric in a benchmark's output.
func decisionsPerSecond(out string) (float64, bool) {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "BenchmarkSchedule/") {
			continue
		}
		f := strings.Fields(line)
		for i := 1; i < len(f); i++ {
			if f[i] == "decisions/s" {
				v, err := strconv.ParseFloat(f[i-1], 64)
				return v, err == nil
			}
		}
	}
	return 0, false
}
