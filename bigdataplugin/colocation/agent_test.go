package colocation

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// node is a fake node: its cgroups in the kernel's formats, its /proc,
// its Node and pods in a fake API server, and a clock.
type node struct {
	t      *testing.T
	tree   *cgroupstest.Tree
	proc   string
	client client.Client
	events *record.FakeRecorder
	now    time.Time
	busy   time.Duration // the node's cumulative busy CPU
	used   int64         // the node's memory in use
	agent  *Agent
	// nodeCgroup is the node's root cgroup (Config.NodeCgroup) where it
	// is one of several on the machine; "" for the whole machine.
	nodeCgroup string
}

const nodeName = "node-a"

func newNode(t *testing.T, tree *cgroupstest.Tree, objs ...client.Object) *node {
	n := &node{t: t, tree: tree, proc: t.TempDir(), events: record.NewFakeRecorder(100), now: t0, used: 8 * gib}
	kn := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: *resource.NewQuantity(32*gib, resource.BinarySI)}}}
	n.client = fake.NewClientBuilder().WithObjects(append([]client.Object{kn}, objs...)...).
		WithStatusSubresource(&corev1.Node{}, &corev1.Pod{}).Build()
	n.writeProc()
	n.agent = n.newAgent()
	return n
}

func (n *node) newAgent() *Agent {
	fsys := n.tree.FS()
	fsys.ProcRoot = n.proc
	cfg := DefaultConfig()
	cfg.NodeCgroup = n.nodeCgroup
	return NewAgent(n.client, n.events, Options{
		NodeName: nodeName, ConfigNamespace: "weft-system", ConfigName: "weft-colocation", Defaults: cfg,
		Profile: translator.Weft, FS: fsys, ProcRoot: n.proc, Box: &Box{FS: fsys}, NumCPU: 8,
		Now: func() time.Time { return n.now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// writeProc writes the node's /proc.
func (n *node) writeProc() { writeProc(n.t, n.proc, n.busy, n.used) }

// writeProc writes /proc/stat and /proc/meminfo of a machine of 32 GiB
// as the kernel does (USER_HZ ticks of 10 ms; kB): busy is its
// cumulative busy CPU, used its memory in use.
func writeProc(t *testing.T, proc string, busy time.Duration, used int64) {
	ticks := int64(busy / (10 * time.Millisecond))
	stat := fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 %d 0 0 100 0 0 0 0 0 0\nintr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n",
		ticks, 100000, ticks)
	mem := fmt.Sprintf("MemTotal:       %d kB\nMemFree:         1000 kB\nMemAvailable:   %d kB\nBuffers:            0 kB\n", 32*gib>>10, (32*gib-used)>>10)
	for name, content := range map[string]string{"stat": stat, "meminfo": mem} {
		if err := os.WriteFile(filepath.Join(proc, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tick advances the clock by a second in which the node was busy for
// busy, and reconciles.
func (n *node) tick(busy time.Duration) {
	n.t.Helper()
	n.now = n.now.Add(time.Second)
	n.busy += busy
	n.writeProc()
	res, err := n.agent.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: nodeName}})
	if err != nil || res.RequeueAfter != time.Second {
		n.t.Fatalf("reconcile: %v, %+v", err, res)
	}
}

func (n *node) node() *corev1.Node {
	var kn corev1.Node
	if err := n.client.Get(context.Background(), types.NamespacedName{Name: nodeName}, &kn); err != nil {
		n.t.Fatal(err)
	}
	return &kn
}

// published is what the Node offers batch work.
func (n *node) published() (milli, bytes int64, ok bool) {
	kn := n.node()
	c, ok := kn.Status.Allocatable[wellknown.ReclaimedCPU]
	m := kn.Status.Allocatable[wellknown.ReclaimedMemory]
	return c.Value(), m.Value(), ok
}

// lowering is the fall the agent told weft-rm of ahead of the
// allocatable (wellknown.AnnotationReclaimedLowering), if any.
func (n *node) lowering() (wellknown.Lowering, bool) {
	v, ok := n.node().Annotations[wellknown.AnnotationReclaimedLowering]
	if !ok {
		return wellknown.Lowering{}, false
	}
	l, err := wellknown.ParseLowering(v)
	if err != nil {
		n.t.Fatal(err)
	}
	return l, true
}

func (n *node) event(reason string) string {
	for {
		select {
		case e := <-n.events.Events:
			if strings.Contains(e, reason) {
				return e
			}
		default:
			return ""
		}
	}
}

func newBatchPod(name, uid string, tier records.Tier, cpu, mem string, started time.Time, containerID string) *corev1.Pod {
	res := corev1.ResourceList{wellknown.ReclaimedCPU: resource.MustParse(cpu), wellknown.ReclaimedMemory: resource.MustParse(mem)}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "weft-jobs", UID: types.UID(uid), Labels: map[string]string{wellknown.LabelTier: tier.String()}},
		Spec:   corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBestEffort, StartTime: &metav1.Time{Time: started}}}
	if containerID != "" {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", ContainerID: "containerd://" + containerID,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	}
	return p
}

func onlinePod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-web"},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable}}
}

// The agent measures online usage as the node's less its batch pods',
// offers watermark × allocatable − online on the Node (with a heartbeat),
// bounds the box to it and each batch pod to what it asked — on both
// cgroup versions. A rise of online CPU shrinks the box at the next
// reconcile; nothing is killed for CPU.
func TestAgentMeasuresEnforcesPublishes(t *testing.T) {
	for _, tc := range []struct {
		name string
		tree func(cgroupstest.TB, string) *cgroupstest.Tree
	}{{"v1", cgroupstest.V1}, {"v2", cgroupstest.V2}} {
		t.Run(tc.name, func(t *testing.T) {
			tree := tc.tree(t, t.TempDir())
			low := tree.AddPod(corev1.PodQOSBestEffort, "uid-low", cgroupstest.Usage{Memory: uint64(gib)})
			tree.AddPod(corev1.PodQOSBurstable, "uid-web", cgroupstest.Usage{})
			n := newNode(t, tree, onlinePod(), newBatchPod("low", "uid-low", records.TierLow, "1000", "2Gi", t0, ""))

			n.tick(0) // primes the counters: nothing published, the box untouched
			if _, _, ok := n.published(); ok {
				t.Fatal("published before a rate could be measured")
			}
			// A second in which the node was busy 2 CPUs, the batch pod 0.5.
			tree.SetUsage(low, cgroupstest.Usage{CPU: 500 * time.Millisecond, Memory: uint64(gib)})
			n.tick(2 * time.Second)
			// online = 2000m − 500m; 80% of 8000m − 1500m = 4900m.
			// memory: online = 8 GiB − 1 GiB; 85% of 32 GiB − 7 GiB.
			wantMem := pctOf(32*gib, 85) - 7*gib
			if c, m, _ := n.published(); c != 4900 || m != wantMem {
				t.Errorf("published %dm %d bytes, want 4900m %d", c, m, wantMem)
			}
			if n.node().Annotations[wellknown.AnnotationReclaimedAt] == "" {
				t.Error("no heartbeat")
			}
			// With the heartbeat, the measurement, for the RM's nodes view.
			u, err := wellknown.ParseNodeUtilization(n.node().Annotations[wellknown.AnnotationNodeUtilization])
			if want := (wellknown.NodeUtilization{At: u.At, NodeMilliCPU: 2000, NodeMemory: 8 * gib, BatchMilliCPU: 500, BatchMemory: gib}); err != nil || u != want || u.At.IsZero() {
				t.Errorf("utilization %+v (%v), want %+v", u, err, want)
			}
			fs := tree.FS()
			if q, p, err := fs.CPUQuota("kubepods/besteffort"); err != nil || q != 490*time.Millisecond || p != 100*time.Millisecond {
				t.Errorf("box quota %s per %s (%v), want 490ms per 100ms", q, p, err)
			}
			if s, err := fs.CPUShares("kubepods/besteffort"); err != nil || s != 2 {
				t.Errorf("box shares %d (%v), want 2", s, err)
			}
			if l, err := fs.MemoryLimit("kubepods/besteffort"); err != nil || l != wantMem {
				t.Errorf("box memory limit %d (%v), want %d", l, err, wantMem)
			}
			if l, err := fs.MemoryLimit(low); err != nil || l != 2*gib {
				t.Errorf("batch pod memory limit %d (%v), want its request 2 GiB", l, err)
			}

			// Online work now takes 7 CPUs: the box shrinks to the least
			// quota at once, nothing new is offered — weft-rm is told at
			// once (the lowering annotation), the allocatable the kubelet
			// admits by follows LowerAfter later, and never below what
			// the batch pod requests (Published) — nothing evicted.
			tree.SetUsage(low, cgroupstest.Usage{CPU: time.Second, Memory: uint64(gib)})
			n.tick(7500 * time.Millisecond)
			if q, _, _ := fs.CPUQuota("kubepods/besteffort"); q != time.Millisecond {
				t.Errorf("box quota %s with online above the watermark, want 1ms", q)
			}
			if l, ok := n.lowering(); !ok || l.MilliCPU != 1000 || l.Memory != wantMem {
				t.Errorf("lowering %+v (%t) with online above the watermark, want 1000m (the batch pod's request: no room) %d", l, ok, wantMem)
			}
			if c, _, _ := n.published(); c != 4900 {
				t.Errorf("allocatable %dm at the fall, want 4900m until LowerAfter has passed", c)
			}
			if e := n.event("Evict"); e != "" {
				t.Errorf("evicted for CPU: %s", e)
			}
			// The peak holds within the window though online falls back.
			tree.SetUsage(low, cgroupstest.Usage{CPU: 1500 * time.Millisecond, Memory: uint64(gib)})
			n.tick(time.Second)
			if l, _ := n.lowering(); l.MilliCPU != 1000 {
				t.Errorf("lowering to %dm within the peak window, want 1000m (no room)", l.MilliCPU)
			}
			for range 9 { // LowerAfter (10s) since the fall
				n.tick(time.Second)
			}
			if c, _, _ := n.published(); c != 1000 {
				t.Errorf("allocatable %dm after LowerAfter, want 1000m (the batch pod's request: no room)", c)
			}
			if l, ok := n.lowering(); ok {
				t.Errorf("lowering %+v left once the allocatable followed", l)
			}
		})
	}
}

// Above the eviction watermark the agent marks the lowest-tier, newest
// batch pod with a DisruptionTarget condition naming memory pressure,
// kills its container's processes (not the sandbox), tells it in Events,
// and cools the node down: nothing offered until the cooldown ends, which
// a restarted agent reads back from the Node.
func TestAgentEvictsUnderMemoryPressure(t *testing.T) {
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- victim.Wait() }()
	t.Cleanup(func() { victim.Process.Kill() })
	sandbox := exec.Command("sleep", "60")
	if err := sandbox.Start(); err != nil {
		t.Fatal(err)
	}
	sandboxExited := make(chan error, 1)
	go func() { sandboxExited <- sandbox.Wait() }()
	t.Cleanup(func() { sandbox.Process.Kill() })

	tree := cgroupstest.V1(t, t.TempDir())
	am := tree.AddPod(corev1.PodQOSBestEffort, "uid-am", cgroupstest.Usage{Memory: uint64(gib)})
	tree.AddPod(corev1.PodQOSBestEffort, "uid-min", cgroupstest.Usage{Memory: 2 * uint64(gib)})
	low := tree.AddPod(corev1.PodQOSBestEffort, "uid-low", cgroupstest.Usage{Memory: 2 * uint64(gib)}, sandbox.Process.Pid)
	tree.Add(low+"/c0ffee", cgroupstest.Usage{}, victim.Process.Pid)
	n := newNode(t, tree,
		newBatchPod("am", "uid-am", records.TierHigh, "1000", "1Gi", t0.Add(2*time.Minute), ""),
		newBatchPod("min", "uid-min", records.TierMedium, "1000", "2Gi", t0.Add(time.Minute), ""),
		newBatchPod("low", "uid-low", records.TierLow, "1000", "2Gi", t0, "c0ffee"))
	n.tick(0)
	n.tick(time.Second)
	// The three pods hold 3000m and 5 GiB: the node shows at least that.
	const heldMilli, heldMem = 3000, 5 * gib
	if c, _, _ := n.published(); c <= heldMilli {
		t.Fatal("nothing offered before the pressure")
	}

	// The node's memory passes 90% of 32 GiB by 1 GiB: the low-tier pod
	// (2 GiB) is enough.
	n.used = pctOf(32*gib, 90) + gib
	n.tick(time.Second)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the evicted container's process still runs")
	}
	select {
	case err := <-sandboxExited:
		t.Errorf("the sandbox's process was killed too: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	var got corev1.Pod
	if err := n.client.Get(context.Background(), types.NamespacedName{Namespace: "weft-jobs", Name: "low"}, &got); err != nil {
		t.Fatal(err)
	}
	var cond *corev1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == corev1.DisruptionTarget {
			cond = &got.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Reason != ReasonEvicted || !strings.Contains(cond.Message, "memory pressure") {
		t.Fatalf("evicted pod's condition %+v", cond)
	}
	if _, diag, _ := translator.PodOutcome(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: got.Status.Conditions}}); !strings.Contains(diag, "memory pressure") {
		t.Errorf("the RM would report %q", diag)
	}
	// The killed pod's cgroup is gone but the node does not show its
	// memory back yet: the same pressure takes no second pod. The AM
	// holds less than it was granted; the box does not take the rest
	// from it (nor from the job's minimum): the box's limit stays at
	// least what the survivors were granted, 3 GiB, not what the box
	// holds, 2.5 GiB, at which the AM's next allocation would be the
	// kernel's OOM kill.
	tree.Remove(low)
	tree.SetUsage(am, cgroupstest.Usage{Memory: uint64(gib) / 2})
	n.tick(time.Second)
	if l, err := tree.FS().MemoryLimit("kubepods/besteffort"); err != nil || l < 3*gib {
		t.Errorf("box memory limit %d MiB (%v) after the eviction, want at least the survivors' grants, 3072 MiB", l>>20, err)
	}
	for _, other := range []string{"am", "min"} {
		var p corev1.Pod
		n.client.Get(context.Background(), types.NamespacedName{Namespace: "weft-jobs", Name: other}, &p)
		if len(p.Status.Conditions) != 0 {
			t.Errorf("%s was evicted too", other)
		}
	}
	if e := n.event(ReasonEvicted); e == "" {
		t.Error("no Event for the eviction")
	}
	until := n.node().Annotations[wellknown.AnnotationColocationCooldownUntil]
	if at, err := time.Parse(time.RFC3339, until); err != nil || !at.After(n.now) {
		t.Errorf("cooldown until %q", until)
	}
	if l, _ := n.lowering(); l.MilliCPU != heldMilli || l.Memory != heldMem {
		t.Errorf("lowering to %dm %d bytes while cooling down, want what the pods hold, %dm %d (no room)", l.MilliCPU, l.Memory, heldMilli, heldMem)
	}

	// The memory comes back as the pod ends; the agent restarts; the
	// node still cools down (read from the Node), and nothing more is
	// evicted.
	n.used = 8 * gib
	n.agent = n.newAgent()
	n.tick(time.Second)
	n.tick(time.Second)
	if l, _ := n.lowering(); l.MilliCPU != heldMilli {
		t.Errorf("a restarted agent lowers to %dm during the cooldown, want %dm (no room)", l.MilliCPU, heldMilli)
	}
	n.now = n.now.Add(5 * time.Minute)
	n.tick(time.Second)
	if c, _, _ := n.published(); c <= heldMilli {
		t.Error("nothing offered after the cooldown")
	}
	if e := n.event(ReasonEvicted); e != "" {
		t.Errorf("evicted again: %s", e)
	}
}

