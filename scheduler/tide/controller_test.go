package tide

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/translator/wellknown"
)

// hooks records hook calls and fails those it is told to.
type hooks struct {
	mu    sync.Mutex
	calls []HookCall
	fail  map[string]bool
}

func (h *hooks) Call(_ context.Context, hook v1alpha1.Hook, call HookCall) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail[hook.Name] {
		return errors.New("hook " + hook.Name + " answered 503")
	}
	h.calls = append(h.calls, call)
	return nil
}

// cluster is a fake API server with a pool, its nodes and pods, a clock
// and the reconciler.
type cluster struct {
	t      *testing.T
	client client.Client
	events *record.FakeRecorder
	hooks  *hooks
	now    time.Time
	r      *Reconciler
}

func newCluster(t *testing.T, pool *v1alpha1.TidePool, objs ...client.Object) *cluster {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, events: record.NewFakeRecorder(1000), hooks: &hooks{fail: map[string]bool{}}, now: now}
	c.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(append([]client.Object{pool}, objs...)...).
		WithStatusSubresource(&v1alpha1.TidePool{}).
		WithIndex(&corev1.Pod{}, podNodeIndex, podNode).Build()
	c.r = c.restart()
	return c
}

// restart is a new controller over the same cluster: it knows only what
// the objects hold.
func (c *cluster) restart() *Reconciler {
	return NewReconciler(c.client, c.events, Options{BatchSchedulerName: "weft-scheduler", Caller: c.hooks,
		Now: func() time.Time { return c.now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func (c *cluster) reconcile() {
	c.t.Helper()
	if _, err := c.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "night"}}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) states() map[string]v1alpha1.NodeState {
	var list corev1.NodeList
	if err := c.client.List(context.Background(), &list); err != nil {
		c.t.Fatal(err)
	}
	out := map[string]v1alpha1.NodeState{}
	for i := range list.Items {
		out[list.Items[i].Name] = StateOf(&list.Items[i])
	}
	return out
}

func (c *cluster) node(name string) *corev1.Node {
	var n corev1.Node
	if err := c.client.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		c.t.Fatal(err)
	}
	return &n
}

func (c *cluster) pods(node string) []string {
	var list corev1.PodList
	c.client.List(context.Background(), &list)
	var out []string
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			out = append(out, p.Name)
		}
	}
	return out
}

func (c *cluster) pool() *v1alpha1.TidePool {
	var p v1alpha1.TidePool
	if err := c.client.Get(context.Background(), types.NamespacedName{Name: "night"}, &p); err != nil {
		c.t.Fatal(err)
	}
	return &p
}

func kubeNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tier": "web"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func onlinePod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func batchPod(name, node string, tier records.Tier) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "weft-jobs",
		Labels: map[string]string{wellknown.LabelManagedBy: wellknown.ManagedByWeft, wellknown.LabelTier: tier.String()}},
		Spec:   corev1.PodSpec{NodeName: node, SchedulerName: "weft-scheduler", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func nightPool() *v1alpha1.TidePool {
	return &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: "night"}, Spec: v1alpha1.TidePoolSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, WatermarkPercent: 90, BandPercent: 5,
		Notice: &metav1.Duration{Duration: 10 * time.Minute}, DrainTimeout: &metav1.Duration{Duration: 5 * time.Minute},
		Hooks: []v1alpha1.Hook{{Name: "cmdb", URL: "http://127.0.0.1:1/hook"}},
	}}
}

