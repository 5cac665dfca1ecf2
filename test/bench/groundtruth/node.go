package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/translator"
)

// fakeKernel is a kwok node's kernel as the node agent reads it: a cgroup
// v1 tree and /proc/stat and /proc/meminfo in the kernel's formats, in a
// directory of their own. Kwok nodes run nothing, so the driver advances
// the files from the scenario's usage model — the one the simulation uses
// (online replicas use their requests times the usage ratio, plus the
// system's share; a batch container its request times its mix's ratio,
// an AM stand-in 30% of its) — and, as the kernel does, holds the batch
// pods' CPU within the big box's CFS quota that the agent wrote. It is a
// test double at the process boundary (the files); the agent reading
// them is the node plugin's own code.
type fakeKernel struct {
	name  string
	tree  *cgroupstest.Tree
	fs    *cgroups.FS
	box   string
	proc  string
	alloc colocation.Amount
	sc    *sim.Scenario

	// limits, when set, is where the box's quota is read instead of
	// tree: the real node's kernel, whose agent writes it there.
	limits *cgroups.FS

	last   time.Time
	quota  int64                    // the box's CPU quota in millicores, -1 unlimited
	busy   time.Duration            // /proc/stat's busy time
	podCPU map[string]time.Duration // batch pods' cgroups and their CPU time, by UID
}

// panicTB fails a fake tree's setup by panicking with the error, which
// the node's loop recovers into its own.
type panicTB struct{}

func (panicTB) Helper()                           {}
func (panicTB) Fatal(args ...any)                 { panic(errors.New(fmt.Sprint(args...))) }
func (panicTB) Fatalf(format string, args ...any) { panic(fmt.Errorf(format, args...)) }

// newFakeKernel lays out the files of node name, of allocatable alloc,
// under dir.
func newFakeKernel(dir, name string, sc *sim.Scenario, alloc colocation.Amount, now time.Time) (k *fakeKernel, err error) {
	defer recoverInto(&err)
	k = &fakeKernel{name: name, proc: filepath.Join(dir, "proc"), sc: sc, last: now, quota: -1, podCPU: map[string]time.Duration{},
		alloc: alloc}
	if err := os.MkdirAll(k.proc, 0o755); err != nil {
		return nil, err
	}
	k.tree = cgroupstest.V1(panicTB{}, filepath.Join(dir, "cgroup"))
	k.fs = k.tree.FS()
	k.box = k.fs.QOSPath(corev1.PodQOSBestEffort)
	k.tree.Add(k.box, cgroupstest.Usage{})
	return k, k.writeProc(0)
}

func recoverInto(err *error) {
	if r := recover(); r != nil {
		e, ok := r.(error)
		if !ok {
			panic(r)
		}
		*err = e
	}
}

// batchUse is a batch pod on the node and what it would use unbounded.
type batchUse struct {
	UID             string
	MilliCPU, Bytes int64
}

