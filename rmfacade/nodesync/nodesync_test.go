package nodesync

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

func node(name string, ready bool, mutate func(*corev1.Node)) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
	if mutate != nil {
		mutate(n)
	}
	return n
}

func pod(name, nodeName, scheduler string, labels map[string]string, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// Nodes become YARN nodes: RUNNING only when Ready, not tainted
// unavailable, not cordoned and not being taken back by the tide (those
// two DECOMMISSIONING, the tide's with its notice's deadline); what Weft's pods hold (this RM's containers, AMs
// included, and any pod Weft's scheduler binds) is Used, the rest
// Occupied.
func TestSync(t *testing.T) {
	am := "container_1700000000000_0001_01_000001"
	task := "container_1700000000000_0001_01_000002"
	objs := []runtime.Object{
		node("ready", true, nil),
		node("notready", false, nil),
		node("cordoned", true, func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("tainted", true, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("cordoned-by-taint", true, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("taken-back", true, func(n *corev1.Node) {
			n.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOfflineToOnline)}
			n.Annotations = map[string]string{wellknown.AnnotationTideNoticeDeadline: "2026-12-07T10:00:30Z"}
		}),
		node("taken-back-not-ready", false, func(n *corev1.Node) {
			n.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOfflineToOnline)}
		}),
		node("lent", true, func(n *corev1.Node) {
			n.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOffline)}
		}),
		node("otherwise-tainted", true, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}),
		pod("online", "ready", "default-scheduler", nil, "2", "4Gi"),
		pod("am", "ready", "weft-scheduler", map[string]string{wellknown.LabelRM: "weft", wellknown.LabelContainer: am}, "1", "1Gi"),
		pod("task", "ready", "default-scheduler", map[string]string{wellknown.LabelRM: "weft", wellknown.LabelContainer: task}, "1", "2Gi"),
		pod("other-rms", "ready", "default-scheduler", map[string]string{wellknown.LabelRM: "other", wellknown.LabelContainer: task}, "1", "1Gi"),
		pod("plain", "ready", "weft-scheduler", nil, "500m", "512Mi"),
	}
	mgr := newRM(t)
	commits := 0
	defer mgr.Subscribe(func(*state.Snapshot, []state.Change) { commits++ })()
	syncedSyncer(t, mgr, fake.NewClientset(objs...), Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain, NMPort: 8041})
	// The first pass writes every node in one transaction: a scheduler's
	// first cycle waits on it.
	if commits != 1 {
		t.Errorf("the first sync wrote the nodes in %d transactions, want 1", commits)
	}
	snap := mgr.Snapshot()
	want := map[string]records.NodeState{"ready": records.NodeRunning, "notready": records.NodeUnhealthy,
		"cordoned": records.NodeDecommissioning, "cordoned-by-taint": records.NodeDecommissioning,
		"taken-back": records.NodeDecommissioning, "taken-back-not-ready": records.NodeUnhealthy, "lent": records.NodeRunning,
		"tainted": records.NodeUnhealthy, "otherwise-tainted": records.NodeRunning}
	for name, st := range want {
		n := snap.Node(name + ":8041")
		if n == nil || n.State != st {
			t.Errorf("node %s: %+v, want %s", name, n, st)
		}
	}
	deadline := time.Date(2026, 12, 7, 10, 0, 30, 0, time.UTC).UnixMilli()
	if n := snap.Node("taken-back:8041"); n.DecommissionDeadline != deadline {
		t.Errorf("taken back with deadline %d, want the notice's %d", n.DecommissionDeadline, deadline)
	}
	if n := snap.Node("cordoned:8041"); n.DecommissionDeadline != 0 {
		t.Errorf("cordoned with a deadline %d", n.DecommissionDeadline)
	}
	n := snap.Node("ready:8041")
	if wantUsed := (records.Resource{MemoryMB: 3584, VCores: 3}); n.Used != wantUsed {
		t.Errorf("used %+v, want %+v (the AM, the task and the plain pod Weft bound)", n.Used, wantUsed)
	}
	if wantOcc := (records.Resource{MemoryMB: 5120, VCores: 3}); n.Occupied != wantOcc {
		t.Errorf("occupied %+v, want %+v (the online pod and another RM's container)", n.Occupied, wantOcc)
	}
	if n.NumContainers != 3 {
		t.Errorf("%d containers, want 3", n.NumContainers)
	}
}