// The trough: the level falls below the watermark, nodes walk Online →
// OnlineToOffline (tainted, their online pods evicted) → Offline (the
// hooks called with node and transition); the pool counts them. Then the
// peak: online pods wait, a lent node walks OfflineToOnline: its batch
// pods keep running through the notice and are evicted at the deadline,
// lowest tier first; then Online, untainted.
func TestTideLendsAndTakesBack(t *testing.T) {
	c := newCluster(t, nightPool(), kubeNode("a"), kubeNode("b"), kubeNode("c"),
		onlinePod("web-1", "a", "6"), onlinePod("web-2", "b", "6"), onlinePod("web-3", "c", "1"))
	c.reconcile()
	// 13 of 30 CPUs: lending c leaves 13/20 = 65%; b too would be 130%.
	if s := c.states(); s["c"] != v1alpha1.StateOnlineToOffline || s["a"] != v1alpha1.StateOnline || s["b"] != v1alpha1.StateOnline {
		t.Fatalf("states %v", s)
	}
	n := c.node("c")
	if !hasTaint(n, wellknown.TaintTideTransition) || n.Labels[wellknown.LabelTidePool] != "night" {
		t.Errorf("node c on its way: taints %v labels %v", n.Spec.Taints, n.Labels)
	}
	if pods := c.pods("c"); len(pods) != 0 {
		t.Errorf("online pods left on c: %v", pods)
	}
	// The evicted pod comes back on a (its ReplicaSet's work).
	c.client.Create(context.Background(), onlinePod("web-3b", "a", "1"))
	c.now = c.now.Add(time.Second)
	c.reconcile()
	if s := c.states(); s["c"] != v1alpha1.StateOffline {
		t.Fatalf("c drained but %s", s["c"])
	}
	if n := c.node("c"); !hasTaint(n, wellknown.TaintTideOffline) || hasTaint(n, wellknown.TaintTideTransition) {
		t.Errorf("offline node's taints %v", n.Spec.Taints)
	}
	if len(c.hooks.calls) != 1 || c.hooks.calls[0] != (HookCall{Pool: "night", Node: "c", From: v1alpha1.StateOnline, To: v1alpha1.StateOffline}) {
		t.Errorf("hook calls %+v", c.hooks.calls)
	}
	p := c.pool()
	if p.Status.Nodes.Offline != 1 || p.Status.Nodes.Online != 2 || len(p.Status.LastTransitions) != 2 ||
		!meta.IsStatusConditionTrue(p.Status.Conditions, ConditionReady) || meta.IsStatusConditionTrue(p.Status.Conditions, ConditionMoving) {
		t.Errorf("pool status %+v", p.Status)
	}

	// Batch work lands on c; then the peak: online pods pending.
	c.client.Create(context.Background(), batchPod("map-low", "c", records.TierLow))
	c.client.Create(context.Background(), batchPod("am", "c", records.TierHigh))
	pending := onlinePod("web-4", "", "4")
	pending.Status.Phase = corev1.PodPending
	pending.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	c.client.Create(context.Background(), pending)
	c.now = c.now.Add(time.Minute)
	c.reconcile()
	if s := c.states(); s["c"] != v1alpha1.StateOfflineToOnline {
		t.Fatalf("c not taken back: %v", s)
	}
	deadline := c.node("c").Annotations[wellknown.AnnotationTideNoticeDeadline]
	if deadline != c.now.Add(10*time.Minute).UTC().Format(time.RFC3339) {
		t.Errorf("deadline %q", deadline)
	}
	// Within the notice the batch pods stay.
	c.now = c.now.Add(5 * time.Minute)
	c.reconcile()
	if pods := c.pods("c"); len(pods) != 2 {
		t.Errorf("batch pods within the notice: %v", pods)
	}
	// At the deadline the rest go; then the node is Online, untainted.
	c.now = c.now.Add(6 * time.Minute)
	c.reconcile()
	if pods := c.pods("c"); len(pods) != 0 {
		t.Errorf("batch pods past the deadline: %v", pods)
	}
	c.reconcile()
	if s := c.states(); s["c"] != v1alpha1.StateOnline {
		t.Errorf("c after the deadline: %s", s["c"])
	}
	if n := c.node("c"); hasTaint(n, wellknown.TaintTideTransition) || hasTaint(n, wellknown.TaintTideOffline) {
		t.Errorf("online node keeps taints %v", n.Spec.Taints)
	}
}

