// Command groundtruth checks weft-sim against the real thing, so that its
// numbers are trusted only as far as a real run bears them out: the same
// scenario, shrunk to a few kwok nodes and a few hours of the day
// compressed to minutes, is simulated (sim.Run, the simulator's
// own code path) and then run for real on kwokfleet's private control
// plane, through weft-rm, weft-tide and the node agent; it prints both
// runs' average CPU and memory utilization and batch task kill rate, their
// ratio, and exits 1 if any is more than 15% off (sim.Tolerance).
//
// The real run (see docs/architecture/weft-sim.md, "The ground truth",
// for what is real and what is a double):
//
//   - weft-rm (profile weft) and weft-tide run as processes, built from
//     this tree, with the scenario's queues and TidePool; their periods
//     (the pool's notice, the RM's preemption grace and node cooldown) are
//     the scenario's on the compressed clock (clock.go).
//   - Each kwok node has the node plugin's colocation agent, its own code
//     under its own manager, reading a cgroup tree and /proc in the
//     kernel's formats that a kernel double advances from the scenario's
//     usage model, holding batch pods within the big box's quota the agent
//     writes (node.go); the agent publishes weft.io/reclaimed-* on the
//     Node, which weft-rm offers.
//   - The online service is a Deployment (kube-controller-manager runs its
//     ReplicaSet) resized by the workload's curve, as an HPA would; the
//     fleet runs no kube-scheduler, so its replicas are bound by the
//     simulation's placement rule through the Binding API (online.go).
//   - Each batch job is a Go AM over weft-rm's client and AM protocols: it
//     asks for its AM stand-in and gang, then elastic workers, runs a task
//     per container (Spark-like jobs reuse them), and counts a task killed
//     when the RM completes its container first (batch.go).
//
// Utilization is measured at each of the scenario's samples from the
// pods on each node as the API server has them, by the usage model, with
// batch CPU as the kernel double let it run (measure.go).
//
//	go run ./test/bench/groundtruth [-config scheduler/sim/testdata/day.yaml] [-nodes 6] [-hour 2m] [-from 1h] [-hours 5h] [-warm-up 1h] [-notice 10m] [-real-node] [-sim-only]
//
// The kill rate is a count of events: compared within 15% it needs many
// (at 100 kills a run, Poisson's spread alone is 10%). The default day's
// 10-minute notice leaves a handful in a few hours of a dozen nodes;
// `make sim-truth` runs 24 nodes over 12 hours with a 2-minute notice,
// about 150 kills a run.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/test/bench/kwokfleet"
	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/masterkey"
)

type options struct {
	config                  string
	nodes                   int
	hour, from, hours, warm time.Duration
	keep                    bool
	logs                    string
	realNode                bool
	// notice, when set, replaces the TidePool's notice in the scenario
	// both runs play; simOnly stops after the simulation.
	notice  time.Duration
	simOnly bool
}

func main() {
	ctrllog.SetLogger(logr.Discard())
	var o options
	flag.StringVar(&o.config, "config", "", "scenario YAML (default: sim.DefaultScenario, the default day)")
	flag.IntVar(&o.nodes, "nodes", 6, "kwok nodes the scenario is shrunk to")
	flag.DurationVar(&o.hour, "hour", 2*time.Minute, "wall time of one simulated hour")
	flag.DurationVar(&o.from, "from", time.Hour, "time of day the measured window starts at")
	flag.DurationVar(&o.hours, "hours", 5*time.Hour, "simulated length of the measured window")
	flag.DurationVar(&o.warm, "warm-up", time.Hour, "simulated warm-up before the window, not measured")
	flag.BoolVar(&o.keep, "keep-cluster", false, "leave the control plane up")
	flag.StringVar(&o.logs, "logs", "", "keep weft-rm's, weft-tide's and kwok's logs in this directory")
	flag.BoolVar(&o.realNode, "real-node", false, "add this machine's kubelet and containerd as a node of the pool, with the colocation agent over the kernel's cgroups")
	flag.DurationVar(&o.notice, "notice", 0, "the tide's notice in simulated time, for both runs (default: the scenario's)")
	flag.BoolVar(&o.simOnly, "sim-only", false, "simulate the shrunk scenario and stop: no real run")
	flag.Parse()
	off, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "groundtruth:", err)
		os.Exit(2)
	}
	if off > 0 {
		fmt.Printf("%d measure(s) off by more than %.0f%%\n", off, sim.Tolerance*100)
		os.Exit(1)
	}
}