// advance brings the node's files to now: online replicas running over
// the interval since the last call, and batch pods, within the box's
// quota and what online work leaves of the CPU. It returns the node's
// load at now.
func (k *fakeKernel) advance(now time.Time, online int, batch []batchUse) (l load, err error) {
	defer recoverInto(&err)
	o, c := k.sc.Online, k.sc.Cluster
	l.OnlineMilliCPU = int64(float64(online)*float64(o.PodMilliCPU)*o.CPUUsageRatio) + c.SystemMilliCPU
	l.OnlineMemory = int64(float64(online)*o.PodMemoryGiB*o.MemoryUsageRatio*(1<<30)) + c.SystemMemoryGiB<<30
	var demand int64
	for _, b := range batch {
		demand += b.MilliCPU
		l.BatchMemory += b.Bytes
	}
	avail := k.alloc.MilliCPU - l.OnlineMilliCPU
	limits := k.fs
	if k.limits != nil {
		limits = k.limits
	}
	if quota, period, err := limits.CPUQuota(limits.QOSPath(corev1.PodQOSBestEffort)); err == nil {
		k.quota = -1
		if quota > 0 && period > 0 {
			k.quota = int64(float64(quota) / float64(period) * 1000)
		}
	}
	// Else the agent is rewriting the file this instant (the kernel's
	// files change in place, a test tree's are truncated and written):
	// its last value holds, as in the kernel.
	if k.quota >= 0 {
		avail = min(avail, k.quota)
	}
	rate := 1.0
	if demand > 0 && avail < demand {
		rate = float64(max(avail, 0)) / float64(demand)
	}
	dt := max(now.Sub(k.last), 0)
	seen := map[string]bool{}
	for _, b := range batch {
		seen[b.UID] = true
		used := time.Duration(float64(b.MilliCPU) * rate / 1000 * float64(dt))
		path := k.fs.PodPath(corev1.PodQOSBestEffort, b.UID)
		cpu, ok := k.podCPU[b.UID]
		k.podCPU[b.UID] = cpu + used
		u := cgroupstest.Usage{CPU: cpu + used, Memory: uint64(b.Bytes)}
		if ok {
			k.tree.SetUsage(path, u)
		} else {
			k.tree.Add(path, u)
		}
		l.BatchMilliCPU += int64(float64(b.MilliCPU) * rate)
	}
	for uid := range k.podCPU {
		if !seen[uid] {
			// The pod ended: the kubelet removes its cgroup.
			k.tree.Remove(k.fs.PodPath(corev1.PodQOSBestEffort, uid))
			delete(k.podCPU, uid)
		}
	}
	k.busy += time.Duration(float64(l.OnlineMilliCPU+l.BatchMilliCPU) / 1000 * float64(dt))
	k.last = now
	return l, k.writeProc(l.OnlineMemory + l.BatchMemory)
}

// writeProc writes /proc/stat (USER_HZ ticks of 10 ms, the idle time what
// the node's CPUs did not use since boot) and /proc/meminfo (kB) as the
// kernel does.
func (k *fakeKernel) writeProc(usedMemory int64) error {
	const tick = 10 * time.Millisecond
	busy := int64(k.busy / tick)
	cpus := k.alloc.MilliCPU / 1000
	stat := fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\nintr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n",
		busy, max(0, cpus*int64(time.Since(time.Unix(1700000000, 0))/tick)-busy))
	total := k.alloc.Memory
	mem := fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\nBuffers:               0 kB\nCached:                0 kB\n",
		total>>10, max(0, total-usedMemory)>>10, max(0, total-usedMemory)>>10)
	for name, content := range map[string]string{"stat": stat, "meminfo": mem} {
		if err := writeAtomic(filepath.Join(k.proc, name), content); err != nil {
			return fmt.Errorf("node %s: %w", k.name, err)
		}
	}
	return nil
}

// writeAtomic replaces a file at once, so the agent never reads half.
func writeAtomic(name, content string) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// nodeAgent is the node plugin's colocation agent for one fake node.
type nodeAgent struct {
	agent *colocation.Agent
	req   reconcile.Request
}