// A failing hook keeps the node in its intermediate state, says why in
// an Event, and is retried; a controller restarted meanwhile finishes the
// move from what the Node holds, calling only the hooks not yet answered.
func TestTideHookFailureAndRestart(t *testing.T) {
	pool := nightPool()
	pool.Spec.Hooks = append(pool.Spec.Hooks, v1alpha1.Hook{Name: "dns", URL: "http://127.0.0.1:1/dns", States: []v1alpha1.NodeState{v1alpha1.StateOffline}})
	c := newCluster(t, pool, kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "1"))
	c.hooks.fail["dns"] = true
	c.reconcile() // b (no pods) is lent and, drained at once, hooks called
	if s := c.states(); s["b"] != v1alpha1.StateOnlineToOffline {
		t.Fatalf("states %v", s)
	}
	if !strings.Contains(eventWith(c.events, "TideHookFailed"), "hook dns answered 503") {
		t.Error("no Event for the failing hook")
	}
	if got := hooksDone(c.node("b"), v1alpha1.StateOnlineToOffline); !got["cmdb"] || got["dns"] {
		t.Errorf("hooks done %v", got)
	}
	c.hooks.fail["dns"] = false
	c.r = c.restart()
	c.now = c.now.Add(10 * time.Second)
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("restarted controller left b %s", s["b"])
	}
	calls := map[string]int{}
	for _, call := range c.hooks.calls {
		calls[call.Node]++
	}
	if calls["b"] != 2 { // cmdb once, dns once
		t.Errorf("hook calls %+v", c.hooks.calls)
	}
}

// A drain that cannot finish in time (a PodDisruptionBudget, a pod that
// will not go) brings the node back to Online with an Event.
func TestTideDrainTimeout(t *testing.T) {
	c := newCluster(t, nightPool(), kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "1"))
	// b starts on its way with a pod that refuses to leave.
	b := c.node("b")
	orig := b.DeepCopy()
	setState(b, v1alpha1.StateOnlineToOffline, c.now.Add(-6*time.Minute))
	b.Labels[wellknown.LabelTidePool] = "night"
	c.client.Patch(context.Background(), b, client.MergeFrom(orig))
	stuck := onlinePod("stuck", "b", "1")
	now := metav1.NewTime(c.now)
	stuck.DeletionTimestamp, stuck.Finalizers = &now, []string{"example.com/hold"}
	c.client.Create(context.Background(), stuck)
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOnline {
		t.Errorf("b after the drain timeout: %s", s["b"])
	}
	if eventWith(c.events, "TideDrainTimeout") == "" {
		t.Error("no Event for the drain timeout")
	}
}

// Two pools claiming one node: the second is not Ready and moves nothing.
func TestTideConflictingPools(t *testing.T) {
	other := nightPool()
	other.Name = "day"
	n := kubeNode("a")
	n.Labels[wellknown.LabelTidePool] = "day"
	c := newCluster(t, nightPool(), other, n, kubeNode("b"))
	c.reconcile()
	p := c.pool()
	cond := meta.FindStatusCondition(p.Status.Conditions, ConditionReady)
	if cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "a (pool day)") {
		t.Errorf("Ready condition %+v", cond)
	}
	if s := c.states(); s["b"] != v1alpha1.StateOnline {
		t.Errorf("a conflicting pool moved b: %s", s["b"])
	}
}

func hasTaint(n *corev1.Node, value string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == wellknown.TaintTide && t.Value == value {
			return true
		}
	}
	return false
}

func eventWith(r *record.FakeRecorder, s string) string {
	for {
		select {
		case e := <-r.Events:
			if strings.Contains(e, s) {
				return e
			}
		default:
			return ""
		}
	}
}

func rsPod(name, node, cpu string) *corev1.Pod {
	p := onlinePod(name, node, cpu)
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f", UID: "rs-1", Controller: &yes}}
	return p
}

func (c *cluster) pod(name string) *corev1.Pod {
	var p corev1.Pod
	if err := c.client.Get(context.Background(), types.NamespacedName{Namespace: "shop", Name: name}, &p); err != nil {
		c.t.Fatal(err)
	}
	return &p
}

