package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The real node (-real-node): this machine's kubelet and containerd,
// registered with the fleet's API server beside the kwok nodes
// (kwokfleet.Options.RealNode). What runs there is real: the kubelet
// admits and starts the pods bound to it, the colocation agent reads the
// kernel's cgroups and /proc and writes the big box's bounds into the
// kubelet's BestEffort cgroup, as weft-nodeplugin's does.

// realImage runs the batch containers placed on the real node: the
// busybox the cluster builds (cmd/kube-images). A container there burns
// the CPU the usage model gives its pod (burnScript), so that the
// kernel's counters of the big box show real work, held to the quota the
// agent writes; the meter still counts the usage model on every node,
// kwok's pods (which run nothing) and the real node's alike.
const realImage = "weft.local/busybox:1"

// onlineImage is the online replicas' image: kwok ignores it, the real
// kubelet runs it (pause, built locally, as the sandbox image is).
const onlineImage = "weft.local/pause:3.10"

// onRealNode makes pod, bound to the real node, runnable there: the
// translator's command needs the node runtime's Hadoop, which this run
// has not; the container burns milliCPU of CPU instead (burnScript), with
// the same requests, QoS class and cgroup.
func onRealNode(pod *corev1.Pod, milliCPU int64) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Image, c.Command, c.Args, c.WorkingDir = realImage, []string{"sh", "-c", burnScript(milliCPU)}, nil, ""
	}
}

// burnScript is a busybox sh loop that uses milliCPU of one core on
// average: each second a busy loop runs for milliCPU/1000 of it and is
// killed, then the shell sleeps the rest (busybox's sleep takes
// fractions). At 1000 or more it burns a core without pause; at 0 or
// less it sleeps. Only shell builtins and sleep: the image is busybox.
func burnScript(milliCPU int64) string {
	switch {
	case milliCPU <= 0:
		return "exec sleep 86400"
	case milliCPU >= 1000:
		return "while :; do :; done"
	}
	return fmt.Sprintf("while :; do (while :; do :; done) & b=$!; sleep %.3f; kill $b; wait $b; sleep %.3f; done",
		float64(milliCPU)/1000, float64(1000-milliCPU)/1000)
}

// A real 2-core node lends little: on this machine the control plane,
// kwok and the driver are its online use, and its agent publishes about
// 300m of reclaimed CPU (docs/architecture/weft-sim.md, "The real node"), while
// the default day's smallest batch container asks 1000m. So with the real
// node the shrunk scenario — simulated and run alike — gets jobs a small
// node can take: realMix, in a queue of its own (realQueue), with YARN's
// vcore at realVCoreMilli (weft-rm's and the node plugin's
// --milli-cpu-per-vcore; translator.Profile says why a vcore below a core
// is common where batch packs densely), since YARN asks in whole vcores.
// The default day's mixes are kept as they are: their sizes are whole
// vcores of either size.
const realVCoreMilli = 250

// realMix is MapReduce-like: a container per task of one vcore
// (realVCoreMilli) and 1 GiB (YARN's minimum allocation), a few jobs an
// hour whatever the node count, each a small gang and a few elastic
// workers.
var realMix = sim.Mix{Name: "small", Queue: realQueue.Name, PerHour: 6, NightFactor: 1.5,
	AM: sim.Size{MilliCPU: realVCoreMilli, MemoryGiB: 1}, Worker: sim.Size{MilliCPU: realVCoreMilli, MemoryGiB: 1},
	MinWorkers: sim.IntRange{Min: 1, Max: 2}, ElasticWorkers: sim.IntRange{Min: 2, Max: 6}, Tasks: sim.IntRange{Min: 20, Max: 60},
	TaskSeconds: sim.LogNormal{Median: 300, Sigma: 0.6, Max: 1800}, CPUUsageRatio: 0.9, MemoryUsageRatio: 0.8}

// realQueue is realMix's queue: its own, so that the default day's
// queues (adhoc runs one job at a time at a dozen nodes) do not hold
// its jobs back.
var realQueue = sim.Queue{Name: "small", GuaranteePercent: 1, Weight: 1, MaxParallelApps: 2}

