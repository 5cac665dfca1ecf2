package amrm

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/scheduler/podbinder/podbindertest"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// fakePods stands for the API server at the process boundary: the pods
// that name Weft's scheduler, what was bound, evented and preempted.
type fakePods struct {
	mu        sync.Mutex
	pods      []*corev1.Pod
	bindings  []podbinder.Binding
	events    []string
	preempted []string
	moves     podbindertest.Moves
}

func (f *fakePods) add(p *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.UID = types.UID(p.Namespace + "/" + p.Name)
	f.pods = append(f.pods, p)
}

func (f *fakePods) Pods() (pending, bound []*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pending, bound = f.shown()
	f.moves.Reset(append(slices.Clip(bound), pending...))
	return pending, bound
}

func (f *fakePods) shown() (pending, bound []*corev1.Pod) {
	for _, p := range f.pods {
		if p.Spec.NodeName == "" {
			pending = append(pending, p)
		} else {
			bound = append(bound, p)
		}
	}
	return pending, bound
}

func (f *fakePods) Moved(also []types.UID) ([]*corev1.Pod, []types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pending, bound := f.shown()
	return f.moves.Moved(append(bound, pending...), also)
}

func (f *fakePods) Bind(_ context.Context, bs []podbinder.Binding) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range bs {
		for _, p := range f.pods {
			if p.UID == b.UID {
				p.Spec.NodeName = b.Node
			}
		}
		f.bindings = append(f.bindings, b)
	}
	return make([]error, len(bs))
}

func (f *fakePods) BindAsync(ctx context.Context, bs []podbinder.Binding, done func([]error)) {
	done(f.Bind(ctx, bs))
}

func (f *fakePods) Event(_ context.Context, p *corev1.Pod, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, p.Name+": "+reason+": "+message)
}

func (f *fakePods) Preempt(_ context.Context, p *corev1.Pod, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.preempted = append(f.preempted, p.Name)
	f.pods = slices.DeleteFunc(f.pods, func(q *corev1.Pod) bool { return q == p })
	return nil
}

func (f *fakePods) boundTo(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.pods {
		if p.Name == name {
			return p.Spec.NodeName
		}
	}
	return ""
}

func plainPod(name string, labels map[string]string, vcores int64, memMB int64) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "batch", Labels: labels},
		Spec: corev1.PodSpec{SchedulerName: podbinder.DefaultSchedulerName, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: *resource.NewQuantity(vcores, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(memMB<<20, resource.BinarySI)}}}}}}
}