// Ahead of lending, the online ReplicaSet pods of the node lent next get
// the lowest pod-deletion-cost, so that scale-in empties it first; a
// cost an owner set is left alone and weighs in the DeletionCost policy,
// the controller's own does not; once the node is no longer next, the
// controller's cost goes.
func TestTideDeletionCost(t *testing.T) {
	pool := nightPool()
	pool.Spec.Policy = v1alpha1.PolicyDeletionCost
	owned := rsPod("web-owned", "b", "3")
	owned.Annotations = map[string]string{deletionCost: "500"}
	c := newCluster(t, pool, kubeNode("a"), kubeNode("b"), kubeNode("c"),
		rsPod("web-a", "a", "9"), owned, rsPod("web-c", "c", "9"), onlinePod("naked", "a", "0"))
	c.reconcile()
	// 21 of 30 CPUs: nothing can be lent. c is next: cost 0 (b has
	// 500), one pod (a has two).
	if s := c.states(); s["a"] != v1alpha1.StateOnline || s["b"] != v1alpha1.StateOnline || s["c"] != v1alpha1.StateOnline {
		t.Fatalf("states %v", s)
	}
	if got := c.pod("web-c").Annotations[deletionCost]; got != "-1" {
		t.Errorf("next node's pod cost %q, want -1", got)
	}
	if got := c.pod("web-owned").Annotations[deletionCost]; got != "500" {
		t.Errorf("owner's cost changed to %q", got)
	}
	if _, ok := c.pod("naked").Annotations[deletionCost]; ok {
		t.Error("a pod no ReplicaSet owns was given a cost")
	}
	if _, ok := c.pod("web-a").Annotations[deletionCost]; ok {
		t.Error("a node not next had its pod's cost set")
	}
	// The controller's own cost does not count as the owner's: c stays
	// next while its pod is there; once a's pod goes, a is next instead.
	c.reconcile()
	if got := c.pod("web-c").Annotations[deletionCost]; got != "-1" {
		t.Errorf("own cost moved the choice: %q", got)
	}
	c.client.Delete(context.Background(), c.pod("web-a"))
	c.client.Create(context.Background(), rsPod("web-a2", "c", "9"))
	c.reconcile() // 21/30 still: a is empty, next; c's marks go
	if _, ok := c.pod("web-c").Annotations[deletionCost]; ok {
		t.Errorf("cost kept on a node no longer next: %v", c.pod("web-c").Annotations)
	}
}

// A node taken back counts its batch pods as saved by the notice (ended
// before the deadline) or killed (evicted at it), in metrics and an
// Event; the pool's nodes per state and the transition durations are
// metrics.
func TestTideNoticeOutcomeMetrics(t *testing.T) {
	c := newCluster(t, nightPool(), kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "1"))
	c.reconcile() // b lent
	c.now = c.now.Add(3 * time.Second)
	c.reconcile() // b Offline
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("states %v", s)
	}
	if got := testutil.ToFloat64(nodesGauge.WithLabelValues("night", "Offline")); got != 1 {
		t.Errorf("nodes Offline gauge %v", got)
	}
	for _, name := range []string{"m1", "m2", "m3"} {
		c.client.Create(context.Background(), batchPod(name, "b", records.TierLow))
	}
	killedBefore := testutil.ToFloat64(batchPodsTotal.WithLabelValues("night", "killed"))
	savedBefore := testutil.ToFloat64(batchPodsTotal.WithLabelValues("night", "saved"))
	pool := c.pool()
	pool.Spec.MinOnlineNodes = 2
	c.client.Update(context.Background(), pool)
	c.reconcile()
	if n := c.node("b"); StateOf(n) != v1alpha1.StateOfflineToOnline || n.Annotations[wellknown.AnnotationTideNoticedPods] != "3" {
		t.Fatalf("b taken back: %s %v", StateOf(n), n.Annotations)
	}
	// Two end within the notice; one is killed at the deadline.
	for _, name := range []string{"m1", "m2"} {
		var p corev1.Pod
		c.client.Get(context.Background(), types.NamespacedName{Namespace: "weft-jobs", Name: name}, &p)
		c.client.Delete(context.Background(), &p)
	}
	c.now = c.now.Add(11 * time.Minute)
	c.reconcile()
	if n := c.node("b"); n.Annotations[wellknown.AnnotationTideKilledPods] != "1" {
		t.Errorf("killed count on the node %v", n.Annotations)
	}
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOnline {
		t.Fatalf("b not back: %s", s["b"])
	}
	if n := c.node("b"); n.Annotations[wellknown.AnnotationTideNoticedPods] != "" || n.Annotations[wellknown.AnnotationTideKilledPods] != "" {
		t.Errorf("counts left on an Online node: %v", n.Annotations)
	}
	if d := testutil.ToFloat64(batchPodsTotal.WithLabelValues("night", "killed")) - killedBefore; d != 1 {
		t.Errorf("killed +%v, want 1", d)
	}
	if d := testutil.ToFloat64(batchPodsTotal.WithLabelValues("night", "saved")) - savedBefore; d != 2 {
		t.Errorf("saved +%v, want 2", d)
	}
	if e := eventWith(c.events, "TideNoticeOutcome"); !strings.Contains(e, "2 of 3 batch pods ended within the notice, 1 killed") {
		t.Errorf("outcome Event %q", e)
	}
	if n := testutil.CollectAndCount(transitionSeconds); n == 0 {
		t.Error("no transition durations observed")
	}
}

