// Command binding measures end-to-end scheduling throughput through a real
// API server: how fast pending pods get bound to nodes by Weft's scheduler
// (weft-rm) and by kube-scheduler, measured in the same run on the same
// private control plane (etcd, kube-apiserver, kube-controller-manager)
// with kwok's fake nodes, and prints the ratio (target ≥ 3×) — and
// Weft's share of the floors measured in the same run: the benchmark
// binding the pods itself (the API server's ceiling); the same after the
// one list of nodes and pods any scheduler started against pending pods
// must make first; and the same with the watch of every live pod that any
// scheduler keeps.
//
// Each round creates the pods first, for one scheduler, and only then
// starts that scheduler: its time runs from its start to the last pod
// bound, startup and cache sync included. With -running, a round
// measures schedulers already running instead: each is started, and
// ready, before the round creates its pods, and its time runs from the
// first creation to the last pod bound (kube-scheduler's scheduler_perf
// throughput); the ceiling then binds each pod as its creation returns.
// All get the same client rate
// limit (-qps, -burst) so that none is held back by its defaults. All
// clients speak protobuf for built-in kinds — kube-scheduler by default,
// weft-rm and the benchmark's own binders (kwokfleet's clients) through
// translator/kubeclient — so the floors are measured with the encoding
// the schedulers use.
//
// With -control-plane-cpus, etcd, kube-apiserver and the controller
// manager run on the CPUs named alone, and kwok, the benchmark and the
// schedulers on the others, as a cluster's control plane has machines of
// its own. The ceiling is then the API server's own: on a machine all
// share, every CPU-second a client spends is one the API server lacks,
// and a scheduler's share of the ceiling measures its CPU against the
// benchmark's client; pinned apart, the control plane's CPUs are the
// bottleneck (each round prints every CPU's use), and a scheduler's
// share measures what it owes a cluster — that it keeps the API server's
// binding path full and adds little to the API server's work (its
// watch, its writes) — while its own CPU is counted apart.
//
// With -baseline-weft, another weft-rm binary (an earlier revision's) is
// measured each round too, and today's is compared with it round by
// round: a change worth a few percent is seen only so, the rates of one
// run moving more between rounds than the change moves them.
//
//	go run ./test/bench/binding [-nodes 1000] [-pods 5000] [-rounds 1]
//	go run ./test/bench/binding -running -only weft,api-ceiling -baseline-weft /tmp/weft-rm-old -rounds 18
//	go run ./test/bench/binding -running -control-plane-cpus 0 -only weft,api-ceiling,watch-and-bind -warm-up 1 -rounds 14
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/weft-sh/weft/bigdataplugin/procstat"
	"github.com/weft-sh/weft/rmfacade/nodesync"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/test/bench/kwokfleet"
	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/kube"
)