// Fail safe: when the agent cannot measure (a /proc file gone), or its
// ConfigMap is invalid, it offers nothing, says why once in an Event on
// the Node, and leaves the box as it was; when it can again, it offers
// again. A pod whose cgroup vanished mid-read is not a failure.
func TestAgentFailSafe(t *testing.T) {
	tree := cgroupstest.V1(t, t.TempDir())
	tree.AddPod(corev1.PodQOSBestEffort, "uid-low", cgroupstest.Usage{Memory: uint64(gib)})
	n := newNode(t, tree, newBatchPod("low", "uid-low", records.TierLow, "1000", "2Gi", t0, ""),
		newBatchPod("gone", "uid-gone", records.TierLow, "1000", "2Gi", t0, "")) // no cgroup: ended
	n.tick(0)
	n.tick(time.Second)
	offered, _, _ := n.published()
	if offered == 0 {
		t.Fatal("nothing offered on a quiet node")
	}
	quota, _, _ := tree.FS().CPUQuota("kubepods/besteffort")
	if _, ok := n.node().Annotations[wellknown.AnnotationNodeUtilization]; !ok {
		t.Error("no measurement on the Node")
	}

	os.Remove(filepath.Join(n.proc, "meminfo"))
	n.agent.Reconcile(context.Background(), reconcile.Request{})
	n.agent.Reconcile(context.Background(), reconcile.Request{})
	if c, m, _ := n.published(); c != 0 || m != 0 {
		t.Errorf("blind agent offers %dm %d bytes", c, m)
	}
	if u, ok := n.node().Annotations[wellknown.AnnotationNodeUtilization]; ok {
		t.Errorf("blind agent left its last measurement on the Node: %s", u)
	}
	if e := n.event(ReasonBlind); !strings.Contains(e, "meminfo") {
		t.Errorf("event %q, want one naming meminfo", e)
	}
	if e := n.event(ReasonBlind); e != "" {
		t.Errorf("the same problem told twice: %s", e)
	}
	if q, _, _ := tree.FS().CPUQuota("kubepods/besteffort"); q != quota {
		t.Errorf("blind agent changed the box's quota %s → %s", quota, q)
	}
	n.tick(time.Second) // writes /proc again
	n.tick(time.Second)
	if c, _, _ := n.published(); c == 0 {
		t.Error("nothing offered after recovering")
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "weft-colocation", Namespace: "weft-system"},
		Data: map[string]string{ConfigKey: "cpuWatermarkPercent: 120\n"}}
	if err := n.client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	n.tick(time.Second)
	if c, _, _ := n.published(); c != 0 {
		t.Errorf("offers %dm under an invalid ConfigMap", c)
	}
	if e := n.event(ReasonConfigInvalid); !strings.Contains(e, "cpuWatermarkPercent 120% is not in (0, 100]") {
		t.Errorf("event %q", e)
	}
}