// A failing hook is called again with backoff (5 s, doubling), kept on
// the Node; the node is neither lost nor lent twice meanwhile.
func TestTideHookBackoff(t *testing.T) {
	c := newCluster(t, nightPool(), kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "1"))
	c.hooks.fail["cmdb"] = true
	attempts := func() int { return strings.Count(drainEvents(c.events), "TideHookFailed") }
	c.reconcile()
	if got := attempts(); got != 1 {
		t.Fatalf("%d failed attempts, want 1", got)
	}
	for _, step := range []struct {
		after time.Duration
		tried int
	}{{2 * time.Second, 0}, {3 * time.Second, 1}, {5 * time.Second, 0}, {5 * time.Second, 1}, {19 * time.Second, 0}, {time.Second, 1}} {
		c.now = c.now.Add(step.after)
		c.reconcile()
		if got := attempts(); got != step.tried {
			t.Errorf("+%s: %d attempts, want %d", step.after, got, step.tried)
		}
		if s := c.states(); s["b"] != v1alpha1.StateOnlineToOffline || s["a"] != v1alpha1.StateOnline {
			t.Fatalf("states while the hook fails: %v", s)
		}
	}
	c.hooks.fail["cmdb"] = false
	c.now = c.now.Add(time.Minute)
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("b after the hook answered: %s", s["b"])
	}
	if _, ok := c.node("b").Annotations[wellknown.AnnotationTideHookRetry]; ok {
		t.Error("retry kept after the move")
	}
}

// The timed mode on the injected clock: a window keeping every node
// Online takes the lent node back at its start, and the trough lends it
// again once the window ends.
func TestTideTimedWindow(t *testing.T) {
	pool := nightPool()
	pool.Spec.Hooks = nil
	pool.Spec.Notice = &metav1.Duration{}
	pool.Spec.Windows = []v1alpha1.TimedWindow{{From: metav1.NewTime(now.Add(time.Hour)), To: metav1.NewTime(now.Add(2 * time.Hour)), OnlineNodes: 2}}
	c := newCluster(t, pool, kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "1"))
	settle := func() {
		for range 3 {
			c.reconcile()
			c.now = c.now.Add(time.Second)
		}
	}
	settle()
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("before the window: %v", s)
	}
	c.now = now.Add(time.Hour)
	settle()
	if s := c.states(); s["b"] != v1alpha1.StateOnline {
		t.Fatalf("in the window: %v", s)
	}
	if p := c.pool(); p.Status.LastTransitions[1].Reason != ReasonTimedWindow {
		t.Errorf("transitions %+v", p.Status.LastTransitions)
	}
	c.now = now.Add(2 * time.Hour)
	settle()
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("after the window: %v", s)
	}
}