type options struct {
	nodes, pods, rounds int
	// warmUp rounds run every scheduler first and are not counted: the
	// API server, etcd and the data dirs are warmer after a round.
	warmUp             int
	qps                float64
	burst, parallelism int
	keep               bool
	logs, only         string
	// weftArgs are more of weft-rm's flags, space-separated: what a run
	// tries against the defaults (e.g. --gc-percent 100).
	weftArgs string
	// weftEnv are environment variables for weft-rm alone (KEY=value,
	// space-separated): the Go runtime's settings tried against its
	// defaults (e.g. GOMAXPROCS=1) without changing the control plane's.
	weftEnv []string
	// profiles, when set, is where weft-rm (run with --profiling) leaves
	// a CPU profile of each round's first seconds.
	profiles string
	// profileSeconds is how long, from weft-rm's start, its CPU profile
	// runs; a round waits for it before stopping weft-rm.
	profileSeconds int
	// traceSeconds, with profiles, also saves an execution trace of
	// weft-rm's first seconds there: what its start waits on.
	traceSeconds int
	// running measures schedulers already running when the pods come.
	running bool
	// baselineWeft is another weft-rm binary (an earlier revision's),
	// measured each round beside today's as weft-baseline: a change's
	// gain, paired round by round on one control plane, where the
	// ceiling's rate moves more between runs than the change does.
	baselineWeft string
	// timeout bounds the whole run, setup included.
	timeout time.Duration
	// controlPlaneCPUs gives the control plane CPUs of its own
	// (kwokfleet.Options.ControlPlaneCPUs).
	controlPlaneCPUs string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 1000, "kwok nodes (32 CPU, 256 GiB, 110 pods each)")
	flag.IntVar(&o.pods, "pods", 5000, "pending pods per scheduler and round (1 CPU, 1 GiB each)")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds; each runs every scheduler (-only), in an order that turns from round to round")
	flag.IntVar(&o.warmUp, "warm-up", 0, "rounds run before the counted ones and not counted")
	flag.Float64Var(&o.qps, "qps", 1000, "API client QPS of both schedulers")
	flag.IntVar(&o.burst, "burst", 2000, "API client burst of both schedulers")
	flag.IntVar(&o.parallelism, "bind-parallelism", 256, "weft's bindings in flight (--bind-parallelism), and the ceiling's")
	flag.BoolVar(&o.keep, "keep-cluster", false, "leave the benchmark's control plane up")
	flag.StringVar(&o.weftArgs, "weft-args", "", "more weft-rm flags, space-separated (e.g. '--gc-percent 100')")
	weftEnv := flag.String("weft-env", "", "environment variables for weft-rm alone, KEY=value space-separated (e.g. 'GOMAXPROCS=1')")
	flag.StringVar(&o.only, "only", "", "measure only the schedulers whose name starts with one of these, comma-separated (kube-scheduler, weft, api-ceiling, list-and-bind, watch-and-bind)")
	flag.StringVar(&o.logs, "logs", "", "keep the schedulers' and kwok's logs in this directory")
	flag.StringVar(&o.profiles, "profiles", "", "save weft-rm's CPU profile of each round's first seconds (-profile-seconds), and the API server's in each scheduler's round, in this directory")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 5, "with -profiles, how long each CPU profile runs: weft-rm's from its start (with -running from the round's), the API server's from the round's")
	flag.IntVar(&o.traceSeconds, "trace-seconds", 0, "with -profiles, also save an execution trace of weft-rm's first this many seconds (go tool trace)")
	flag.StringVar(&o.baselineWeft, "baseline-weft", "", "another weft-rm binary (e.g. built from an earlier revision: git worktree add /tmp/old REV && go -C /tmp/old build -o /tmp/weft-rm-old ./cmd/weft-rm), measured each round beside today's as weft-baseline")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Minute, "bound on the whole run, setup included")
	flag.BoolVar(&o.running, "running", false, "measure schedulers already running: each is started and ready before its round's pods exist, and the round runs from the first pod's creation to the last binding (the pods created 64 at once, as always), as kube-scheduler's scheduler_perf measures throughput; the ceiling then creates the pods and binds each as its creation returns, watch-and-bind the same with a watch of every live pod kept; list-and-bind is left out")
	flag.StringVar(&o.controlPlaneCPUs, "control-plane-cpus", "", "run etcd, kube-apiserver and kube-controller-manager on these CPUs alone (a CPU list, e.g. 0), and kwok, the benchmark and the schedulers on the others: the ceiling is then the API server's own, not what the clients' CPU leaves it on a shared machine")
	flag.Parse()
	// Read before the cluster's minutes of setup, not after them.
	var err error
	if o.weftEnv, err = envList(*weftEnv); err != nil {
		fmt.Fprintln(os.Stderr, "binding:", err)
		os.Exit(2)
	}
	if o.baselineWeft != "" {
		if _, err := os.Stat(o.baselineWeft); err != nil {
			fmt.Fprintln(os.Stderr, "binding: -baseline-weft:", err)
			os.Exit(2)
		}
	}
	err = kwokfleet.Run(o.timeout, kwokfleet.Options{Nodes: o.nodes, Keep: o.keep, Logs: o.logs, ControlPlaneCPUs: o.controlPlaneCPUs}, func(ctx context.Context, fleet *kwokfleet.Fleet) error {
		return measure(ctx, o, fleet)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "binding:", err)
		os.Exit(1)
	}
}