// withRealNode is s with realMix and realQueue, and the node plugin's
// profile with realVCoreMilli. It fails if a mix's container is not a
// whole number of vcores: weft-rm would round it up (YARN's
// normalization), the simulation not, and the runs would differ.
func withRealNode(s sim.Scenario) (sim.Scenario, translator.Profile, error) {
	s.Batch.Queues = append(slices.Clone(s.Batch.Queues), realQueue)
	s.Batch.Mixes = append(slices.Clone(s.Batch.Mixes), realMix)
	p := translator.Weft
	p.MilliCPUPerVCore = realVCoreMilli
	return s, p, vcoreSized(s, p)
}

// vcoreSized tells whether every container of s is a whole number of
// p's vcores.
func vcoreSized(s sim.Scenario, p translator.Profile) error {
	var errs []error
	for _, m := range s.Batch.Mixes {
		for _, z := range []sim.Size{m.AM, m.Worker} {
			if z.MilliCPU%p.VCoreMilli() != 0 {
				errs = append(errs, fmt.Errorf("mix %s: a container of %dm is not a whole number of %dm vcores", m.Name, z.MilliCPU, p.VCoreMilli()))
			}
		}
	}
	return errors.Join(errs...)
}

// startRealAgent runs the node plugin's colocation agent for the real
// node over the kernel (cgroupfs driver, as node-up.sh's kubelet),
// wired as weft-nodeplugin wires it (bigdataplugin/plugin's
// newColocation) and run by its own controller on the wall clock. It
// returns the cgroup tree it reads, for the meter to read the box's
// quota from.
func startRealAgent(ctx context.Context, rc *rest.Config, node string, cfg colocation.Config, profile translator.Profile) (*cgroups.FS, error) {
	fsys, err := cgroups.Open("/sys/fs/cgroup", cgroups.Cgroupfs)
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	cores, err := procstat.Topology("/sys")
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	fsys.ProcRoot = "/proc"
	o := colocation.Options{NodeName: node, Defaults: cfg, Profile: profile, FS: fsys, ProcRoot: "/proc",
		Box: &colocation.Box{FS: fsys, Cores: cores}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, c := range cores {
		o.NumCPU += len(c)
	}
	mgr, err := colocation.NewManager(rc, o)
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	agent := colocation.NewAgent(mgr.GetClient(), mgr.GetEventRecorderFor("weft-colocation"), o)
	if err := agent.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(os.Stderr, "groundtruth: real node %s: agent's manager stopped: %v\n", node, err)
		}
	}()
	return fsys, nil
}

// allocatable is a Node's allocatable CPU and memory.
func allocatable(n *corev1.Node) colocation.Amount {
	return colocation.Amount{MilliCPU: n.Status.Allocatable.Cpu().MilliValue(), Memory: n.Status.Allocatable.Memory().Value()}
}

// nodeMeter measures the real node on its own, as meter measures the
// cluster (the usage model over the pods the API server has there, batch
// CPU within the box's quota the agent wrote in the kernel), plus what
// the kubelet and the kernel made of its batch pods: which ran, for how
// long, under what quota of the box, and the CPU the box's cgroup
// counted (cpuacct.usage, the kernel's own counter).
type nodeMeter struct {
	// Alloc is the node's allocatable; From, the scenario's Start.
	Alloc colocation.Amount
	From  time.Time

	mu                        sync.Mutex
	n                         int
	onlineCPU, batchCPU, mem  float64
	batchPods, running, quota int // the most seen at once; the quota's, in millicores
	ran                       map[string]bool
	containerTime             time.Duration // wall time, summed over the Running batch pods
	runQuota                  [2]int64      // the least and most quota seen while one ran; -1 unbounded
	box0, box1                time.Duration // the box's CPU usage at the first and last sample
}