// startAgent makes the node plugin's colocation agent for node k over k's
// files, with cfg: its own code, reading through its own manager's cache
// (colocation.NewManager, as weft-nodeplugin builds it). Its clock is
// k's: the instant k's files were last brought to, so that the CPU
// counters it reads and the time it divides them by agree, as a kernel's
// counters agree with the clock. Its reconciles are run by k's loop
// (runNode) when the last one asked to be requeued, as its controller
// runs them — between two advances of the files, never during one.
// (Several agents in one process cannot each register the controller:
// controller-runtime wants its name unique per process.)
func startAgent(ctx context.Context, rc *rest.Config, k *fakeKernel, cfg colocation.Config, profile translator.Profile) (*nodeAgent, error) {
	o := colocation.Options{NodeName: k.name, Defaults: cfg, Profile: profile, FS: k.fs, ProcRoot: k.proc,
		Box: &colocation.Box{FS: k.fs}, NumCPU: int(k.alloc.MilliCPU / 1000), Now: func() time.Time { return k.last },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	mgr, err := colocation.NewManager(rc, o)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", k.name, err)
	}
	agent := colocation.NewAgent(mgr.GetClient(), mgr.GetEventRecorderFor("weft-colocation"), o)
	go func() {
		if err := mgr.Start(ctx); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, fs.ErrClosed) {
			fmt.Fprintf(os.Stderr, "groundtruth: node %s: agent's manager stopped: %v\n", k.name, err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("node %s: agent's cache: %w", k.name, ctx.Err())
	}
	return &nodeAgent{agent: agent, req: reconcile.Request{NamespacedName: types.NamespacedName{Name: k.name}}}, nil
}

// runNode advances k's files every tick from the pods the API server has
// on it (onNode) and runs its agent when due (none for the real node,
// whose agent runs under its own controller), and keeps the node's
// latest load in out.
func runNode(ctx context.Context, k *fakeKernel, a *nodeAgent, tick time.Duration, onNode func() []*corev1.Pod, uses *sync.Map,
	kubelet *evictedEnder, out func(load)) error {
	due := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(tick):
		}
		pods := onNode()
		if kubelet != nil {
			kubelet.end(ctx, pods)
		}
		online := 0
		for _, p := range pods {
			if p.Namespace == onlineNS && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				online++
			}
		}
		l, err := k.advance(time.Now(), online, batchUses(pods, uses))
		if err != nil {
			return err
		}
		out(l)
		if a == nil || k.last.Before(due) {
			continue
		}
		res, err := a.agent.Reconcile(ctx, a.req)
		if err != nil {
			fmt.Fprintf(os.Stderr, "groundtruth: node %s: agent: %v\n", k.name, err)
		}
		due = k.last.Add(max(res.RequeueAfter, minAgentInterval))
	}
}

// evictedEnder is a kwok node's kubelet where the agent's memory eviction
// meets it. The agent marks a pod it evicts (a DisruptionTarget condition
// of reason colocation.ReasonEvicted) and then SIGKILLs the processes in
// the pod's cgroup; a kwok pod has none, so the kill reaches nothing, and
// kwok would keep the pod Running. A real kubelet sees its containers
// exit 137 and, restartPolicy Never, the pod fail: the ender does that to
// each pod so marked, once, and the RM reports the container as it would
// on a real node (PREEMPTED with the agent's message).
type evictedEnder struct {
	client kubernetes.Interface
	mu     sync.Mutex
	// ended holds the pods ended, and those being ended.
	ended map[types.UID]bool
}

func newEvictedEnder(cl kubernetes.Interface) *evictedEnder {
	return &evictedEnder{client: cl, ended: map[types.UID]bool{}}
}

func (e *evictedEnder) end(ctx context.Context, pods []*corev1.Pod) {
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || !evictedByAgent(p) {
			continue
		}
		e.mu.Lock()
		done := e.ended[p.UID]
		e.ended[p.UID] = true
		e.mu.Unlock()
		if done {
			continue
		}
		if err := e.fail(ctx, p); err != nil {
			fmt.Fprintf(os.Stderr, "groundtruth: end evicted pod %s/%s: %v\n", p.Namespace, p.Name, err)
			e.mu.Lock()
			delete(e.ended, p.UID) // the next tick tries again
			e.mu.Unlock()
		}
	}
}

// count is how many pods were ended (all of them once no end is under
// way).
func (e *evictedEnder) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ended)
}

// fail writes what the kubelet does when a pod's processes were killed:
// each running container terminated by SIGKILL (exit 137), the pod
// Failed. The agent's condition stays.
func (e *evictedEnder) fail(ctx context.Context, p *corev1.Pod) error {
	now := metav1.Now()
	var statuses []map[string]any
	for _, cs := range p.Status.ContainerStatuses {
		started := now
		if r := cs.State.Running; r != nil {
			started = r.StartedAt
		}
		statuses = append(statuses, map[string]any{"name": cs.Name, "ready": false, "state": corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", StartedAt: started, FinishedAt: now}}})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"phase": corev1.PodFailed, "containerStatuses": statuses}})
	if err != nil {
		return err
	}
	_, err = e.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// evictedByAgent reports whether the colocation agent evicted p.
func evictedByAgent(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == colocation.ReasonEvicted {
			return true
		}
	}
	return false
}