func measure(ctx context.Context, o options, fleet *kwokfleet.Fleet) error {
	bin, logs, work := fleet.Bin, fleet.Logs, fleet.Work
	cluster, client := fleet.Cluster, fleet.Client

	kubeScheduler, err := kube.Binary("kube-scheduler")
	if err != nil {
		return err
	}
	schedConf := filepath.Join(work, "kube-scheduler.yaml")
	if err := os.WriteFile(schedConf, fmt.Appendf(nil, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: %g
  burst: %d
leaderElection:
  leaderElect: false
`, cluster.Kubeconfig, o.qps, o.burst), 0o644); err != nil {
		return err
	}
	schedulers := []scheduler{
		{name: "kube-scheduler", schedulerName: corev1.DefaultSchedulerName, bin: kubeScheduler,
			args: []string{"--config", schedConf, "--secure-port", "0"}},
	}
	// weft is weft-rm as a scheduler of its own, from a binary.
	weft := func(name, bin string) scheduler {
		return scheduler{name: name, schedulerName: podbinder.DefaultSchedulerName, bin: bin, ready: weftReady, env: o.weftEnv,
			args: func(dir string) []string {
				// Plain: kwok nodes have no colocation agent to publish
				// reclaimed capacity; their allocatable is the capacity.
				args := []string{"--kubeconfig", cluster.Kubeconfig, "--local-node=false", "--profile", "plain", "--data-dir", dir,
					"--client-address", "127.0.0.1:0", "--scheduler-address", "127.0.0.1:0", "--webapp-address", "127.0.0.1:0",
					"--kube-api-qps", fmt.Sprint(o.qps), "--kube-api-burst", fmt.Sprint(o.burst), "--bind-parallelism", fmt.Sprint(o.parallelism)}
				return append(args, strings.Fields(o.weftArgs)...)
			}(filepath.Join(work, name+"-data"))}
	}
	schedulers = append(schedulers, weft("weft", filepath.Join(bin, "weft-rm")))
	if o.baselineWeft != "" {
		schedulers = append(schedulers, weft("weft-baseline", o.baselineWeft))
	}

	// The ceiling: the benchmark binds the pods itself, round robin, with
	// the same client limits and no scheduling at all — what this API
	// server and etcd allow any scheduler.
	bindAll := func(ctx context.Context, cl kubernetes.Interface, ns string, pods, nodes []string) error {
		return kwokfleet.Parallel(ctx, len(pods), o.parallelism, func(i int) error {
			err := cl.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pods[i], Namespace: ns},
				Target: corev1.ObjectReference{Kind: "Node", Name: nodes[i%len(nodes)]}}, metav1.CreateOptions{})
			if ctx.Err() != nil {
				return nil
			}
			return err
		})
	}
	direct := func(ctx context.Context, ns string) error {
		pods, nodes := make([]string, o.pods), make([]string, o.nodes)
		for i := range pods {
			pods[i] = podName(i)
		}
		for i := range nodes {
			nodes[i] = kwokfleet.NodeName(i)
		}
		return bindAll(ctx, fleet.ClientWith(o.qps, o.burst), ns, pods, nodes)
	}
	// The ceiling for schedulers already running (-running): the pods
	// created as for them, each bound by the benchmark as soon as its
	// creation returns, with as many bindings in flight.
	createAndBind := func(ctx context.Context, ns string) error {
		cl := fleet.ClientWith(o.qps, o.burst)
		created := make(chan int, o.pods)
		errc := make(chan error, 1)
		go func() {
			defer close(created)
			errc <- createPods(ctx, client, ns, "bench-direct", o.pods, func(i int) { created <- i })
		}()
		var wg sync.WaitGroup
		bindErrs := make(chan error, o.parallelism)
		for range o.parallelism {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range created {
					err := cl.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: ns},
						Target: corev1.ObjectReference{Kind: "Node", Name: kwokfleet.NodeName(i % o.nodes)}}, metav1.CreateOptions{})
					if err != nil && ctx.Err() == nil {
						bindErrs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(bindErrs)
		if err := <-errc; err != nil && ctx.Err() == nil {
			return err
		}
		return <-bindErrs
	}
	// The floor of a scheduler started against pending pods: the ceiling
	// plus what any scheduler must do before its first bind — learn the
	// nodes and the pending pods, with one list each as an informer's
	// first list makes them (resourceVersion 0: from the watch cache).
	// kwokNodes lists the fleet's nodes once (resourceVersion 0, as an
	// informer's first list).
	kwokNodes := func(ctx context.Context, cl kubernetes.Interface) ([]string, error) {
		nodeList, err := cl.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		var nodes []string
		for _, n := range nodeList.Items {
			if n.Labels[kwokfleet.NodeLabel] == "kwok" {
				nodes = append(nodes, n.Name)
			}
		}
		return nodes, nil
	}
	// bindFound binds the round's pending pods a floor found (how: listed,
	// watched) to the nodes it listed, once it found them all.
	bindFound := func(ctx context.Context, cl kubernetes.Interface, ns, how string, pods, nodes []string) error {
		if len(pods) != o.pods || len(nodes) == 0 {
			return fmt.Errorf("%s %d pending pods and %d nodes, want %d and some", how, len(pods), len(nodes), o.pods)
		}
		return bindAll(ctx, cl, ns, pods, nodes)
	}
	listed := func(ctx context.Context, ns string) error {
		cl := fleet.ClientWith(o.qps, o.burst)
		nodes, err := kwokNodes(ctx, cl)
		if err != nil {
			return err
		}
		podList, err := cl.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		var pods []string
		for _, p := range podList.Items {
			if p.Namespace == ns && p.Spec.NodeName == "" {
				pods = append(pods, p.Name)
			}
		}
		return bindFound(ctx, cl, ns, "listed", pods, nodes)
	}
	// The floor of any scheduler that keeps, as it must, a watch of every
	// live pod (those it binds, and those others hold on its nodes), as
	// weft-rm and kube-scheduler keep one: the API server sends that watch
	// each pod's creation and binding once more. Cold, the watch's list
	// stands for list-and-bind's list of pods, and the pending pods are
	// taken from it; with -running, the watch is up before the pods come
	// (its list, of the few pods left between rounds, is in the round's
	// time) and the pods are bound as the ceiling binds them. The watch is
	// weft-rm's own (nodesync.LivePods).
	watched := func(then func(ctx context.Context, ns string, cl kubernetes.Interface, pending []string) error) func(ctx context.Context, ns string) error {
		return func(ctx context.Context, ns string) error {
			cl := fleet.ClientWith(o.qps, o.burst)
			inf := nodesync.LivePods(cl)
			watchCtx, stop := context.WithCancel(ctx)
			defer stop()
			go inf.Run(watchCtx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				return ctx.Err()
			}
			var pending []string
			for _, obj := range inf.GetStore().List() {
				if p, ok := obj.(*corev1.Pod); ok && p.Namespace == ns && p.Spec.NodeName == "" {
					pending = append(pending, p.Name)
				}
			}
			return then(ctx, ns, cl, pending)
		}
	}
	watchedListAndBind := watched(func(ctx context.Context, ns string, cl kubernetes.Interface, pending []string) error {
		nodes, err := kwokNodes(ctx, cl)
		if err != nil {
			return err
		}
		return bindFound(ctx, cl, ns, "watched", pending, nodes)
	})
	watchedCreateAndBind := watched(func(ctx context.Context, ns string, _ kubernetes.Interface, _ []string) error {
		return createAndBind(ctx, ns)
	})
	if o.running {
		schedulers = append(schedulers, scheduler{name: "api-ceiling", schedulerName: "bench-direct", direct: createAndBind},
			scheduler{name: "watch-and-bind", schedulerName: "bench-watched", direct: watchedCreateAndBind})
	} else {
		schedulers = append(schedulers, scheduler{name: "api-ceiling", schedulerName: "bench-direct", direct: direct},
			scheduler{name: "list-and-bind", schedulerName: "bench-listed", direct: listed},
			scheduler{name: "watch-and-bind", schedulerName: "bench-watched", direct: watchedListAndBind})
	}
	if o.only != "" {
		prefixes := strings.Split(o.only, ",")
		schedulers = slices.DeleteFunc(schedulers, func(s scheduler) bool {
			return !slices.ContainsFunc(prefixes, func(p string) bool { return p != "" && strings.HasPrefix(s.name, p) })
		})
	}

	results := map[string][]result{}
	for round := 1 - o.warmUp; round <= o.rounds; round++ {
		for i := range schedulers {
			// Alternate which goes first, so neither always meets a warmer
			// API server.
			s := schedulers[(i+round-1+o.warmUp)%len(schedulers)]
			prof := profiling{seconds: o.profileSeconds, traceSeconds: o.traceSeconds}
			if o.profiles != "" && s.name == "weft" {
				prof.file = filepath.Join(o.profiles, fmt.Sprintf("weft-cpu-%d.pb.gz", round))
			}
			if o.profiles != "" {
				prof.apiFile = filepath.Join(o.profiles, fmt.Sprintf("apiserver-cpu-%s-%d.pb.gz", s.name, round))
			}
			r, err := s.measure(ctx, client, fleet.Processes(), o.pods, filepath.Join(logs, fmt.Sprintf("%s-%d.log", s.name, round)), prof, o.running)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s.name, round, err)
			}
			label := fmt.Sprint(round)
			if round <= 0 {
				label = "w" // warm-up: printed, not counted
			}
			from := "start"
			if o.running {
				from = "1st create"
			}
			fmt.Printf("round %s  %-15s %d pods bound in %6.2fs from %s (%7.1f pods/s); first→last bind %6.2fs (%7.1f pods/s); first bind after %5.2fs; %s CPU %5.2fs\n",
				label, s.name, o.pods, r.total.Seconds(), from, r.rate(), r.binding.Seconds(), float64(o.pods)/r.binding.Seconds(),
				(r.total - r.binding).Seconds(), s.cpuOf(), r.cpu.Seconds())
			if o.running {
				fmt.Printf("          every pod created by %6.2fs, %d bound by then\n", r.allCreated.Seconds(), r.boundThen)
			}
			if r.rss > 0 {
				fmt.Printf("          %s RSS at the last bind: %.0f MiB\n", s.name, float64(r.rss)/(1<<20))
			}
			if r.cycles != "" {
				fmt.Printf("          %s scheduling cycles since its start: %s\n", s.name, r.cycles)
			}
			fmt.Printf("          CPU over the round: %s\n", r.others)
			fmt.Printf("          API server over the round: %s\n", r.served)
			if round > 0 {
				results[s.name] = append(results[s.name], r)
			}
		}
	}
	how := "pending pods, each scheduler started after them"
	if o.running {
		how = "pods created while each scheduler runs"
	}
	fmt.Printf("\n%d kwok nodes, %d %s, client QPS %g burst %d for all, median of %d round(s):\n",
		o.nodes, o.pods, how, o.qps, o.burst, o.rounds)
	for _, s := range schedulers {
		fmt.Printf("  %-15s %8.1f pods/s\n", s.name, median(results[s.name]))
	}
	if len(results["weft"]) > 0 && len(results["kube-scheduler"]) > 0 {
		fmt.Printf("  ratio weft/kube-scheduler: %.2f× (target ≥ 3×)\n", median(results["weft"])/median(results["kube-scheduler"]))
	}
	if b := results["weft-baseline"]; len(b) > 0 {
		paired, lo, hi := pairedMedian(results["weft"], b)
		fmt.Printf("  weft against weft-baseline (%s): by medians %.1f%%; by round, paired: median %.1f%%%s\n", o.baselineWeft,
			100*median(results["weft"])/median(b), 100*paired, intervalText(lo, hi, 1))
	}
	ceiling := "binding with no scheduling at all"
	if o.running {
		ceiling = "creating the pods and binding each as its creation returns, with no scheduling at all"
	}
	watchFloor := "a watch of every live pod listed, one list of nodes, then binding with no scheduling"
	if o.running {
		watchFloor = "the ceiling with a watch of every live pod kept, as a scheduler keeps one"
	}
	for _, floor := range []struct{ name, what string }{
		{"api-ceiling", ceiling},
		{"list-and-bind", "one list of nodes and of pods, then binding with no scheduling"},
		{"watch-and-bind", watchFloor},
	} {
		c := results[floor.name]
		if len(c) == 0 {
			continue
		}
		for _, name := range []string{"weft", "weft-baseline", "kube-scheduler"} {
			if len(results[name]) > 0 {
				paired, lo, hi := pairedMedian(results[name], c)
				fmt.Printf("  %s reaches %.0f%% of %s (%s); by round, paired: median %.0f%%%s\n", name, 100*median(results[name])/median(c),
					floor.name, floor.what, 100*paired, intervalText(lo, hi, 0))
			}
		}
	}
	return nil
}

// scheduler is what a round measures: a process started with args, or,
// for the API server's own ceiling, a function.
type scheduler struct {
	name, schedulerName, bin string
	args                     []string
	// env is more of the process's environment (KEY=value).
	env    []string
	direct func(ctx context.Context, ns string) error
	// ready, for a process started with a web address (--webapp-address
	// web), tells whether it schedules yet; nil: readyWait after its start.
	ready func(ctx context.Context, web string) bool
}

// readyWait is how long a scheduler with no readiness to ask (kube-
// scheduler, run with no secure port) is given to list and start before
// a round of running schedulers creates its pods: it lists 1,000 nodes and
// no pending pod in well under a second, and a longer wait only delays the
// round's clock, which starts at the first creation.
const readyWait = 5 * time.Second

// waitReady waits until s, just started, schedules: ready polled every
// 50 ms, or readyWait.
func (s scheduler) waitReady(ctx context.Context, web string, exited <-chan struct{}) error {
	if s.ready == nil {
		select {
		case <-time.After(readyWait):
			return nil
		case <-exited:
			return errors.New("exited")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if s.ready(ctx, web) {
			return nil
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-exited:
			return errors.New("exited")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.New("not scheduling after a minute")
}

// weftReady tells whether weft-rm at web has run a scheduling cycle: it
// has synced the nodes and the pods and its allocator runs.
func weftReady(ctx context.Context, web string) bool {
	families, err := weftMetrics(ctx, web)
	if err != nil {
		return false
	}
	for _, m := range families["weft_scheduling_cycle_seconds"].GetMetric() {
		if m.GetHistogram().GetSampleCount() > 0 {
			return true
		}
	}
	return false
}

// weftCycles says how many scheduling cycles weft-rm at web has run and
// how long they took (weft_scheduling_cycle_seconds): under a stream of
// arrivals, their number times what each reads is most of its CPU.
func weftCycles(ctx context.Context, web string) string {
	families, err := weftMetrics(ctx, web)
	if err != nil {
		return err.Error()
	}
	var count uint64
	var sum float64
	for _, m := range families["weft_scheduling_cycle_seconds"].GetMetric() {
		count += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	if count == 0 {
		return "none"
	}
	return fmt.Sprintf("%d, %.2fs in all (%.2f ms each)", count, sum, 1000*sum/float64(count))
}

// weftMetrics reads weft-rm's /metrics at web.
func weftMetrics(ctx context.Context, web string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+web+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("weft-rm metrics: %w", err)
	}
	defer resp.Body.Close()
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("weft-rm metrics: %w", err)
	}
	return families, nil
}

type result struct {
	pods           int
	total, binding time.Duration
	// cpu is the scheduler process's CPU time over the round (the
	// benchmark's own, informer included, for the ceiling).
	cpu time.Duration
	// rss is the scheduler process's resident memory at the round's end
	// (none for the ceiling).
	rss int64
	// others is where the rest of the machine's CPU went over the round:
	// the control plane's and kwok's processes, and the machine's idle
	// time. On a small machine the API server's share is the rate.
	others string
	// served is what the API server did over the round: its requests by
	// verb and resource, and the watch events it sent by kind.
	served string
	// cycles is how many scheduling cycles weft-rm ran from its start to
	// the round's last bind, and their time (none for the others).
	cycles string
	// allCreated is when the benchmark's watch had seen every pod of the
	// round (from the round's start), and boundThen how many were bound
	// by then: with -running, what is left after allCreated is the
	// scheduler's lag behind the creations.
	allCreated time.Duration
	boundThen  int
}

// cpuOf says whose CPU a round's result counts.
func (s scheduler) cpuOf() string {
	if s.direct != nil {
		return "benchmark"
	}
	return "process"
}

func (r result) rate() float64 { return float64(r.pods) / r.total.Seconds() }

// pairedMedian is the median over rounds of a's rate over b's in the
// same round: the floors move between rounds of one run (the ceiling
// 411–744 pods/s in one), more than a ratio of two medians can stand.
// lo and hi bound that median with at least 95% confidence
// (medianInterval); both 0 when the rounds are too few for any.
func pairedMedian(a, b []result) (m, lo, hi float64) {
	var ratios []float64
	for i := range min(len(a), len(b)) {
		ratios = append(ratios, a[i].rate()/b[i].rate())
	}
	lo, hi = medianInterval(ratios)
	return middle(ratios), lo, hi
}

// intervalText is a paired median's 95% interval as printed, in percent
// with digits decimals, or nothing when there were too few rounds for one
// (medianInterval's zeros).
func intervalText(lo, hi float64, digits int) string {
	if hi <= 0 {
		return ""
	}
	return fmt.Sprintf(" (95%% interval %.*f–%.*f%%)", digits, 100*lo, digits, 100*hi)
}

// medianInterval is the distribution-free confidence interval of a
// median from n samples: the k-th smallest and k-th largest, for the
// largest k whose chance that fewer than k samples fall below the true
// median (Binomial(n, ½)) is at most 2.5% — so the interval misses it
// with at most 5%. Rounds of this benchmark are no sample of any known
// distribution — the same round's work can cost the control plane from 13
// to 23 s of CPU within one run while the machine's own speed holds —
// which is why the median and an order-statistics interval, not a mean
// and its standard error. Needs n ≥ 6; both 0 below.
func medianInterval(v []float64) (lo, hi float64) {
	n := len(v)
	s := slices.Clone(v)
	sort.Float64s(s)
	// below is P(X ≤ k-1) for X ~ Binomial(n, ½), built up term by term.
	k, below, term := 0, 0.0, math.Pow(0.5, float64(n))
	for j := 0; j < n; j++ {
		if below+term > 0.025 {
			break
		}
		below += term
		k = j + 1
		term *= float64(n-j) / float64(j+1)
	}
	if k == 0 {
		return 0, 0
	}
	return s[k-1], s[n-k]
}

// median is the rounds' median rate.
func median(rs []result) float64 {
	rates := make([]float64, len(rs))
	for i, r := range rs {
		rates[i] = r.rate()
	}
	return middle(rates)
}

// middle sorts v and returns its median: the middle value, or the mean of
// the two middle ones of an even count (not the upper one: of twelve
// paired ratios the upper middle can read 100% where the lower reads
// 94%); 0 for none.
func middle(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// saveAPIProfile saves the API server's CPU profile of the next seconds
// into file (kube-apiserver serves /debug/pprof to its admin by default).
func saveAPIProfile(ctx context.Context, client kubernetes.Interface, seconds int, file string) error {
	b, err := client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(seconds)).Timeout(time.Duration(seconds+30) * time.Second).DoRaw(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

// profiling is what a round saves of weft-rm: a CPU profile of its first
// seconds into file (none when empty), and an execution trace of its
// first traceSeconds beside it; and of the API server, for every
// scheduler, a CPU profile of the round's first seconds into apiFile:
// what each scheduler costs the API server beyond its bindings.
type profiling struct {
	file, apiFile         string
	seconds, traceSeconds int
}

// measure creates the pods in a fresh namespace, starts the scheduler,
// waits for every pod to be bound, stops the scheduler and removes the
// namespace's pods.
func (s scheduler) measure(ctx context.Context, client kubernetes.Interface, fleet map[string]int, n int, logFile string, prof profiling, running bool) (result, error) {
	ns := fmt.Sprintf("bench-%s-%d", s.name, time.Now().UnixNano())
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return result{}, err
	}
	defer func() {
		// The pods go at once (the namespace controller would take minutes
		// at its rate limit), and the next measurement must not share the
		// API server with their deletion. One by one, many at once: one
		// DeleteCollection of 5,000 bound pods outlasted its request's
		// timeout and left most of them to the namespace controller, at
		// their grace period, for kwok to end at its pace (2–3 minutes).
		zero := int64(0)
		if err := kwokfleet.Parallel(ctx, n, 64, func(i int) error {
			err := client.CoreV1().Pods(ns).Delete(ctx, podName(i), metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}); err != nil && ctx.Err() == nil {
			fmt.Println("   delete pods:", err)
		}
		_ = client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		for ctx.Err() == nil {
			if _, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	if !running {
		if err := createPods(ctx, client, ns, s.schedulerName, n, nil); err != nil {
			return result{}, err
		}
	}
	// An informer, not a bare watch: the API server ends watches of a busy
	// client, and the informer relists and rewatches.
	var (
		mu          sync.Mutex
		bound       = map[string]bool{}
		added       int // pods the watch has seen created
		first, last time.Time
		allSeen     time.Time
		boundThen   int
		done        = make(chan struct{})
	)
	onPod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if bound[p.Name] {
			return
		}
		now := time.Now()
		if len(bound) == 0 {
			first = now
		}
		bound[p.Name], last = true, now
		if len(bound) == n {
			close(done)
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	// Each pod is added once (a relist after a watch ended updates the
	// pods it had), so the adds count the pods created.
	onAdd := func(obj any) {
		mu.Lock()
		if added++; added == n {
			allSeen, boundThen = time.Now(), len(bound)
		}
		mu.Unlock()
		onPod(obj)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onAdd, UpdateFunc: func(_, obj any) { onPod(obj) }})
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go inf.Run(watchCtx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return result{}, ctx.Err()
	}
	quiet := settle(ctx, fleet)

	var (
		start        time.Time
		before       account
		servedBefore served
		exited       <-chan struct{}
		cpu          func() time.Duration
		rss          = func() int64 { return 0 }
		web          string // weft-rm's web address, when it has one
		// created receives the pods' creation's end, in a round of a
		// running scheduler.
		created = make(chan error, 1)
	)
	var apiProfiled chan struct{} // closed when the API server's profile is saved
	begin := func() {
		// The accounts first: reading the API server's /metrics takes a
		// tenth of a second or more, which is no scheduler's.
		before, servedBefore = takeAccount(fleet), apiServed(ctx, client)
		if prof.apiFile != "" {
			apiProfiled = make(chan struct{})
			go func() {
				defer close(apiProfiled)
				if err := saveAPIProfile(ctx, client, prof.seconds, prof.apiFile); err != nil {
					fmt.Println("   API server CPU profile:", err)
				}
			}()
		}
		start = time.Now()
	}
	defer func() {
		if apiProfiled != nil {
			<-apiProfiled // before the round's pods are deleted
		}
	}()
	if s.direct != nil {
		begin()
		before := selfCPU()
		cpu = func() time.Duration { return selfCPU() - before }
		errc := make(chan error, 1)
		go func() { errc <- s.direct(watchCtx, ns) }()
		defer func() { stopWatch(); <-errc }()
	} else {
		args := s.args
		var saved chan struct{} // closed when the profile is saved
		if prof.file != "" || s.ready != nil {
			var err error
			if web, err = e2e.FreeAddr(); err != nil {
				return result{}, err
			}
			args = append(slices.Clone(args), "--webapp-address", web)
		}
		if !running {
			begin()
		}
		// profile saves weft-rm's CPU profile (and trace): in a cold round
		// from its start, in a round of running schedulers from the
		// round's first creation, so that its start is not in it.
		profile := func() {}
		if prof.file != "" {
			args = append(args, "--profiling")
			profile = func() {
				saved = make(chan struct{})
				go func() {
					defer close(saved)
					// From the moment weft-rm listens, a few ms after its start
					// (at once in a round of running schedulers: it is ready).
					for range 200 {
						if c, err := net.Dial("tcp", web); err == nil {
							c.Close()
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
					if prof.traceSeconds > 0 {
						go func() {
							file := strings.TrimSuffix(prof.file, ".pb.gz") + ".trace"
							if err := e2e.SaveProfile(ctx, web, fmt.Sprintf("trace?seconds=%d", prof.traceSeconds), file); err != nil {
								fmt.Println("   trace:", err)
							}
						}()
					}
					if err := e2e.SaveProfile(ctx, web, fmt.Sprintf("profile?seconds=%d", prof.seconds), prof.file); err != nil {
						fmt.Println("   CPU profile:", err)
					}
				}()
			}
		}
		if !running {
			profile()
		}
		proc, err := kube.StartProcessEnv(logFile, s.bin, s.env, args...)
		if err != nil {
			return result{}, err
		}
		defer proc.Stop()
		// Deferred after Stop, so run before it: the profile ends before
		// weft-rm does (a round of running schedulers starts it only once
		// weft-rm is ready).
		defer func() {
			if saved != nil {
				<-saved
			}
		}()
		exited = proc.Exited()
		cpu = func() time.Duration { d, _ := e2e.ProcessCPU(proc.PID()); return d }
		rss = func() int64 { b, _ := e2e.ProcessRSS(proc.PID()); return b }
		if running {
			if err := s.waitReady(ctx, web, exited); err != nil {
				return result{}, fmt.Errorf("%s not ready: %w; see %s", s.name, err, logFile)
			}
			begin()
			profile()
			atStart := cpu()
			cpu = func() time.Duration { d, _ := e2e.ProcessCPU(proc.PID()); return d - atStart }
			go func() { created <- createPods(watchCtx, client, ns, s.schedulerName, n, nil) }()
		}
	}
	for waiting := true; waiting; {
		select {
		case err := <-created:
			if err != nil && ctx.Err() == nil {
				return result{}, fmt.Errorf("create pods: %w", err)
			}
			created = nil // created: wait for the bindings
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			return result{}, fmt.Errorf("%d of %d pods bound: %w", len(bound), n, ctx.Err())
		case <-exited:
			return result{}, fmt.Errorf("%s exited; see %s", s.name, logFile)
		case <-done:
			waiting = false
		}
	}
	used, mem, others := cpu(), rss(), takeAccount(fleet).since(before)
	served := apiServed(ctx, client).since(servedBefore)
	var cycles string
	if s.ready != nil {
		cycles = weftCycles(ctx, web)
	}
	mu.Lock()
	defer mu.Unlock()
	return result{pods: n, total: last.Sub(start), binding: last.Sub(first), cpu: used, rss: mem, others: quiet + "; " + others,
		served: served, cycles: cycles, allCreated: allSeen.Sub(start), boundThen: boundThen}, nil
}

// createWidth is how many pods are created at once.
const createWidth = 64

// createPods creates a round's n pods for schedulerName, createWidth at
// once, and tells created (when not nil) of each as its creation returns.
func createPods(ctx context.Context, client kubernetes.Interface, ns, schedulerName string, n int, created func(i int)) error {
	return kwokfleet.Parallel(ctx, n, createWidth, func(i int) error {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(ns, schedulerName, i), metav1.CreateOptions{}); err != nil {
			return err
		}
		if created != nil {
			created(i)
		}
		return nil
	})
}

// newPod is a round's i-th pod, for schedulerName to bind.
func newPod(ns, schedulerName string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(i), Namespace: ns},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			NodeSelector:  map[string]string{kwokfleet.NodeLabel: "kwok"},
			Containers: []corev1.Container{{Name: "c", Image: "fake", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
		},
	}
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// account is the CPU time, so far, of the fleet's processes and of the
// whole machine: two of them, at a round's start and end, say where the
// machine's CPU went while the scheduler bound.
type account struct {
	procs map[string]time.Duration
	// machine is the machine's time summed over its CPUs; cpus, each
	// CPU's by number (which of them was the bottleneck, when the
	// control plane has CPUs of its own: -control-plane-cpus).
	machine procstat.CPUTimes
	cpus    map[int]procstat.CPUTimes
}

func takeAccount(pids map[string]int) account {
	a := account{procs: map[string]time.Duration{}}
	for name, pid := range pids {
		if d, err := e2e.ProcessCPU(pid); err == nil {
			a.procs[name] = d
		}
	}
	a.machine, _ = procstat.CPU("/proc")
	a.cpus, _ = procstat.CPUs("/proc")
	return a
}

// since says what each process used between b and a, and how busy the
// machine, and each of its CPUs, was.
func (a account) since(b account) string {
	names := slices.Sorted(maps.Keys(a.procs))
	var parts []string
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.2fs", name, (a.procs[name]-b.procs[name]).Seconds()))
	}
	if d := a.machine.Sub(b.machine); d.Total > 0 {
		text := fmt.Sprintf("machine %.0f%% busy (%.2fs of %.2fs, %d CPUs", 100*float64(d.Busy)/float64(d.Total),
			d.Busy.Seconds(), d.Total.Seconds(), runtime.NumCPU())
		if len(a.cpus) > 1 {
			for _, n := range slices.Sorted(maps.Keys(a.cpus)) {
				prev, ok := b.cpus[n]
				if d := a.cpus[n].Sub(prev); ok && d.Total > 0 {
					text += fmt.Sprintf("; CPU %d %.0f%%", n, 100*float64(d.Busy)/float64(d.Total))
				}
			}
		}
		parts = append(parts, text+")")
	}
	return strings.Join(parts, ", ")
}

// served is the API server's counts so far, from its /metrics:
// apiserver_request_total by verb, resource and subresource, and
// apiserver_watch_events_total by kind (one per event and watcher).
type served map[string]float64

func apiServed(ctx context.Context, client kubernetes.Interface) served {
	out := served{}
	b, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		fmt.Println("   API server metrics:", err)
		return out
	}
	for _, name := range []string{"apiserver_request_total", "apiserver_watch_events_total"} {
		for _, m := range families[name].GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			key := "watch events " + l["kind"]
			if name == "apiserver_request_total" {
				key = l["verb"] + " " + l["resource"]
				if l["subresource"] != "" {
					key += "/" + l["subresource"]
				}
			}
			out[key] += m.GetCounter().GetValue()
		}
	}
	return out
}

// since lists what was served between b and s, most first, leaving out
// what was served fewer than 10 times.
func (s served) since(b served) string {
	type count struct {
		what string
		n    float64
	}
	var counts []count
	for what, n := range s {
		if d := n - b[what]; d >= 10 {
			counts = append(counts, count{what, d})
		}
	}
	slices.SortFunc(counts, func(x, y count) int { return int(y.n - x.n) })
	parts := make([]string, len(counts))
	for i, c := range counts {
		parts[i] = fmt.Sprintf("%s %.0f", c.what, c.n)
	}
	return strings.Join(parts, ", ")
}

// settle waits, up to a minute, for a second in which the machine is
// under half busy — an idle fleet of 1,000 kwok nodes keeps it about 40%
// busy (their heartbeats) — and says how long it waited: a round must not
// start while kwok, the control plane or the last round's scheduler still
// work through the last round (kwok patches its pods' status and ends
// them long after they are bound and deleted), or a scheduler whose start
// is work of its own (lists, a first cycle) pays for them and the ceiling
// does not.
func settle(ctx context.Context, pids map[string]int) string {
	began := time.Now()
	for ctx.Err() == nil {
		a := takeAccount(pids)
		time.Sleep(time.Second)
		b := takeAccount(pids)
		if d := b.machine.Sub(a.machine); d.Total > 0 && float64(d.Busy) < 0.5*float64(d.Total) || time.Since(began) > time.Minute {
			return fmt.Sprintf("started after %.0fs for a quiet machine (%s)", time.Since(began).Seconds(), b.since(a))
		}
	}
	return ""
}

// podName is the name of a round's i-th pod.
func podName(i int) string { return fmt.Sprintf("p-%05d", i) }

// envList reads -weft-env: KEY=value pairs, space-separated.
func envList(s string) ([]string, error) {
	env := strings.Fields(s)
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("-weft-env: %q is not KEY=value", kv)
		}
	}
	return env, nil
}