func run(o options) (int, error) {
	s := sim.DefaultScenario(5000)
	if o.config != "" {
		var err error
		if s, err = sim.LoadScenario(o.config); err != nil {
			return 0, err
		}
	}
	s = shrink(s, o.nodes, o.from, o.hours, o.warm)
	if o.notice > 0 {
		s.Tide.Notice = &metav1.Duration{Duration: o.notice}
	}
	if err := s.Validate(); err != nil {
		return 0, err
	}
	profile := translator.Weft
	if o.realNode {
		var err error
		if s, profile, err = withRealNode(s); err != nil {
			return 0, err
		}
	}
	probe := clock{Hour: o.hour}
	p, err := scaled(s, probe)
	if err != nil {
		return 0, err
	}
	p.Profile = profile
	fmt.Printf("scenario: %d nodes, %s from %s after %s of warm-up, one hour in %s (×%.0f): notice %s, preemption grace %s, agent every %s\n",
		s.Cluster.Nodes, s.Duration.Duration, s.Start.UTC().Format("15:04"), s.WarmUp.Duration, o.hour, probe.factor(),
		p.Tide.Notice.Duration, p.PreemptionGrace, p.Agent.Interval.Duration)

	simulate := func() ([]*sim.Result, error) {
		t0 := time.Now()
		rs, err := sim.Run(context.Background(), s, 1)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		fmt.Printf("\nsimulated in %.1fs:\n", time.Since(t0).Seconds())
		return rs, sim.WriteTable(os.Stdout, rs)
	}
	var rs []*sim.Result
	// With the real node, the simulated cluster has it too, at its
	// allocatable, known once the kubelet has registered: simulated after.
	if !o.realNode || o.simOnly {
		if rs, err = simulate(); err != nil {
			return 0, err
		}
	}
	if o.simOnly {
		r := rs[0]
		fmt.Printf("\n%d task attempts, %d killed (%v), %d told to go by the tide (%d nodes taken back), %d by a queue, %d finished before the deadline\n",
			r.TaskAttempts, r.TasksKilled, r.TasksKilledBy, r.Noticed, r.TakenBack, r.Preempted, r.SavedByNotice)
		return 0, nil
	}

	wall := o.hour * time.Duration((s.Duration.Duration+s.WarmUp.Duration)/time.Hour+1)
	var (
		real     *sim.Result
		realNode *nodeMeter
	)
	err = kwokfleet.Run(wall+10*time.Minute, kwokfleet.Options{Nodes: s.Cluster.Nodes, Keep: o.keep, Logs: o.logs, RealNode: o.realNode,
		NodeCPU:    *resource.NewMilliQuantity(s.Cluster.MilliCPU, resource.DecimalSI),
		NodeMemory: *resource.NewQuantity(s.Cluster.MemoryGiB<<30, resource.BinarySI)},
		func(ctx context.Context, f *kwokfleet.Fleet) error {
			var err error
			real, realNode, err = realRun(ctx, f, &s, o, p)
			return err
		})
	if err != nil {
		return 0, fmt.Errorf("real run: %w", err)
	}
	if o.realNode {
		s.Cluster.Extra = []sim.NodeSize{realNode.size()}
		fmt.Printf("\nsimulating %d nodes and one of %dm, %.1f GiB (the real node's allocatable)\n",
			s.Cluster.Nodes, s.Cluster.Extra[0].MilliCPU, s.Cluster.Extra[0].MemoryGiB)
		if rs, err = simulate(); err != nil {
			return 0, err
		}
	}
	fmt.Printf("\nreal run: %d task attempts, %d killed, %d samples\n", real.TaskAttempts, real.TasksKilled, len(real.Samples))
	// Where kills differ, what came before them: containers told to go
	// (the real run cannot tell a tide's notice from a queue's in the
	// PreemptionMessage; the node's state at the notice or the kill
	// tells, killCause).
	fmt.Printf("  containers told to go: simulated %d (%d by the tide, %d by a queue's reclaim; %d finished before the deadline), real %d\n",
		rs[0].Noticed+rs[0].Preempted, rs[0].Noticed, rs[0].Preempted, rs[0].SavedByNotice, real.Noticed)
	fmt.Printf("  tide: simulated %d transitions, %d nodes taken back; real %d, %d\n",
		rs[0].Transitions, rs[0].TakenBack, real.Transitions, real.TakenBack)
	if o.realNode {
		// In both runs' measures (sim.Cluster.Extra), and on its own.
		fmt.Printf("  real node: %s\n", realNode)
		if n, _ := realNode.Ran(); n == 0 {
			fmt.Println("  the real node ran no batch container: what ran there was the kubelet, the agent and the box")
		}
	}
	// Where CPU differs, its parts say which side of the model it is.
	for _, r := range []*sim.Result{rs[0], real} {
		on, batch := split(r.Samples)
		fmt.Printf("  %-18s CPU avg: online %.1f%% + batch %.1f%%\n", r.Policy, on, batch)
	}
	fmt.Println()
	return sim.WriteComparison(os.Stdout, append(sim.Compare(rs[0], real), sim.CompareKills(rs[0], real)...))
}