// Under the Katalyst profile a node offers what its CustomNodeResource
// reports reclaimable (Katalyst's agent writes status.resources.allocatable
// there, not into the Node), and nothing without one.
func TestCapacityFromCNR(t *testing.T) {
	cnr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "node.katalyst.kubewharf.io/v1alpha1", "kind": "CustomNodeResource",
		"metadata": map[string]any{"name": "with-cnr"},
		"status": map[string]any{"resources": map[string]any{"allocatable": map[string]any{
			"resource.katalyst.kubewharf.io/reclaimed_millicpu": "12k",
			"resource.katalyst.kubewharf.io/reclaimed_memory":   "24Gi",
		}}},
	}}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{CNRResource: "CustomNodeResourceList"}, cnr)
	// The Nodes' own allocatable (8 CPUs) is the online view, not Weft's.
	snap := syncOnce(t, fake.NewClientset(node("with-cnr", true, nil), node("without-cnr", true, nil)),
		Options{ClusterID: "weft", Profile: translator.Katalyst, NMPort: 8041, CNR: dyn})
	if got, want := snap.Node("with-cnr:8041").Capability, (records.Resource{MemoryMB: 24 << 10, VCores: 12}); got != want {
		t.Errorf("capability %+v, want %+v from the CNR", got, want)
	}
	if got := snap.Node("without-cnr:8041").Capability; got != (records.Resource{}) {
		t.Errorf("capability %+v without a CNR, want none", got)
	}
}

// syncOnce runs one sync of a new Syncer into a new RM and returns the
// RM's state.
func syncOnce(t *testing.T, client *fake.Clientset, opts Options) *state.Snapshot {
	t.Helper()
	mgr := newRM(t)
	syncedSyncer(t, mgr, client, opts)
	return mgr.Snapshot()
}

