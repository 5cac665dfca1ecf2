package nodesync

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// running is a Syncer over a fake cluster, its watches running.
type running struct {
	t      *testing.T
	s      *Syncer
	mgr    *rm.Manager
	client *fake.Clientset
}

func start(t *testing.T, opts Options, objs ...*corev1.Node) *running {
	t.Helper()
	r := &running{t: t, mgr: newRM(t), client: fake.NewClientset()}
	for _, n := range objs {
		r.client.Tracker().Add(n)
	}
	var err error
	if r.s, err = New(r.mgr, r.client, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go r.s.Run(ctx)
	if err := r.s.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// reconcile reconciles a node once the watches show what seen wants.
func (r *running) reconcile(name string, seen func() bool) reconcile.Result {
	r.t.Helper()
	return r.reconcileRequest(nodeRequest(name), seen)
}

// reconcileRequest reconciles any request once the watches show what seen
// wants.
func (r *running) reconcileRequest(req reconcile.Request, seen func() bool) reconcile.Result {
	r.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !seen(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatal("the watch never showed the change")
		}
	}
	res, err := r.s.Reconcile(context.Background(), req)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

func (r *running) node(name string) *records.Node { return r.mgr.Snapshot().Node(name + ":8041") }

// A node is reconciled alone from the watches: a pod bound to it adds to
// what Weft uses there, and a Node deleted leaves its YARN node LOST.
func TestReconcileNode(t *testing.T) {
	r := start(t, Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain, NMPort: 8041},
		node("a", true, nil), node("b", true, nil))
	if n := r.node("a"); n == nil || n.Capability != (records.Resource{MemoryMB: 16 << 10, VCores: 8}) || n.Used != (records.Resource{}) {
		t.Fatalf("after the first sync: %+v", n)
	}
	ctx := context.Background()
	p := pod("task", "a", "weft-scheduler", nil, "2", "3Gi")
	if _, err := r.client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.reconcile("a", func() bool { pods, _ := r.s.podsOn("a"); return len(pods) == 1 })
	if n := r.node("a"); n.Used != (records.Resource{MemoryMB: 3 << 10, VCores: 2}) || n.NumContainers != 1 {
		t.Errorf("after a pod was bound: %+v", n)
	}
	if err := r.client.CoreV1().Nodes().Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.reconcile("b", func() bool { _, ok := r.s.KubeNode("b"); return !ok })
	if n := r.node("b"); n.State != records.NodeLost {
		t.Errorf("after its Node was deleted: %+v", n)
	}
}

// A node whose agent's heartbeat will age past CapacityStaleAfter asks to
// be reconciled then, and is then read as offering nothing, with no
// event to tell of it.
func TestReconcileWhenHeartbeatAges(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	clock := now
	published := node("a", true, func(n *corev1.Node) {
		n.Status.Allocatable[wellknown.ReclaimedCPU] = resource.MustParse("6000")
		n.Status.Allocatable[wellknown.ReclaimedMemory] = *resource.NewQuantity(12<<30, resource.BinarySI)
		n.Annotations = map[string]string{wellknown.AnnotationReclaimedAt: now.Add(-10 * time.Second).UTC().Format(time.RFC3339)}
	})
	r := start(t, Options{ClusterID: "weft", Profile: translator.Weft, NMPort: 8041, CapacityStaleAfter: time.Minute,
		Now: func() time.Time { return clock }}, published)
	res := r.reconcile("a", func() bool { return true })
	if want := 51 * time.Second; res.RequeueAfter != want {
		t.Errorf("reconcile again in %v, want %v (when the heartbeat is a minute old)", res.RequeueAfter, want)
	}
	if n := r.node("a"); n.Capability != (records.Resource{MemoryMB: 12 << 10, VCores: 6}) {
		t.Fatalf("fresh: %+v", n)
	}
	clock = clock.Add(res.RequeueAfter)
	if res := r.reconcile("a", func() bool { return true }); res.RequeueAfter != 0 {
		t.Errorf("a stale node asks to be reconciled again in %v", res.RequeueAfter)
	}
	if n := r.node("a"); n.Capability != (records.Resource{}) {
		t.Errorf("stale: %+v, want no capability", n)
	}
}

// Pod updates wake their node only when its numbers move.
func TestPodMoved(t *testing.T) {
	s := &Syncer{opts: Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain}}
	base := pod("p", "a", "default-scheduler", nil, "1", "1Gi")
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"status only", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning; p.Status.PodIP = "10.0.0.1" }, false},
		{"bound", nil, true},
		{"resized", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}, true},
		{"became this RM's container", func(p *corev1.Pod) {
			p.Labels = map[string]string{wellknown.LabelRM: "weft", wellknown.LabelContainer: "container_1700000000000_0001_01_000002"}
		}, true},
		{"unbound", func(p *corev1.Pod) { p.Spec.NodeName = "" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, after := base.DeepCopy(), base.DeepCopy()
			if tc.change == nil {
				before.Spec.NodeName = ""
			} else {
				tc.change(after)
			}
			if got := s.podMoved(event.UpdateEvent{ObjectOld: before, ObjectNew: after}); got != tc.want {
				t.Errorf("podMoved = %v, want %v", got, tc.want)
			}
		})
	}
}