// split is the samples' average online and batch CPU, in percent.
func split(samples []sim.Sample) (online, batch float64) {
	for _, s := range samples {
		online += s.OnlineCPU
		batch += s.BatchCPU
	}
	if n := float64(len(samples)); n > 0 {
		online, batch = online/n, batch/n
	}
	return online, batch
}

const (
	poolName  = "groundtruth"
	clusterID = "groundtruth"
	jobsNS    = "weft-jobs"
	nmPort    = 8041
)

// realRun plays the scenario on the fleet and returns its measures (the
// real node's included, if the fleet has one) and the real node's own.
func realRun(ctx context.Context, f *kwokfleet.Fleet, s *sim.Scenario, o options, p periods) (*sim.Result, *nodeMeter, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cl := f.Client
	for _, ns := range []string{jobsNS} {
		if _, err := cl.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, err
		}
	}
	if err := createOnline(ctx, cl, s.Online); err != nil {
		return nil, nil, err
	}
	if err := createPool(ctx, f, p.Tide, f.RealNode != ""); err != nil {
		return nil, nil, err
	}

	// weft-rm, with the scenario's queues and the NM master key the
	// containers' tokens are checked with.
	key, err := masterkey.FromFile(f.Work, "nm-key")
	if err != nil {
		return nil, nil, err
	}
	queues, maxApps, err := writeQueues(f.Work, s)
	if err != nil {
		return nil, nil, err
	}
	maxMB, maxVCores := int64(8192), int64(4)
	for _, m := range s.Batch.Mixes {
		for _, z := range []sim.Size{m.AM, m.Worker} {
			r := resourceOf(z, p.Profile)
			maxMB, maxVCores = max(maxMB, r.GetMemory()), max(maxVCores, int64(r.GetVirtualCores()))
		}
	}
	addrs, err := e2e.FreeAddrs(3)
	if err != nil {
		return nil, nil, err
	}
	rm := &e2e.RM{Bin: filepath.Join(f.Bin, "weft-rm"), DataDir: filepath.Join(f.Work, "rm"), ClientAddr: addrs[0], SchedulerAddr: addrs[1], WebAddr: addrs[2],
		Args: []string{"--kubeconfig", f.Cluster.Kubeconfig, "--local-node=false", "--profile", "weft", "--queues", queues,
			"--cluster-id", clusterID, "--namespace", jobsNS, "--nm-key-file", filepath.Join(f.Work, "nm-key"), "--nm-port", fmt.Sprint(nmPort),
			"--milli-cpu-per-vcore", fmt.Sprint(p.Profile.VCoreMilli()),
			"--preemption-grace", p.PreemptionGrace.String(), "--node-cooldown", p.NodeCooldown.String(),
			// The scenario's executors are larger than YARN's default
			// largest container; an operator raises it the same way.
			"--maximum-allocation-mb", fmt.Sprint(maxMB), "--maximum-allocation-vcores", fmt.Sprint(maxVCores)}}
	if err := rm.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("weft-rm: %w", err)
	}
	defer func() {
		rm.Stop()
		if o.logs != "" {
			os.WriteFile(filepath.Join(o.logs, "weft-rm.log"), []byte(rm.Logs()), 0o644)
		}
	}()
	tideProc, err := kube.StartProcess(filepath.Join(f.Logs, "weft-tide.log"), filepath.Join(f.Bin, "weft-tide"), "--kubeconfig", f.Cluster.Kubeconfig,
		"--leader-elect=false", "--busy-interval", max(100*time.Millisecond, p.Agent.Interval.Duration).String())
	if err != nil {
		return nil, nil, err
	}
	defer tideProc.Stop()

	// The nodes' kernels and agents.
	c := clock{Wall0: time.Now().Add(3 * time.Second), Sim0: s.Start.Add(-s.WarmUp.Duration), Hour: o.hour}
	kernels := make([]*fakeKernel, s.Cluster.Nodes)
	agents := make([]*nodeAgent, s.Cluster.Nodes)
	for i := range kernels {
		name := kwokfleet.NodeName(i)
		alloc := colocation.Amount{MilliCPU: s.Cluster.MilliCPU, Memory: s.Cluster.MemoryGiB << 30}
		if kernels[i], err = newFakeKernel(filepath.Join(f.Work, "nodes", name), name, s, alloc, time.Now()); err != nil {
			return nil, nil, err
		}
		if agents[i], err = startAgent(ctx, f.Cluster.Config, kernels[i], p.Agent, p.Profile); err != nil {
			return nil, nil, err
		}
	}
	// The real node: the agent over the kernel, and a kernel double of
	// its size that only meters it (usage model, the real box's quota).
	var realKernel *fakeKernel
	var realMeter *nodeMeter
	if f.RealNode != "" {
		n, err := cl.CoreV1().Nodes().Get(ctx, f.RealNode, metav1.GetOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("real node: %w", err)
		}
		limits, err := startRealAgent(ctx, f.Cluster.Config, f.RealNode, p.Agent, p.Profile)
		if err != nil {
			return nil, nil, err
		}
		if realKernel, err = newFakeKernel(filepath.Join(f.Work, "nodes", f.RealNode), f.RealNode, s, allocatable(n), time.Now()); err != nil {
			return nil, nil, err
		}
		realKernel.limits = limits
		realMeter = &nodeMeter{Alloc: allocatable(n), From: s.Start.Time}
	}

	factory := informers.NewSharedInformerFactory(cl, 0)
	podInf, nodeInf := factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer()
	if err := podInf.AddIndexers(cache.Indexers{"node": func(o any) ([]string, error) { return []string{o.(*corev1.Pod).Spec.NodeName}, nil }}); err != nil {
		return nil, nil, err
	}
	m := &meter{Total: s.Cluster.Total(), From: s.Start.Time}
	// The tide's moves, as the simulation counts them (from the clock's
	// start on; the meter keeps the window's).
	if _, err := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, cur any) {
		if from, to := tide.StateOf(old.(*corev1.Node)), tide.StateOf(cur.(*corev1.Node)); from != to && to != "" {
			m.transition(c.Sim(time.Now()), to)
		}
	}}); err != nil {
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced, nodeInf.HasSynced) {
		return nil, nil, ctx.Err()
	}
	if realMeter != nil {
		m.Total.MilliCPU += realMeter.Alloc.MilliCPU
		m.Total.Memory += realMeter.Alloc.Memory
	}
	b := &batch{cl: cl, clientAddr: rm.ClientAddr, sched: rm.SchedulerAddr, keys: nmtokens.New(key), sc: s, clock: c, meter: m,
		heartbeat: p.Heartbeat, clusterID: clusterID, namespace: jobsNS, nmPort: nmPort, maxApps: maxApps, uses: &sync.Map{},
		realNode: f.RealNode, profile: p.Profile, failures: make(chan error, 1), nodeState: func(name string) v1alpha1.NodeState {
			o, ok, _ := nodeInf.GetStore().GetByKey(name)
			if !ok {
				return ""
			}
			return tide.StateOf(o.(*corev1.Node))
		}}
	w := sim.Generate(*s)
	end := c.Wall(s.Start.Add(s.Duration.Duration))
	fmt.Printf("\nreal run: %d jobs arrive, %d replica steps; ends at %s (in %s)\n", len(w.Jobs), len(w.Replicas), end.Format("15:04:05"), time.Until(end).Round(time.Second))

	var wg sync.WaitGroup
	errs := make(chan error, 4+len(kernels))
	goRun := func(fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(); err != nil && ctx.Err() == nil {
				errs <- err
			}
		}()
	}
	goRun(func() error { return scaleOnline(ctx, cl, c, s, w.Replicas) })
	goRun(func() error { return b.run(ctx, w.Jobs) })
	tick := max(50*time.Millisecond, p.Agent.Interval.Duration/4)
	var loadMu sync.Mutex
	loads := make([]load, len(kernels))
	onNode := func(name string) func() []*corev1.Pod {
		return func() []*corev1.Pod {
			objs, _ := podInf.GetIndexer().ByIndex("node", name)
			pods := make([]*corev1.Pod, len(objs))
			for j, o := range objs {
				pods[j] = o.(*corev1.Pod)
			}
			return pods
		}
	}
	var (
		realLoad  load
		realQuota int64
	)
	if realKernel != nil {
		goRun(func() error {
			return runNode(ctx, realKernel, nil, tick, onNode(realKernel.name), b.uses, nil, func(l load) {
				loadMu.Lock()
				realLoad, realQuota = l, realKernel.quota
				loadMu.Unlock()
			})
		})
	}
	// The real node's kubelet ends the pods its agent evicts; the kwok
	// nodes' double does.
	kubelet := newEvictedEnder(cl)
	for i, k := range kernels {
		goRun(func() error {
			return runNode(ctx, k, agents[i], tick, onNode(k.name), b.uses, kubelet, func(l load) {
				loadMu.Lock()
				loads[i] = l
				loadMu.Unlock()
			})
		})
	}
	nextSample := c.Wall0
	lastReport := time.Now()
	for now := time.Now(); now.Before(end); now = time.Now() {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case err := <-errs:
			return nil, nil, err
		case err := <-b.failures:
			return nil, nil, err
		case <-tideProc.Exited():
			return nil, nil, errors.New("weft-tide exited; see its log")
		case <-time.After(tick):
		}
		nodes, pods := listNodes(nodeInf.GetStore()), listPods(podInf.GetStore())
		if err := bindOnline(ctx, cl, nodes, pods[onlineNS+"/"], s.Online); err != nil {
			return nil, nil, err
		}
		if !time.Now().Before(nextSample) {
			loadMu.Lock()
			all := slices.Clone(loads)
			if realMeter != nil {
				all = append(all, realLoad)
				bound, running := batchPodsOn(pods[f.RealNode])
				boxCPU, _ := realKernel.limits.CPUUsage(realKernel.limits.QOSPath(corev1.PodQOSBestEffort))
				realMeter.record(nodeSample{At: c.Sim(nextSample), Step: p.Sample, Load: realLoad, Bound: bound, Running: running,
					Quota: realQuota, BoxCPU: boxCPU})
			}
			m.record(c.Sim(nextSample), all)
			loadMu.Unlock()
			nextSample = nextSample.Add(p.Sample)
		}
		if time.Since(lastReport) > 30*time.Second {
			lastReport = time.Now()
			report(c, nodes, pods, m, b)
			if realKernel != nil {
				loadMu.Lock()
				quota := realQuota
				loadMu.Unlock()
				for _, n := range nodes {
					if n.Name == f.RealNode {
						bound, running := batchPodsOn(pods[n.Name])
						fmt.Printf("    real node %s; box quota %dm; batch pods %d bound, %d Running\n", published(n), quota, bound, len(running))
					}
				}
			}
		}
	}
	cancel()
	wg.Wait()
	fmt.Printf("\nthe agents' memory evictions on kwok nodes: %d pods ended\n", kubelet.count())
	return m.result(), realMeter, nil
}