// An AM pod is placed in the allocator's cycle as its attempt's high-tier
// request: when its queue is under its guarantee and the node is full of
// another tenant's borrowed elastic containers, those are preempted with
// notice for it, then the AM pod is bound and recorded as the attempt's
// AM container.
func TestAMPodReclaimsForItsQueue(t *testing.T) {
	pods := &fakePods{}
	f := newQueueFixture(t, func(o *allocator.Options) { o.Pods, o.Profile = pods, translator.Plain })
	ctx := context.Background()

	// A borrows the whole node with four low-tier containers beside its
	// unmanaged AM (its minimum is asked at a priority of its own).
	attemptA, a := f.am("a")
	f.allocate(a, 4, 2048, 2)
	f.cycle()
	if got := len(f.allocate(a, 0, 0, 0).GetAllocatedContainers()); got != 4 {
		t.Fatalf("A got %d containers, want 4", got)
	}
	for _, c := range f.mgr.Snapshot().ContainersOfAttempt(attemptA) {
		if err := f.mgr.ContainerRunning(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}

	// B's application: its AM pod waits, as the launcher makes it.
	idB := f.mgr.NewApplicationID()
	if err := f.mgr.Submit(ctx, rm.Submission{ID: idB, User: "bob", Queue: "b", AMResource: records.Resource{MemoryMB: 2048, VCores: 2}}); err != nil {
		t.Fatal(err)
	}
	attemptB := records.AttemptID{App: idB, ID: 1}
	amB := records.ContainerID{Attempt: attemptB, ID: 1}
	amPod := plainPod(translator.PodName(amB.String()), map[string]string{wellknown.LabelRM: "weft",
		wellknown.LabelContainer: amB.String(), wellknown.LabelApp: idB.String()}, 2, 2048)
	pods.add(amPod)
	if err := f.mgr.AMLaunched(ctx, attemptB, amB); err != nil {
		t.Fatal(err)
	}

	f.cycle()
	resp := f.allocate(a, 0, 0, 0)
	if n := len(resp.GetPreempt().GetStrictContract().GetContainer()); n != 1 {
		t.Fatalf("A was told of %d victims for B's AM, want 1 (%v)", n, resp.GetPreempt())
	}
	if node := pods.boundTo(amPod.Name); node != "" {
		t.Fatalf("B's AM pod bound to %s before the victim went", node)
	}
	f.clock.Add(time.Minute)
	f.cycle() // kills the victim
	f.cycle() // places the AM
	if node := pods.boundTo(amPod.Name); node != "node-a" {
		t.Fatalf("B's AM pod bound to %q, want node-a", node)
	}
	c := f.mgr.Snapshot().Container(amB)
	if c == nil || c.Node != "node-a:8041" {
		t.Fatalf("B's AM container record %+v, want it on node-a:8041", c)
	}
	// Placed once: later cycles do not bind it again.
	f.cycle()
	if len(pods.bindings) != 1 {
		t.Fatalf("bindings %v, want one", pods.bindings)
	}
}

// Pods that are not YARN containers are scheduled by their queue label
// within the queue's max, told when their queue does not exist, and
// preempted like containers when a queue under its guarantee needs room.
func TestPlainPodsScheduledByQueue(t *testing.T) {
	pods := &fakePods{}
	f := newQueueFixture(t, func(o *allocator.Options) {
		o.Pods, o.Profile = pods, translator.Plain
	})
	for i := range 6 {
		pods.add(plainPod("a-"+string(rune('0'+i)), map[string]string{wellknown.LabelQueue: "a", wellknown.LabelTier: "low"}, 2, 1024))
	}
	pods.add(plainPod("nowhere", map[string]string{wellknown.LabelQueue: "root.nowhere"}, 1, 512))
	f.cycle()
	f.cycle()
	if len(pods.bindings) != 4 {
		t.Fatalf("%d of queue a's 2-vcore pods bound on an 8-vcore node, want 4: %v", len(pods.bindings), pods.bindings)
	}
	if len(pods.events) != 1 || !strings.Contains(pods.events[0], `queue "root.nowhere"`) {
		t.Fatalf("events %v, want one saying the queue does not exist", pods.events)
	}

	// B's pod, within B's guarantee, reclaims one of A's.
	pods.add(plainPod("b-0", map[string]string{wellknown.LabelQueue: "root.b"}, 2, 1024))
	f.cycle()
	if len(pods.preempted) != 1 || !strings.HasPrefix(pods.preempted[0], "a-") {
		t.Fatalf("preempted %v, want one of A's pods", pods.preempted)
	}
	f.cycle()
	if node := pods.boundTo("b-0"); node != "node-a" {
		t.Fatalf("B's pod bound to %q, want node-a", node)
	}
	if len(pods.preempted) != 1 {
		t.Fatalf("preempted %v, want only one", pods.preempted)
	}
	if err := testutil.GatherAndCompare(f.metrics, strings.NewReader(`
# HELP weft_pod_bindings_total Pods Weft's scheduler bound through the API server, by result (bound, failed).
# TYPE weft_pod_bindings_total counter
weft_pod_bindings_total{result="bound"} 5
`), "weft_pod_bindings_total"); err != nil {
		t.Error(err)
	}
}

// A node cooling down (the online load recently took capacity back) gets
// no new containers until its cooldown ends.
func TestNoContainersOnCoolingNode(t *testing.T) {
	f := newQueueFixture(t)
	n := *f.mgr.Snapshot().Node("node-a:8041")
	n.CooldownUntil = f.clock.Now().Add(time.Minute).UnixMilli()
	if err := f.mgr.PutNode(&n); err != nil {
		t.Fatal(err)
	}
	_, a := f.am("a")
	f.allocate(a, 1, 1024, 1)
	f.cycle()
	if got := len(f.allocate(a, 0, 0, 0).GetAllocatedContainers()); got != 0 {
		t.Fatalf("%d containers on a cooling node", got)
	}
	f.clock.Add(2 * time.Minute)
	f.cycle()
	if got := len(f.allocate(a, 0, 0, 0).GetAllocatedContainers()); got != 1 {
		t.Fatalf("%d containers after the cooldown, want 1", got)
	}
}

// fakeNodes are the Kubernetes nodes behind the RM's. A test may change a
// node's tide labels, which placement does not read, but not what it does:
// PlacementVersion never moves.
type fakeNodes map[string]*corev1.Node

func (f fakeNodes) KubeNode(name string) (*corev1.Node, bool) { n, ok := f[name]; return n, ok }
func (f fakeNodes) PlacementVersion() uint64                  { return 0 }

func (f fakeNodes) KubeNodesInTideState(state wellknown.TideState) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range f {
		if st, ok := n.Labels[wellknown.LabelTideState]; ok && st == string(state) {
			out = append(out, n)
		}
	}
	return out
}

