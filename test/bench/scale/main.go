// Command scale measures weft-rm at a large cluster's size:
// 10,000 nodes, 1,000 applications across 20 queues holding 100
// containers each (100,000 in all), and their 1,000 AMs heartbeating at
// YARN's default interval of 1 s through the real IPC server. It prints
// weft-rm's resident memory, allocate's latency at the client, the
// scheduler's decisions per second with the plan checked and applied, and
// the time from an ask to its grant — for today's code and, measured the
// same way in the same run, for a baseline revision built from a
// temporary git worktree, so that the gain is a ratio.
//
// weft-rm runs as a process, built from each revision's ./cmd/weft-rm,
// and is driven only through its protocols, so the benchmark works on any
// revision that speaks them:
//
//   - Nodes come from Kubernetes, as on a cluster: weft-rm is given a
//     kubeconfig (profile plain: a node offers its allocatable) naming a
//     stand-in API server at the process boundary (kubeapi.go, which says
//     why not a real one here) that serves the 10,000 Ready nodes to
//     weft-rm's node watch, and no pods.
//   - Applications are unmanaged AMs over the real protocols: submitted
//     over the client protocol (Hadoop IPC, SIMPLE auth) to one of the
//     queues in turn, registered over the AM protocol with their
//     attempt's AMRMToken (TOKEN/DIGEST-MD5), each on its own connection.
//   - Each AM asks for its containers (1 GiB, 1 vcore) and heartbeats
//     every -heartbeat until it holds them all. The containers are
//     granted and acquired — what YARN's RM counts as allocated, with
//     container tokens and NMTokens issued — but not started: no node
//     plugin runs them as pods, so the launcher's and the node watch's
//     pod work is not part of what is measured (docs/benchmarks/scale.md).
//   - Then, for -steady, every AM heartbeats every -heartbeat, as
//     AMRMClientAsync does (the next call a heartbeat after the last one
//     returned), with an empty ask; allocate's latency is each call's
//     round trip at the client. Every -probe, one AM asks for one more
//     container and releases it once granted: ask→grant on a heartbeating
//     AM is from the call carrying the ask to the response carrying the
//     grant (heartbeat-bound, as for any YARN AM), and "polled" is the
//     same with that AM calling every 10 ms after its ask, which leaves
//     the RM's own time.
//
// Decisions per second are the RM's own numbers, read from its
// Prometheus endpoint before and after the AMs' asks: containers granted
// (weft_containers_granted_total) over the time its cycles spent from
// start to the plan checked and applied in memory
// (weft_scheduling_decision_seconds: building the scheduler's view of
// every node, application and container, deciding, and ApplyPlan's
// check), before grants are written. RSS is /proc/PID/status VmRSS,
// sampled each second; its largest value is printed.
//
// The target for decisions/s (≥ 100,000) is set in memory, so each
// revision's scheduler core is measured too, before anything else runs:
// its own benchmark at the same size (coreBench), built from the same
// tree and run -core-runs times with the revisions in turn; the median
// is printed. Through weft-rm the cycle shares two cores with 1,000 AMs'
// calls and the benchmark's own clients, and searches 500 nodes per pod
// (kube-scheduler's adaptive bound) where the core's searches 100.
//
//	go run ./test/bench/scale [-nodes 10000] [-apps 1000] [-containers 100] [-queues 20] [-baseline 502a525]
//	go run ./test/bench/scale -nodes 1000 -apps 100 -steady 20s   # quick
//	go run ./test/bench/scale -baseline none -memory-limit 400Mi  # with and without a soft memory limit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// options are the benchmark's sizes and phases.
type options struct {
	nodes, apps, containers, queues int
	heartbeat, steady, probe        time.Duration
	// phaseTimeout ends a phase a revision cannot finish; what it
	// reached is printed.
	phaseTimeout time.Duration
	logs         string
	// profiles, when set, is where today's weft-rm (run with --profiling)
	// leaves its heap after the fill and its CPU while steady.
	profiles string
	// rmArgs are more flags for the weft-rm measured.
	rmArgs []string
	// coreRuns is how many times the scheduler core's benchmark runs for
	// each revision (coreBench); 0 skips it.
	coreRuns int
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 10000, "nodes (32 CPUs, 256 GiB each)")
	flag.IntVar(&o.apps, "apps", 1000, "applications, each an unmanaged AM")
	flag.IntVar(&o.containers, "containers", 100, "containers each application holds")
	flag.IntVar(&o.queues, "queues", 20, "leaf queues, equal shares; applications go to them in turn")
	flag.DurationVar(&o.heartbeat, "heartbeat", time.Second, "AM heartbeat interval (yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms, AMRMClientAsync's)")
	flag.DurationVar(&o.steady, "steady", 30*time.Second, "how long the held containers' AMs heartbeat while measured")
	flag.DurationVar(&o.probe, "probe", 250*time.Millisecond, "how often one AM asks for one more container (ask→grant)")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 6*time.Minute, "longest a phase may take before the revision is reported as not carrying the load")
	baseline := flag.String("baseline", "502a525", "revision measured beside today's code (before the per-AM sessions); \"none\" to skip")
	flag.StringVar(&o.logs, "logs", "", "keep each weft-rm's log in this directory")
	flag.StringVar(&o.profiles, "profiles", "", "save today's weft-rm heap profiles after the fill and after the steady phase, and its CPU profiles over the fill's first 10 s and while steady, in this directory")
	flag.IntVar(&o.coreRuns, "core-runs", 3, "runs of the scheduler core's benchmark at the same size for each revision, the median printed (0: none)")
	memLimit := flag.String("memory-limit", "", "also measure today's weft-rm with this --memory-limit (a soft memory limit, e.g. 400Mi), beside it without")
	flag.Parse()
	if err := run(o, *baseline, *memLimit); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(o options, baseline, memLimit string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := gitOutput(ctx, "", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "weft-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	head, err := gitOutput(ctx, root, "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	type rev struct {
		label, bin string
		// core is the scheduler package's test binary (empty: not
		// measured for this run).
		core     string
		args     []string
		baseline bool
	}
	revs := []rev{{label: "today (" + head + ", working tree)", bin: filepath.Join(work, "today", "weft-rm"),
		core: filepath.Join(work, "today", "scheduler.test")}}
	if err := goBuild(ctx, root, revs[0].bin); err != nil {
		return err
	}
	if err := buildCore(ctx, root, revs[0].core); err != nil {
		return err
	}
	if memLimit != "" {
		// The same binary with a soft memory limit, an operator's setting
		// (the chart's rm.memoryLimit): RSS and allocate's latency with it.
		revs = append(revs, rev{label: "today, --memory-limit " + memLimit, bin: revs[0].bin, args: []string{"--memory-limit", memLimit}})
	}
	if baseline != "none" {
		bin, core, short, err := buildAt(ctx, root, baseline, work)
		if err != nil {
			return fmt.Errorf("baseline %s: %w", baseline, err)
		}
		revs = append(revs, rev{label: "baseline (" + short + ")", bin: bin, core: core, baseline: true})
	}

	// The scheduler core first, on a machine not yet running anything
	// of the benchmark's.
	var cores, labels []string
	for _, r := range revs {
		cores, labels = append(cores, r.core), append(labels, r.label)
	}
	if o.coreRuns > 0 {
		fmt.Printf("scheduler core in memory (%s), %d runs of each revision in turn…\n", coreBench, o.coreRuns)
	}
	core, err := measureCore(ctx, cores, labels, o.coreRuns)
	if err != nil {
		return err
	}

	kube, err := startKubeAPI(o.nodes)
	if err != nil {
		return err
	}
	defer kube.close()
	fmt.Printf("%d nodes, %d applications × %d containers = %d held, %d queues; AMs heartbeat every %s; %s measured\n",
		o.nodes, o.apps, o.containers, o.apps*o.containers, o.queues, o.heartbeat, o.steady)

	var results []*result
	for i, r := range revs {
		fmt.Printf("\n== %s\n", r.label)
		kube.resetCounts()
		ro := o
		ro.rmArgs = r.args
		if i > 0 {
			ro.profiles = "" // the baseline may not have --profiling
		}
		res, err := measure(ctx, ro, kube, r.bin, filepath.Join(work, fmt.Sprintf("run%d", i)), r.label)
		if err != nil {
			return fmt.Errorf("%s: %w", r.label, err)
		}
		served, unknown := kube.report()
		fmt.Printf("   API server calls: %s\n", strings.Join(served, ", "))
		if len(unknown) > 0 {
			return fmt.Errorf("%s asked the stand-in API server for what it does not serve: %s", r.label, strings.Join(unknown, ", "))
		}
		res.baseline = r.baseline
		res.core = core[i]
		results = append(results, res)
	}
	printTable(o, results)
	return nil
}

// goBuild builds ./cmd/weft-rm of the tree at dir into bin.
func goBuild(ctx context.Context, dir, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/weft-rm")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %v\n%s", dir, err, out)
	}
	return nil
}

// buildAt builds weft-rm and the scheduler's test binary as they were at
// rev, in a temporary git worktree removed afterwards, and returns the
// binaries and rev's short hash.
func buildAt(ctx context.Context, root, rev, work string) (bin, core, short string, err error) {
	if short, err = gitOutput(ctx, root, "rev-parse", "--short", rev+"^{commit}"); err != nil {
		return "", "", "", err
	}
	src := filepath.Join(work, "src-"+short)
	if _, err := gitOutput(ctx, root, "worktree", "add", "--detach", src, short); err != nil {
		return "", "", "", err
	}
	defer func() {
		if _, rerr := gitOutput(context.Background(), root, "worktree", "remove", "--force", src); rerr != nil && err == nil {
			err = rerr
		}
	}()
	bin, core = filepath.Join(work, "baseline", "weft-rm"), filepath.Join(work, "baseline", "scheduler.test")
	fmt.Printf("building weft-rm and the scheduler's test binary at %s…\n", short)
	if err := goBuild(ctx, src, bin); err != nil {
		return "", "", "", err
	}
	return bin, core, short, buildCore(ctx, src, core)
}

func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