// batchPodsOn counts the batch pods among pods, and names those Running.
func batchPodsOn(pods []*corev1.Pod) (bound int, running []string) {
	for _, p := range pods {
		if p.Namespace == jobsNS {
			bound++
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p.Name)
			}
		}
	}
	return bound, running
}

// listPods groups the live pods by node name, and the unbound online
// ones under "online/".
func listPods(st cache.Store) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, o := range st.List() {
		p := o.(*corev1.Pod)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		key := p.Spec.NodeName
		if p.Namespace == onlineNS {
			out[onlineNS+"/"] = append(out[onlineNS+"/"], p)
		}
		if key != "" {
			out[key] = append(out[key], p)
		}
	}
	return out
}

func listNodes(st cache.Store) []*corev1.Node {
	var out []*corev1.Node
	for _, o := range st.List() {
		out = append(out, o.(*corev1.Node))
	}
	return out
}

// report prints where the run is: the scenario's time, nodes per tide
// state, online replicas, batch pods and the meter's counts.
func report(c clock, nodes []*corev1.Node, pods map[string][]*corev1.Pod, m *meter, b *batch) {
	states := map[v1alpha1.NodeState]int{}
	batchPods := 0
	for _, n := range nodes {
		states[tide.StateOf(n)]++
		for _, p := range pods[n.Name] {
			if p.Namespace == jobsNS {
				batchPods++
			}
		}
	}
	m.mu.Lock()
	last := sim.Sample{}
	if len(m.samples) > 0 {
		last = m.samples[len(m.samples)-1]
	}
	attempts, killed := m.attempts, m.killed
	m.mu.Unlock()
	b.mu.Lock()
	done, total := b.done, b.total
	b.mu.Unlock()
	fmt.Printf("  %s  nodes %v  online replicas %d  batch pods %d  CPU %.0f%% mem %.0f%%  tasks %d killed %d  jobs %d/%d done\n",
		c.Sim(time.Now()).Format("15:04"), states, len(pods[onlineNS+"/"]), batchPods, last.CPU, last.Memory, attempts, killed, done, total)
}