// Node updates wake their node only when what the trimmed watch keeps of
// it moved, or when its record's report time is due: a status heartbeat
// alone does not.
func TestNodeMoved(t *testing.T) {
	clock := time.Now().Truncate(time.Second)
	r := start(t, Options{ClusterID: "weft", Profile: translator.Plain, NMPort: 8041, Now: func() time.Time { return clock }},
		node("a", true, nil))
	heartbeat := func(n *corev1.Node) {
		n.ResourceVersion = "2"
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(clock)
	}
	tests := []struct {
		name   string
		node   string
		change func(*corev1.Node)
		later  time.Duration // the clock moved on since the record's report
		want   bool
	}{
		{"heartbeat only", "a", heartbeat, 0, false},
		{"heartbeat with the report due", "a", heartbeat, reportRefresh, true},
		{"heartbeat of a node with no record", "b", heartbeat, 0, true},
		{"allocatable", "a", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("4") }, 0, true},
		{"not ready", "a", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, 0, true},
		{"cordoned", "a", func(n *corev1.Node) { n.Spec.Unschedulable = true }, 0, true},
		{"tainted", "a", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule}}
		}, 0, true},
		{"agent's annotation", "a", func(n *corev1.Node) {
			n.Annotations = map[string]string{wellknown.AnnotationReclaimedAt: clock.UTC().Format(time.RFC3339)}
		}, 0, true},
		{"zone", "a", func(n *corev1.Node) { n.Labels = map[string]string{corev1.LabelTopologyZone: "z1"} }, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := clock
			defer func() { clock = now }()
			clock = clock.Add(tc.later)
			before := node(tc.node, true, func(n *corev1.Node) { n.ResourceVersion = "1" })
			after := before.DeepCopy()
			tc.change(after)
			// As the watch holds them.
			for _, n := range []*corev1.Node{before, after} {
				if _, err := trimmed(n); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.s.nodeMoved(event.UpdateEvent{ObjectOld: before, ObjectNew: after}); got != tc.want {
				t.Errorf("nodeMoved = %v, want %v", got, tc.want)
			}
		})
	}
}

// A pod event wakes its node's reconcile at once when the pod is
// another's; when it is Weft's own, the node waits for the own-pods batch,
// which comes once, OwnPodDelay after the first of a burst.
func TestPodEventsDelayOwnPods(t *testing.T) {
	s := &Syncer{opts: Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain,
		OwnPodDelay: 200 * time.Millisecond}}
	h := s.podEvents()
	tests := []struct {
		name       string
		send       func(q workqueue.TypedRateLimitingInterface[reconcile.Request])
		wantAtOnce int
		want       reconcile.Request
		wantMoved  []string // the nodes the batch will write
	}{
		{"another's pod bound", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("o", "", "default-scheduler", nil, "1", "1Gi"),
				ObjectNew: pod("o", "a", "default-scheduler", nil, "1", "1Gi")}, q)
		}, 1, nodeRequest("a"), nil},
		{"another's pod gone", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: pod("o", "a", "default-scheduler", nil, "1", "1Gi")}, q)
		}, 1, nodeRequest("a"), nil},
		{"three of Weft's pods bound on two nodes", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for i, name := range []string{"w1", "w2", "w3"} {
				h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod(name, "", "weft-scheduler", nil, "1", "1Gi"),
					ObjectNew: pod(name, []string{"a", "b", "a"}[i], "weft-scheduler", nil, "1", "1Gi")}, q)
			}
		}, 0, ownPodsBatch, []string{"a", "b"}},
		{"a pod that stopped being Weft's", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: pod("w", "a", "weft-scheduler", nil, "1", "1Gi"),
				ObjectNew: pod("w", "a", "default-scheduler", nil, "1", "1Gi")}, q)
		}, 1, nodeRequest("a"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.ownMoved = nil
			q := &countingQueue{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())}
			defer q.ShutDown()
			tc.send(q)
			if wantAsked := len(tc.wantMoved) > 0; (q.addedAfter == 1) != wantAsked || q.addedAfter > 1 {
				t.Errorf("the batch asked for %d times, want once when own pods moved, else never", q.addedAfter)
			}
			if got := q.Len(); got != tc.wantAtOnce {
				t.Fatalf("%d requests at once, want %d", got, tc.wantAtOnce)
			}
			for deadline := time.Now().Add(5 * time.Second); q.Len() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the node was never enqueued")
				}
			}
			time.Sleep(50 * time.Millisecond) // for a second request that should not come
			if r, _ := q.Get(); r != tc.want || q.Len() != 0 {
				t.Errorf("got %v and %d more, want %v once", r, q.Len(), tc.want)
			}
			if got := slices.Sorted(maps.Keys(s.ownMoved)); !slices.Equal(got, tc.wantMoved) {
				t.Errorf("nodes for the batch %v, want %v", got, tc.wantMoved)
			}
		})
	}
}