// syncedSyncer returns a new Syncer into mgr whose watches run until the
// test ends, after its first sync.
func syncedSyncer(t *testing.T, mgr *rm.Manager, client *fake.Clientset, opts Options) *Syncer {
	t.Helper()
	s, err := New(mgr, client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	if err := s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// newRM is an RM over a store of its own and the default queues.
func newRM(t *testing.T) *rm.Manager {
	t.Helper()
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree(quota.DefaultQueues)
	if err != nil {
		t.Fatal(err)
	}
	return rm.New(st, tree, rm.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// A node whose capacity falls below what Weft and the others hold (the
// online load took it back) cools down: RUNNING, but taking no new
// containers until the cooldown ends; a node with room does not.
func TestCooldown(t *testing.T) {
	objs := []runtime.Object{
		node("squeezed", true, nil), node("roomy", true, nil),
		pod("online", "squeezed", "default-scheduler", nil, "6", "4Gi"),
		pod("weft", "squeezed", "weft-scheduler", nil, "3", "4Gi"),
		pod("online-2", "roomy", "default-scheduler", nil, "4", "4Gi"),
		pod("weft-2", "roomy", "weft-scheduler", nil, "4", "4Gi"),
	}
	before := time.Now()
	snap := syncOnce(t, fake.NewClientset(objs...), Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain,
		NMPort: 8041, Cooldown: time.Minute})
	sq := snap.Node("squeezed:8041")
	if sq.State != records.NodeRunning || sq.CooldownUntil < before.Add(time.Minute).UnixMilli() || !strings.Contains(sq.HealthReport, "cooling down") {
		t.Errorf("squeezed node %+v: want RUNNING, cooling down for a minute", sq)
	}
	if r := snap.Node("roomy:8041"); r.CooldownUntil != 0 {
		t.Errorf("a node with room (exactly full) cools down: %+v", r)
	}
}

// Under the Weft profile a node offers what its colocation agent
// published as weft.io/reclaimed-* in the Node's allocatable — only while
// the agent's heartbeat is fresh: a dead or blind agent's last number is
// read as nothing.
func TestCapacityFromWeftAgent(t *testing.T) {
	now := time.Now()
	published := func(heartbeat string) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Status.Allocatable[wellknown.ReclaimedCPU] = resource.MustParse("6000")
			n.Status.Allocatable[wellknown.ReclaimedMemory] = *resource.NewQuantity(12<<30, resource.BinarySI)
			if heartbeat != "" {
				n.Annotations = map[string]string{wellknown.AnnotationReclaimedAt: heartbeat}
			}
		}
	}
	snap := syncOnce(t, fake.NewClientset(
		node("fresh", true, published(now.Add(-10*time.Second).UTC().Format(time.RFC3339))),
		node("stale", true, published(now.Add(-5*time.Minute).UTC().Format(time.RFC3339))),
		node("silent", true, published("")),
		node("garbled", true, published("yesterday")),
	), Options{ClusterID: "weft", Profile: translator.Weft, NMPort: 8041, CapacityStaleAfter: time.Minute})
	if got, want := snap.Node("fresh:8041").Capability, (records.Resource{MemoryMB: 12 << 10, VCores: 6}); got != want {
		t.Errorf("fresh heartbeat: capability %+v, want %+v", got, want)
	}
	for _, name := range []string{"stale", "silent", "garbled"} {
		if got := snap.Node(name + ":8041").Capability; got != (records.Resource{}) {
			t.Errorf("%s heartbeat: capability %+v, want none", name, got)
		}
	}
}

// The agent's measurement becomes the node's utilization in YARN's units
// (cores busy on the node, vcores of its containers), and only while it is
// fresh: a dead agent's last numbers are not shown as current.
func TestUtilizationFromWeftAgent(t *testing.T) {
	now := time.Now()
	measured := func(v string) func(*corev1.Node) {
		return func(n *corev1.Node) { n.Annotations = map[string]string{wellknown.AnnotationNodeUtilization: v} }
	}
	at := func(age time.Duration) wellknown.NodeUtilization {
		return wellknown.NodeUtilization{At: now.Add(-age), NodeMilliCPU: 1500, NodeMemory: 3 << 30, BatchMilliCPU: 500, BatchMemory: 1 << 30}
	}
	profile := translator.Weft
	profile.MilliCPUPerVCore = 250
	snap := syncOnce(t, fake.NewClientset(
		node("fresh", true, measured(at(10*time.Second).String())),
		node("stale", true, measured(at(5*time.Minute).String())),
		node("garbled", true, measured(`{"at":"2026-11-25T00:00:00Z","nodeMilliCPU":-1}`)),
		node("unmeasured", true, nil),
	), Options{ClusterID: "weft", Profile: profile, NMPort: 8041, CapacityStaleAfter: time.Minute})
	// 250m a vcore: the containers' 500m are 2 vcores.
	want := records.NodeUtilization{PhysicalMemoryMB: 3 << 10, CPU: 1.5, ContainersPhysicalMemoryMB: 1 << 10, ContainersVCores: 2}
	if u := snap.Node("fresh:8041").Utilization; u == nil || *u != want {
		t.Errorf("fresh measurement: utilization %+v, want %+v", u, want)
	}
	for _, name := range []string{"stale", "garbled", "unmeasured"} {
		if u := snap.Node(name + ":8041").Utilization; u != nil {
			t.Errorf("%s: utilization %+v, want none", name, *u)
		}
	}
}

// The watches keep neither managedFields nor a node's image list: the RM
// holds every live pod and node of the cluster.
func TestWatchesTrimObjects(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	n := node("n1", true, func(n *corev1.Node) {
		n.ManagedFields = managed
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/app@sha256:00"}, SizeBytes: 1 << 20}}
		n.Status.Capacity = n.Status.Allocatable
		n.Status.NodeInfo = corev1.NodeSystemInfo{KubeletVersion: "v1.31.0", OSImage: "Debian GNU/Linux 12"}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}
		n.Status.Conditions = append([]corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse,
			Message: "kubelet has sufficient memory available"}}, n.Status.Conditions...)
	})
	p := pod("p1", "n1", "default-scheduler", nil, "1", "1Gi")
	p.ManagedFields = managed
	s := syncedSyncer(t, newRM(t), fake.NewClientset(n, p), Options{NMPort: 8041})
	got, ok := s.KubeNode("n1")
	if !ok {
		t.Fatal("node n1 not watched")
	}
	if len(got.ManagedFields) != 0 || len(got.Status.Images) != 0 || got.Status.Capacity != nil || got.Status.NodeInfo.KubeletVersion != "" ||
		len(got.Status.Addresses) != 0 {
		t.Errorf("node kept managedFields %v, images %v, capacity %v, node info %v, addresses %v", got.ManagedFields, got.Status.Images,
			got.Status.Capacity, got.Status.NodeInfo, got.Status.Addresses)
	}
	if len(got.Status.Conditions) != 1 || !ready(got) {
		t.Errorf("node conditions %+v, want its Ready condition alone", got.Status.Conditions)
	}
	if got.Status.Allocatable.Cpu().String() != "8" {
		t.Errorf("node lost its allocatable: %v", got.Status.Allocatable)
	}
	pods, err := s.podsOn("n1")
	if err != nil || len(pods) != 1 {
		t.Fatalf("pods on n1: %v, %v", pods, err)
	}
	if len(pods[0].ManagedFields) != 0 {
		t.Errorf("pod kept managedFields %v", pods[0].ManagedFields)
	}
	// The trim applies to what a deletion's tombstone carries too, or
	// leaves it as it is.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p1", Obj: p}
	if out, err := trimmed(tomb); err != nil || out.(cache.DeletedFinalStateUnknown).Key != "ns/p1" {
		t.Errorf("tombstone: %v, %v", out, err)
	}
}