// A node whose cgroups cannot be used (an unexpected version or layout)
// gets an agent that offers nothing and says why.
func TestAgentWithoutCgroups(t *testing.T) {
	n := newNode(t, cgroupstest.V1(t, t.TempDir()))
	n.agent = NewAgent(n.client, n.events, Options{NodeName: nodeName, Defaults: DefaultConfig(), Profile: translator.Weft,
		Unusable: fmt.Errorf("no cgroup hierarchy at /sys/fs/cgroup"), Now: func() time.Time { return n.now },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	n.tick(0)
	n.tick(time.Second)
	if c, m, ok := n.published(); !ok || c != 0 || m != 0 {
		t.Errorf("offers %dm %d bytes (published %v)", c, m, ok)
	}
	if e := n.event(ReasonBlind); !strings.Contains(e, "no cgroup hierarchy") {
		t.Errorf("event %q", e)
	}
}

// A node the tidal controller lent whole to batch work offers all of its
// allocatable but what the node's own daemons use.
func TestAgentOnLentNode(t *testing.T) {
	tree := cgroupstest.V1(t, t.TempDir())
	tree.Add("kubepods/besteffort", cgroupstest.Usage{})
	n := newNode(t, tree)
	kn := n.node()
	kn.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOffline)}
	if err := n.client.Update(context.Background(), kn); err != nil {
		t.Fatal(err)
	}
	n.tick(0)
	n.tick(500 * time.Millisecond) // the node's daemons: 500m
	// 100% of 8000m − 500m; memory up to the eviction watermark.
	if c, m, _ := n.published(); c != 7500 || m != pctOf(32*gib, 90)-8*gib {
		t.Errorf("lent node offers %dm %d bytes (%s)", c, m, n.event(""))
	}
}