// Pods go only where their node selector and tolerations allow, as under
// kube-scheduler; YARN containers, which tolerate nothing, not onto a
// tainted node.
func TestPlacementConstraints(t *testing.T) {
	pods := &fakePods{}
	kube := fakeNodes{
		"node-a": {ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"zone": "a"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}}},
		"node-b": {ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{"zone": "b"}}},
	}
	f := newQueueFixture(t, func(o *allocator.Options) { o.Pods, o.Profile, o.Nodes = pods, translator.Plain, kube })
	if err := f.mgr.PutNode(&records.Node{ID: "node-b:8041", Host: "node-b", Port: 8041, HTTPAddress: "node-b:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	inA := map[string]string{wellknown.LabelQueue: "a"}
	untolerating := plainPod("zone-a", inA, 1, 512)
	untolerating.Spec.NodeSelector = map[string]string{"zone": "a"}
	tolerating := plainPod("zone-a-tolerating", inA, 1, 512)
	tolerating.Spec.NodeSelector = map[string]string{"zone": "a"}
	tolerating.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	anywhere := plainPod("anywhere", inA, 1, 512)
	for _, p := range []*corev1.Pod{untolerating, tolerating, anywhere} {
		pods.add(p)
	}
	attempt, a := f.am("a")
	f.allocate(a, 2, 1024, 1)
	f.cycle()
	for name, want := range map[string]string{"zone-a": "", "zone-a-tolerating": "node-a", "anywhere": "node-b"} {
		if got := pods.boundTo(name); got != want {
			t.Errorf("pod %s bound to %q, want %q", name, got, want)
		}
	}
	f.allocate(a, 0, 0, 0)
	cs := f.mgr.Snapshot().ContainersOfAttempt(attempt)
	if len(cs) != 2 {
		t.Fatalf("%d containers granted, want 2", len(cs))
	}
	for _, c := range cs {
		if c.Node != "node-b:8041" {
			t.Errorf("container %s on %s, want the untainted node-b", c.ID, c.Node)
		}
	}
}

// A pod Weft placed whose queue no longer exists still holds its node's
// capacity: nothing is placed into it.
func TestOrphanPodHoldsCapacity(t *testing.T) {
	pods := &fakePods{}
	f := newQueueFixture(t, func(o *allocator.Options) { o.Pods, o.Profile = pods, translator.Plain })
	orphan := plainPod("orphan", map[string]string{wellknown.LabelQueue: "root.gone"}, 6, 1024)
	orphan.Spec.NodeName = "node-a"
	pods.add(orphan)
	pods.add(plainPod("newcomer", map[string]string{wellknown.LabelQueue: "a"}, 4, 1024))
	f.cycle()
	if node := pods.boundTo("newcomer"); node != "" {
		t.Fatalf("a 4-vcore pod bound to %s beside 6 of 8 vcores held", node)
	}
}

// A node lent whole to batch work by the tidal controller (tainted
// weft.io/tide=offline) takes YARN containers; one in an intermediate
// state of the tide takes none.
func TestTideTaints(t *testing.T) {
	kube := fakeNodes{
		"node-a": {ObjectMeta: metav1.ObjectMeta{Name: "node-a"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: wellknown.TaintTide, Value: wellknown.TaintTideOffline, Effect: corev1.TaintEffectNoSchedule}}}},
		"node-b": {ObjectMeta: metav1.ObjectMeta{Name: "node-b"},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: wellknown.TaintTide, Value: wellknown.TaintTideTransition, Effect: corev1.TaintEffectNoSchedule}}}},
	}
	f := newQueueFixture(t, func(o *allocator.Options) { o.Profile, o.Nodes = translator.Plain, kube })
	if err := f.mgr.PutNode(&records.Node{ID: "node-b:8041", Host: "node-b", Port: 8041, HTTPAddress: "node-b:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	attempt, a := f.am("a")
	f.allocate(a, 3, 1024, 1)
	f.cycle()
	f.allocate(a, 0, 0, 0)
	cs := f.mgr.Snapshot().ContainersOfAttempt(attempt)
	if len(cs) != 3 {
		t.Fatalf("%d containers granted, want 3", len(cs))
	}
	for _, c := range cs {
		if c.Node != "node-a:8041" {
			t.Errorf("container %s on %s, want the lent node-a", c.ID, c.Node)
		}
	}
}

// A node the tidal controller takes back (OfflineToOnline, with a notice
// deadline): every container on it is announced to its AM in a
// PreemptionMessage; one that finishes within the notice just finishes,
// one still running at the deadline is killed PREEMPTED. So whether the
// RM's record of the node already says DECOMMISSIONING (nodesync's word
// for it) or not yet.
func TestTideNotice(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state records.NodeState
	}{
		{"with the node's record still RUNNING", records.NodeRunning},
		{"with the node's record DECOMMISSIONING", records.NodeDecommissioning},
	} {
		t.Run(tc.name, func(t *testing.T) { tideNotice(t, tc.state) })
	}
}