// nodeSample is what is read of the real node at one sample.
type nodeSample struct {
	// At is the scenario's time; Step the wall time since the last
	// sample.
	At   time.Time
	Step time.Duration
	Load load
	// Bound counts the batch pods bound there; Running names those the
	// kubelet reports Running.
	Bound   int
	Running []string
	// Quota is the box's CPU quota in millicores (-1 unbounded); BoxCPU
	// the box's cgroup's CPU usage counter (0: not read).
	Quota  int64
	BoxCPU time.Duration
}

// record adds a sample.
func (m *nodeMeter) record(x nodeSample) {
	if x.At.Before(m.From) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		m.box0 = x.BoxCPU
	}
	m.n++
	m.onlineCPU += float64(x.Load.OnlineMilliCPU)
	m.batchCPU += float64(x.Load.BatchMilliCPU)
	m.mem += float64(x.Load.OnlineMemory + x.Load.BatchMemory)
	m.batchPods, m.running = max(m.batchPods, x.Bound), max(m.running, len(x.Running))
	m.quota = max(m.quota, int(x.Quota))
	m.box1 = x.BoxCPU
	if len(x.Running) == 0 {
		return
	}
	if m.ran == nil {
		m.ran, m.runQuota = map[string]bool{}, [2]int64{x.Quota, x.Quota}
	}
	for _, name := range x.Running {
		m.ran[name] = true
	}
	m.containerTime += time.Duration(len(x.Running)) * x.Step
	m.runQuota = [2]int64{min(m.runQuota[0], x.Quota), max(m.runQuota[1], x.Quota)}
}

// Ran is how many batch pods were seen Running there, and their summed
// running wall time.
func (m *nodeMeter) Ran() (pods int, running time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ran), m.containerTime
}

// size is the node's allocatable as sim.Cluster.Extra takes it.
func (m *nodeMeter) size() sim.NodeSize {
	return sim.NodeSize{MilliCPU: m.Alloc.MilliCPU, MemoryGiB: float64(m.Alloc.Memory) / (1 << 30)}
}

func (m *nodeMeter) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		return "no samples"
	}
	n, cpu, mem := float64(m.n), float64(m.Alloc.MilliCPU), float64(m.Alloc.Memory)
	out := fmt.Sprintf("%dm CPU %.1f GiB allocatable; CPU avg online %.1f%% + batch %.1f%%, memory avg %.1f%%; at most %d batch pods bound, %d Running; box quota at most %dm",
		m.Alloc.MilliCPU, mem/(1<<30), 100*m.onlineCPU/n/cpu, 100*m.batchCPU/n/cpu, 100*m.mem/n/mem, m.batchPods, m.running, m.quota)
	out += fmt.Sprintf("\n  real node's batch containers: %d ran, %.0f container-seconds (wall)", len(m.ran), m.containerTime.Seconds())
	if len(m.ran) > 0 {
		out += fmt.Sprintf(", the box's quota %dm–%dm while they ran", m.runQuota[0], m.runQuota[1])
	}
	return out + fmt.Sprintf("; the box's cgroup used %.1f CPU-seconds (cpuacct.usage)", (m.box1-m.box0).Seconds())
}

// published is what the real node's agent published on n, as the
// periodic report prints it: its tide state, the reclaimed CPU and
// memory weft-rm offers, and the node's use it measured (all processes,
// of which the batch pods'; the rest is what it counts as online).
func published(n *corev1.Node) string {
	cpu, mem := n.Status.Allocatable[wellknown.ReclaimedCPU], n.Status.Allocatable[wellknown.ReclaimedMemory]
	out := fmt.Sprintf("%s %s: reclaimed %dm %.1f GiB", n.Name, tide.StateOf(n), cpu.Value(), float64(mem.Value())/(1<<30))
	if u, err := wellknown.ParseNodeUtilization(n.Annotations[wellknown.AnnotationNodeUtilization]); err == nil {
		out += fmt.Sprintf("; uses %dm (batch %dm, online %dm)", u.NodeMilliCPU, u.BatchMilliCPU, u.NodeMilliCPU-u.BatchMilliCPU)
	}
	return out
}
