package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/translator"
)

// The real node (-real-node): this machine's kubelet and containerd,
// registered with the fleet's API server beside the kwok nodes
// (kwokfleet.Options.RealNode). What runs there is real: the kubelet
// admits and starts the pods bound to it, the colocation agent reads the
// kernel's cgroups and /proc and writes the big box's bounds into the
// kubelet's BestEffort cgroup, as weft-nodeplugin's does.

// realImage runs the batch containers placed on the real node: the
// busybox the cluster builds (cmd/kube-images), sleeping. Kwok's pods run
// nothing, and the usage model is what the meter counts on every node,
// so a real container that sleeps keeps the two kinds of node alike;
// what the real node adds is the kubelet's admission, real cgroups and
// the agent over the kernel.
const realImage = "weft.local/busybox:1"

// onlineImage is the online replicas' image: kwok ignores it, the real
// kubelet runs it (pause, built locally, as the sandbox image is).
const onlineImage = "weft.local/pause:3.10"

// onRealNode makes pod, bound to the real node, runnable there: the
// translator's command needs the node runtime's Hadoop, which this run
// has not; the container sleeps instead (realImage), with the same
// requests, QoS class and cgroup.
func onRealNode(pod *corev1.Pod) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.Image, c.Command, c.Args, c.WorkingDir = realImage, []string{"sleep", "86400"}, nil, ""
	}
}

// startRealAgent runs the node plugin's colocation agent for the real
// node over the kernel (cgroupfs driver, as node-up.sh's kubelet),
// wired as weft-nodeplugin wires it (bigdataplugin/plugin's
// newColocation) and run by its own controller on the wall clock. It
// returns the cgroup tree it reads, for the meter to read the box's
// quota from.
func startRealAgent(ctx context.Context, rc *rest.Config, node string, cfg colocation.Config) (*cgroups.FS, error) {
	fsys, err := cgroups.Open("/sys/fs/cgroup", cgroups.Cgroupfs)
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	cores, err := procstat.Topology("/sys")
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	fsys.ProcRoot = "/proc"
	o := colocation.Options{NodeName: node, Defaults: cfg, Profile: translator.Weft, FS: fsys, ProcRoot: "/proc",
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
// the kubelet made of its batch pods.
type nodeMeter struct {
	// Alloc is the node's allocatable; From, the scenario's Start.
	Alloc colocation.Amount
	From  time.Time

	mu                        sync.Mutex
	n                         int
	onlineCPU, batchCPU, mem  float64
	batchPods, running, quota int // the most seen at once; the quota's, in millicores
}

// record adds a sample at at (the scenario's time): the node's load, its
// batch pods and how many of them the kubelet reports Running, and the
// box's CPU quota in millicores (-1 unbounded).
func (m *nodeMeter) record(at time.Time, l load, batchPods, running int, quota int64) {
	if at.Before(m.From) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	m.onlineCPU += float64(l.OnlineMilliCPU)
	m.batchCPU += float64(l.BatchMilliCPU)
	m.mem += float64(l.OnlineMemory + l.BatchMemory)
	m.batchPods, m.running = max(m.batchPods, batchPods), max(m.running, running)
	m.quota = max(m.quota, int(quota))
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
	return fmt.Sprintf("%dm CPU %.1f GiB allocatable; CPU avg online %.1f%% + batch %.1f%%, memory avg %.1f%%; at most %d batch pods bound, %d Running; box quota at most %dm",
		m.Alloc.MilliCPU, mem/(1<<30), 100*m.onlineCPU/n/cpu, 100*m.batchCPU/n/cpu, 100*m.mem/n/mem, m.batchPods, m.running, m.quota)
}