// The nodes being taken back come from an index by tide state; the
// placement version moves with what placement reads — a node's coming and
// going, its labels and taints — once the watch holds it, and not with
// status updates.
func TestTideIndexAndPlacementVersion(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(node("n1", true, nil), node("n2", true, func(n *corev1.Node) {
		n.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOfflineToOnline)}
	}))
	s := syncedSyncer(t, newRM(t), client, Options{NMPort: 8041})
	names := func(state wellknown.TideState) []string {
		var out []string
		for _, n := range s.KubeNodesInTideState(state) {
			out = append(out, n.Name)
		}
		sort.Strings(out)
		return out
	}
	if got := names(wellknown.TideOfflineToOnline); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("nodes taken back %v, want [n2]", got)
	}
	// waitMoved waits for the version to move past v (true), or for a
	// while in which it does not (false).
	waitMoved := func(v uint64) bool {
		deadline := time.Now().Add(500 * time.Millisecond)
		for time.Now().Before(deadline) {
			if s.PlacementVersion() != v {
				return true
			}
			time.Sleep(5 * time.Millisecond)
		}
		return false
	}
	update := func(name string, change func(n *corev1.Node)) {
		t.Helper()
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(n)
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The two nodes listed at the start, each an add.
	for deadline := time.Now().Add(5 * time.Second); s.PlacementVersion() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("placement version %d after listing two nodes", s.PlacementVersion())
		}
		time.Sleep(5 * time.Millisecond)
	}
	steps := []struct {
		name   string
		change func()
		moves  bool
	}{
		{"status update", func() {
			update("n1", func(n *corev1.Node) {
				n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
			})
		}, false},
		{"taint added", func() {
			update("n1", func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
			})
		}, true},
		{"label changed: n1 taken back too", func() {
			update("n1", func(n *corev1.Node) {
				n.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOfflineToOnline)}
			})
		}, true},
		{"node removed", func() {
			if err := client.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, st := range steps {
		v := s.PlacementVersion()
		st.change()
		if moved := waitMoved(v); moved != st.moves {
			t.Fatalf("%s: placement version moved %v, want %v", st.name, moved, st.moves)
		}
	}
	if got := names(wellknown.TideOfflineToOnline); !slices.Equal(got, []string{"n1"}) {
		t.Errorf("nodes taken back at the end %v, want [n1]", got)
	}
}

// A fall the agent announces (wellknown.AnnotationReclaimedLowering) is
// what the RM schedules by at once, while the Node's allocatable — the
// kubelet's — still shows the old number; a rise in it, a bad value or
// another profile's resource lowers nothing.
func TestLoweredAllocatable(t *testing.T) {
	alloc := corev1.ResourceList{wellknown.ReclaimedCPU: resource.MustParse("4000"), wellknown.ReclaimedMemory: resource.MustParse("8Gi"),
		corev1.ResourceCPU: resource.MustParse("8")}
	for _, tc := range []struct {
		name, lowering   string
		wantCPU, wantMem int64
	}{
		{"none", "", 4000, 8 << 30},
		{"both fall", wellknown.Lowering{MilliCPU: 1000, Memory: 2 << 30}.String(), 1000, 2 << 30},
		{"CPU falls, memory would rise", wellknown.Lowering{MilliCPU: 1500, Memory: 16 << 30}.String(), 1500, 8 << 30},
		{"not a lowering", "{", 4000, 8 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Status: corev1.NodeStatus{Allocatable: alloc}}
			if tc.lowering != "" {
				n.Annotations = map[string]string{wellknown.AnnotationReclaimedLowering: tc.lowering}
			}
			// The plain profile schedules by the native resources, which
			// the agent's annotation (one left by an agent of an earlier
			// deployment) never lowers.
			if q := lowered(n, translator.Plain)[corev1.ResourceCPU]; q.Cmp(resource.MustParse("8")) != 0 {
				t.Errorf("plain profile's cpu lowered to %s", q.String())
			}
			got := lowered(n, translator.Weft)
			c, m := got[wellknown.ReclaimedCPU], got[wellknown.ReclaimedMemory]
			if c.Value() != tc.wantCPU || m.Value() != tc.wantMem {
				t.Errorf("reclaimed %s %s, want %d %d", c.String(), m.String(), tc.wantCPU, tc.wantMem)
			}
			if cpu := got[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("8")) != 0 {
				t.Errorf("native cpu %s changed", cpu.String())
			}
			if q := n.Status.Allocatable[wellknown.ReclaimedCPU]; q.Value() != 4000 {
				t.Errorf("the Node's own allocatable changed to %s", q.String())
			}
		})
	}
}