func tideNotice(t *testing.T, state records.NodeState) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	kube := fakeNodes{"node-a": node}
	f := newQueueFixture(t, func(o *allocator.Options) { o.Profile, o.Nodes = translator.Plain, kube })
	attempt, a := f.am("a")
	f.allocate(a, 2, 1024, 1)
	f.cycle()
	if got := len(f.allocate(a, 0, 0, 0).GetAllocatedContainers()); got != 2 {
		t.Fatalf("%d containers, want 2", got)
	}
	deadline := f.clock.Now().Add(time.Minute).Truncate(time.Second)
	node.Labels = map[string]string{wellknown.LabelTideState: string(wellknown.TideOfflineToOnline)}
	node.Annotations = map[string]string{wellknown.AnnotationTideNoticeDeadline: wellknown.FormatTime(deadline)}
	for _, n := range f.mgr.Snapshot().Nodes() {
		if n.Host == "node-a" && n.State != state {
			changed := *n
			changed.State = state
			if err := f.mgr.PutNode(&changed); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.cycle()
	resp := f.allocate(a, 0, 0, 0)
	if got := len(resp.GetPreempt().GetStrictContract().GetContainer()); got != 2 {
		t.Fatalf("preemption message %v, want both containers", resp.GetPreempt())
	}
	var cs []*records.Container
	for _, c := range f.mgr.Snapshot().ContainersOfAttempt(attempt) {
		if c.ID.ID != 1 {
			cs = append(cs, c)
		}
		if c.ID.ID != 1 && c.PreemptDeadline != deadline.UnixMilli() {
			t.Errorf("container %s deadline %d, want the tide's %d", c.ID, c.PreemptDeadline, deadline.UnixMilli())
		}
	}
	// One finishes within the notice.
	if _, err := f.mgr.CompleteContainer(context.Background(), cs[0].ID, 0, "done"); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(30 * time.Second)
	f.cycle()
	if c := f.mgr.Snapshot().Container(cs[1].ID); c.State == records.ContainerComplete {
		t.Fatalf("killed within the notice: %+v", c)
	}
	f.clock.Add(31 * time.Second)
	f.cycle()
	for i, want := range []int32{0, records.ExitPreempted} {
		if c := f.mgr.Snapshot().Container(cs[i].ID); c.State != records.ContainerComplete || c.ExitStatus != want {
			t.Errorf("container %s: %s exit %d, want COMPLETE %d", c.ID, c.State, c.ExitStatus, want)
		}
	}
}