func drainEvents(r *record.FakeRecorder) string {
	var all []string
	for {
		select {
		case e := <-r.Events:
			all = append(all, e)
		default:
			return strings.Join(all, "\n")
		}
	}
}

// Pods that tolerate a lent node's taint (Weft's own control plane, a
// system pod tolerating everything) stay on a node being lent and do
// not hold its move up.
func TestTideTolerantPodsStay(t *testing.T) {
	rm := onlinePod("weft-rm", "b", "1")
	rm.Spec.Tolerations = []corev1.Toleration{{Key: wellknown.TaintTide, Operator: corev1.TolerationOpExists}}
	sys := onlinePod("agent", "b", "0")
	sys.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	c := newCluster(t, nightPool(), kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "2"), onlinePod("web-2", "b", "1"), rm, sys)
	c.reconcile()
	c.now = c.now.Add(time.Second)
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("states %v", s)
	}
	if got := c.pods("b"); !slices.Equal(got, []string{"agent", "weft-rm"}) {
		t.Errorf("pods left on b: %v", got)
	}
}

// A drain completes only once the API server, not only the cache, has no
// online pod on the node: one bound an instant before the taint landed
// is evicted first. An online pod found on a lent node all the same is
// evicted, with an Event.
func TestTideDrainConfirmedLiveAndStraysEvicted(t *testing.T) {
	c := newCluster(t, nightPool(), kubeNode("a"), kubeNode("b"), onlinePod("web-1", "a", "1"))
	// The API server has a pod on b that the controller's cache has not
	// seen yet.
	scheme, _ := NewScheme()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(onlinePod("web-late", "b", "1")).
		WithIndex(&corev1.Pod{}, podNodeIndex, podNode).Build()
	c.r = NewReconciler(c.client, c.events, Options{BatchSchedulerName: "weft-scheduler", Caller: c.hooks, APIReader: live,
		Now: func() time.Time { return c.now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOnlineToOffline {
		t.Fatalf("b completed its drain with a pod the cache missed: %v", s)
	}
	if len(c.hooks.calls) != 0 {
		t.Errorf("hooks called before the drain: %+v", c.hooks.calls)
	}
	// Once the API server has it gone too, the move completes.
	live.Delete(context.Background(), onlinePod("web-late", "b", "1"))
	c.reconcile()
	if s := c.states(); s["b"] != v1alpha1.StateOffline {
		t.Fatalf("b after the late pod went: %v", s)
	}
	// A stray online pod on the lent node is evicted.
	c.client.Create(context.Background(), onlinePod("stray", "b", "1"))
	c.reconcile()
	if pods := c.pods("b"); len(pods) != 0 {
		t.Errorf("pods left on lent b: %v", pods)
	}
	if eventWith(c.events, "TideStrayOnlinePods") == "" {
		t.Error("no Event for the stray pod")
	}
}

// The controller moves a node only along the tide's state machine
// (wellknown.TideState.CanMoveTo): a move off it leaves the node as it
// was, whatever asked for it.
func TestMovesFollowTheStateMachine(t *testing.T) {
	c := newCluster(t, nightPool(), kubeNode("a"))
	move := func(to v1alpha1.NodeState) error {
		return c.r.move(context.Background(), c.pool(), &v1alpha1.TidePoolStatus{}, c.node("a"), to, "Test", 0, c.now)
	}
	if err := move(v1alpha1.StateOffline); err == nil || StateOf(c.node("a")) != v1alpha1.StateOnline {
		t.Fatalf("Online → Offline: %v, now %s", err, StateOf(c.node("a")))
	}
	if err := move(v1alpha1.StateOnlineToOffline); err != nil || StateOf(c.node("a")) != v1alpha1.StateOnlineToOffline {
		t.Fatalf("Online → OnlineToOffline: %v, now %s", err, StateOf(c.node("a")))
	}
	if err := move(v1alpha1.StateOfflineToOnline); err == nil || StateOf(c.node("a")) != v1alpha1.StateOnlineToOffline {
		t.Fatalf("OnlineToOffline → OfflineToOnline: %v, now %s", err, StateOf(c.node("a")))
	}
}