// createPool installs the TidePool CRD and the scenario's pool over the
// fleet's nodes (the real one too, if withReal), and the weft profile's
// PriorityClasses.
func createPool(ctx context.Context, f *kwokfleet.Fleet, spec v1alpha1.TidePoolSpec, withReal bool) error {
	// The CRD, and the tiers' PriorityClasses Weft's pods name.
	if _, err := f.Cluster.Apply(ctx, "deploy/crds/weft.io_tidepools.yaml", "deploy/profiles/weft/priorityclasses.yaml"); err != nil {
		return err
	}
	scheme, err := tide.NewScheme()
	if err != nil {
		return err
	}
	c, err := client.New(f.Cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	spec.NodeSelector = poolSelector(withReal)
	pool := &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: poolName}, Spec: spec}
	// The CRD is served a moment after it is created.
	for deadline := time.Now().Add(time.Minute); ; {
		err = c.Create(ctx, pool)
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("create pool: %w", err)
		}
		time.Sleep(time.Second)
	}
}

// writeQueues writes weft-rm's queue tree for the scenario's queues: each
// leaf guaranteed its GuaranteePercent of the cluster (a leaf "spare"
// holds the rest, which no job uses: capacities add up to 100) and capped
// at its MaxPercent. It returns the file and each queue's
// MaxParallelApps, which the driver keeps (ACCEPTED jobs wait outside).
func writeQueues(dir string, s *sim.Scenario) (string, map[string]int, error) {
	qs := []quota.QueueConfig{{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"}}
	maxApps := map[string]int{}
	rest := 100.0
	for _, q := range s.Batch.Queues {
		qs = append(qs, quota.QueueConfig{Path: "root." + q.Name, Capacity: float32(q.GuaranteePercent), MaxCapacity: float32(q.MaxPercent)})
		rest -= q.GuaranteePercent
		maxApps[q.Name] = q.MaxParallelApps
	}
	if rest > 0 {
		qs = append(qs, quota.QueueConfig{Path: "root.spare", Capacity: float32(rest)})
	}
	b, err := json.Marshal(qs)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "queues.json")
	return path, maxApps, os.WriteFile(path, b, 0o644)
}

// poolSelector selects the pool's nodes: the kwok nodes, and the real
// one if withReal (kwokfleet labels it NodeLabel=RealLabel).
func poolSelector(withReal bool) metav1.LabelSelector {
	types := []string{"kwok"}
	if withReal {
		types = append(types, kwokfleet.RealLabel)
	}
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: kwokfleet.NodeLabel, Operator: metav1.LabelSelectorOpIn, Values: types}}}
}