// A reconcile that finds the node as its record says writes nothing — the
// controller's first pass after the first sync, a Node's status heartbeat
// — until the record's report time is reportRefresh old; a change is
// written at once.
func TestReconcileWritesOnlyWhatChanged(t *testing.T) {
	clock := time.Now().Truncate(time.Second)
	r := start(t, Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain, NMPort: 8041,
		Now: func() time.Time { return clock }}, node("a", true, nil))
	writes := 0
	cancel := r.mgr.Subscribe(func(_ *state.Snapshot, changes []state.Change) {
		for _, c := range changes {
			if _, ok := c.After.(*records.Node); ok {
				writes++
			}
		}
	})
	defer cancel()
	first := r.node("a").LastHealthUpdate

	clock = clock.Add(reportRefresh / 2)
	r.reconcile("a", func() bool { return true })
	if writes != 0 || r.node("a").LastHealthUpdate != first {
		t.Errorf("nothing changed: %d writes, report time %d, want none and %d", writes, r.node("a").LastHealthUpdate, first)
	}
	p := pod("task", "a", "weft-scheduler", nil, "2", "3Gi")
	if _, err := r.client.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.reconcile("a", func() bool { pods, _ := r.s.podsOn("a"); return len(pods) == 1 })
	if writes != 1 || r.node("a").NumContainers != 1 {
		t.Errorf("a pod bound: %d writes, %d containers, want 1 and 1", writes, r.node("a").NumContainers)
	}
	clock = clock.Add(reportRefresh)
	r.reconcile("a", func() bool { return true })
	if writes != 2 || r.node("a").LastHealthUpdate != clock.UnixMilli() {
		t.Errorf("report time %v old: %d writes, want 2 and the time now", reportRefresh, writes)
	}
}

// countingQueue counts the controller's delayed requests.
type countingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	addedAfter int
}

func (q *countingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.addedAfter++
	q.TypedRateLimitingInterface.AddAfter(r, d)
}

// The own-pods batch writes every node Weft's pods moved on in one
// transaction, leaves the others alone, and wakes a node's reconcile when
// a cooldown it began ends; a batch with nothing to write writes nothing.
func TestOwnPodsBatch(t *testing.T) {
	// The test reconciles the batch itself: the one the handler asks for
	// is an hour away.
	r := start(t, Options{ClusterID: "weft", SchedulerName: "weft-scheduler", Profile: translator.Plain, NMPort: 8041,
		Cooldown: 100 * time.Millisecond, OwnPodDelay: time.Hour}, node("a", true, nil), node("b", true, nil), node("c", true, nil))
	transactions := 0
	cancel := r.mgr.Subscribe(func(_ *state.Snapshot, changes []state.Change) {
		for _, c := range changes {
			if _, ok := c.After.(*records.Node); ok {
				transactions++
				return
			}
		}
	})
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h := r.s.podEvents()
	// Node b (8 CPUs) gets more than it offers: a race of a capacity drop
	// with bindings made on the capacity before it.
	for _, p := range []*corev1.Pod{pod("w1", "a", "weft-scheduler", nil, "1", "1Gi"), pod("w2", "a", "weft-scheduler", nil, "2", "1Gi"),
		pod("w3", "b", "weft-scheduler", nil, "9", "1Gi")} {
		if _, err := r.client.CoreV1().Pods("ns").Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.Create(context.Background(), event.CreateEvent{Object: p}, q)
	}
	if got := r.reconcileRequest(ownPodsBatch, func() bool { pods, _ := r.s.pods.List(labels.Everything()); return len(pods) == 3 }); got != (reconcile.Result{}) {
		t.Errorf("batch result %+v, want none", got)
	}
	if transactions != 1 {
		t.Errorf("%d transactions, want 1", transactions)
	}
	for name, want := range map[string]int32{"a": 2, "b": 1, "c": 0} {
		if got := r.node(name).NumContainers; got != want {
			t.Errorf("node %s: %d containers, want %d", name, got, want)
		}
	}
	if r.node("b").CooldownUntil == 0 || r.node("a").CooldownUntil != 0 {
		t.Errorf("cooldowns a %d, b %d: want only b's", r.node("a").CooldownUntil, r.node("b").CooldownUntil)
	}
	// b's reconcile is due when its cooldown ends (a second past it: the
	// heartbeat's whole seconds), and not before.
	if got := q.Len(); got != 0 {
		t.Errorf("%d requests due now, want none", got)
	}
	for deadline := time.Now().Add(5 * time.Second); q.Len() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("node b's reconcile never came")
		}
	}
	if req, _ := q.Get(); req != nodeRequest("b") || q.Len() != 0 {
		t.Errorf("got %v and %d more, want node b once", req, q.Len())
	}
	r.reconcileRequest(ownPodsBatch, func() bool { return true })
	if transactions != 1 {
		t.Errorf("an empty batch: %d transactions, want still 1", transactions)
	}
}
