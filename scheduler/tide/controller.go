package tide

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// Options configures a Reconciler.
type Options struct {
	// BatchSchedulerName is Weft's scheduler: pods it binds are batch
	// work, as are the pods of Weft's YARN containers.
	BatchSchedulerName string
	// Caller calls hooks (HTTPCaller).
	Caller Caller
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Busy is how soon a pool with a move under way is looked at again
	// (default 2s); Idle, one without (default 30s): node and pod
	// changes wake it before then.
	Busy, Idle time.Duration
	// APIReader reads straight from the API server (the manager's
	// GetAPIReader): a drain is confirmed there, not in the cache.
	// Default: the client.
	APIReader client.Reader
	// Parallelism is how many nodes (and pods, for the deletion cost)
	// are written to at once (default 16): a decision that lends a
	// hundred nodes must not take a hundred round trips in a row.
	Parallelism int
}

// Reconciler drives TidePools: one reconcile plans the pool's moves and
// takes each moving node one step further. It keeps nothing in memory
// that the Nodes do not hold.
type Reconciler struct {
	client client.Client
	events record.EventRecorder
	opts   Options
	// statusMu guards the pool status a reconcile builds while its nodes
	// move in parallel.
	statusMu sync.Mutex
}

// NewReconciler returns a Reconciler over c.
func NewReconciler(c client.Client, events record.EventRecorder, opts Options) *Reconciler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Caller == nil {
		opts.Caller = HTTPCaller{}
	}
	opts.Busy = cmp.Or(opts.Busy, 2*time.Second)
	opts.Idle = cmp.Or(opts.Idle, 30*time.Second)
	opts.Parallelism = cmp.Or(opts.Parallelism, 16)
	if opts.APIReader == nil {
		opts.APIReader = c
	}
	return &Reconciler{client: c, events: events, opts: opts}
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// podNodeIndex indexes pods by the node they are bound to (podNode),
// the field the API server selects pods by.
const podNodeIndex = "spec.nodeName"

func podNode(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }

// SetupWithManager runs the reconciler under mgr: a pool is reconciled
// when it changes, when one of its nodes does, and when pods come, go or
// wait (the level moves).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr manager.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Pod{}, podNodeIndex, podNode); err != nil {
		return err
	}
	allPools := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var pools v1alpha1.TidePoolList
		if err := r.client.List(ctx, &pools); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(pools.Items))
		for i, p := range pools.Items {
			out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
		}
		return out
	})
	return builder.ControllerManagedBy(mgr).Named("tide").
		For(&v1alpha1.TidePool{}).
		Watches(&corev1.Node{}, allPools).
		Watches(&corev1.Pod{}, allPools).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(r)
}

// Condition types of a pool.
const (
	ConditionReady  = "Ready"
	ConditionMoving = "Moving"
)

// Reconcile plans a pool's moves and drives its moving nodes.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := r.opts.Now()
	var pool v1alpha1.TidePool
	if err := r.client.Get(ctx, req.NamespacedName, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			forgetPool(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nodes, conflict, err := r.claim(ctx, &pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	status := pool.Status.DeepCopy()
	status.ObservedGeneration = pool.Generation
	if conflict != "" {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse,
			Reason: "NodeClaimedByAnotherPool", Message: conflict, ObservedGeneration: pool.Generation})
		r.events.Event(&pool, corev1.EventTypeWarning, "NodeClaimedByAnotherPool", conflict)
		return reconcile.Result{RequeueAfter: r.opts.Idle}, r.writeStatus(ctx, &pool, status)
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Valid", Message: fmt.Sprintf("%d nodes", len(nodes)), ObservedGeneration: pool.Generation})

	pods, err := r.podsByNode(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	views := make([]NodeView, len(nodes))
	for i, n := range nodes {
		views[i] = r.view(n, pods[n.Name])
	}
	plan := Decide(pool.Spec, views, r.pendingOnline(pods[""]), now)
	status.LevelPercent = plan.LevelPercent
	if moves := len(plan.Lend) + len(plan.Abort) + len(plan.Reclaim); moves > 0 {
		notReady := 0
		for _, v := range views {
			if !v.Ready {
				notReady++
			}
		}
		r.opts.Logger.Info("tide: plan", "pool", pool.Name, "level", plan.LevelPercent, "lend", len(plan.Lend), "abort", len(plan.Abort),
			"reclaim", len(plan.Reclaim), "reason", plan.Reason, "nodesNotReady", notReady)
	}
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	type start struct {
		node *corev1.Node
		to   v1alpha1.NodeState
	}
	var starts []start
	for _, move := range []struct {
		names []string
		to    v1alpha1.NodeState
	}{{plan.Lend, v1alpha1.StateOnlineToOffline}, {plan.Abort, v1alpha1.StateOnline}, {plan.Reclaim, v1alpha1.StateOfflineToOnline}} {
		for _, name := range move.names {
			starts = append(starts, start{byName[name], move.to})
		}
	}
	// A node starts its move and then takes its first step in the same
	// reconcile (a node with nothing to drain goes straight on); nodes
	// move side by side.
	errs := []error{r.each(len(starts), func(i int) error {
		return r.move(ctx, &pool, status, starts[i].node, starts[i].to, plan.Reason, len(r.ofKind(pods[starts[i].node.Name], batch)), now)
	})}
	errs = append(errs, r.each(len(nodes), func(i int) error {
		return r.drive(ctx, &pool, status, nodes[i], pods[nodes[i].Name], now)
	}))
	errs = append(errs, r.markDeletionCost(ctx, nodes, plan.Next, pods))
	counts, moving := v1alpha1.NodeCounts{}, false
	for _, n := range nodes {
		switch StateOf(n) {
		case v1alpha1.StateOnline:
			counts.Online++
		case v1alpha1.StateOnlineToOffline:
			counts.OnlineToOffline++
			moving = true
		case v1alpha1.StateOffline:
			counts.Offline++
		case v1alpha1.StateOfflineToOnline:
			counts.OfflineToOnline++
			moving = true
		}
	}
	status.Nodes = counts
	for state, n := range map[v1alpha1.NodeState]int32{v1alpha1.StateOnline: counts.Online, v1alpha1.StateOnlineToOffline: counts.OnlineToOffline,
		v1alpha1.StateOffline: counts.Offline, v1alpha1.StateOfflineToOnline: counts.OfflineToOnline} {
		nodesGauge.WithLabelValues(pool.Name, string(state)).Set(float64(n))
	}
	movingCond := metav1.Condition{Type: ConditionMoving, Status: metav1.ConditionFalse, Reason: "Settled", ObservedGeneration: pool.Generation}
	if moving {
		movingCond.Status, movingCond.Reason = metav1.ConditionTrue, "NodesInTransition"
		movingCond.Message = fmt.Sprintf("%d nodes on their way to batch, %d on their way back", counts.OnlineToOffline, counts.OfflineToOnline)
	}
	meta.SetStatusCondition(&status.Conditions, movingCond)
	errs = append(errs, r.writeStatus(ctx, &pool, status))
	after := r.opts.Idle
	if moving {
		after = r.opts.Busy
	}
	if err := errors.Join(errs...); err != nil {
		r.opts.Logger.Error("tide: reconcile", "pool", pool.Name, "err", err)
	}
	r.opts.Logger.Debug("tide: reconciled", "pool", pool.Name, "took", r.opts.Now().Sub(now), "moving", moving)
	// Errors are retried on the next look, not with the workqueue's
	// backoff: a failing hook or a PDB that refuses an eviction is
	// expected and must not slow the pool's other nodes.
	return reconcile.Result{RequeueAfter: after}, nil
}

// claim lists the pool's nodes and labels them as its own. A node another
// existing pool claims is a conflict: the pool moves nothing.
func (r *Reconciler) claim(ctx context.Context, pool *v1alpha1.TidePool) ([]*corev1.Node, string, error) {
	sel, err := metav1.LabelSelectorAsSelector(&pool.Spec.NodeSelector)
	if err != nil {
		return nil, fmt.Sprintf("invalid nodeSelector: %v", err), nil
	}
	if sel.Empty() {
		sel = labels.Nothing() // an empty selector would take every node: refuse it
	}
	var list corev1.NodeList
	if err := r.client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, "", fmt.Errorf("list nodes: %w", err)
	}
	var nodes []*corev1.Node
	var taken []string
	for i := range list.Items {
		n := &list.Items[i]
		owner := n.Labels[wellknown.LabelTidePool]
		if owner != "" && owner != pool.Name {
			var other v1alpha1.TidePool
			err := r.client.Get(ctx, types.NamespacedName{Name: owner}, &other)
			if err == nil {
				taken = append(taken, n.Name+" (pool "+owner+")")
				continue
			}
			if !apierrors.IsNotFound(err) {
				return nil, "", err
			}
		}
		nodes = append(nodes, n)
	}
	if len(taken) > 0 {
		return nil, "nodes claimed by another pool first: " + strings.Join(taken, ", "), nil
	}
	for _, n := range nodes {
		if n.Labels[wellknown.LabelTidePool] != pool.Name {
			orig := n.DeepCopy()
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[wellknown.LabelTidePool] = pool.Name
			if err := r.client.Patch(ctx, n, client.MergeFrom(orig)); err != nil {
				return nil, "", fmt.Errorf("claim node %s: %w", n.Name, err)
			}
		}
	}
	return nodes, "", nil
}

// podsByNode is the cluster's live pods by node ("" for those not bound).
func (r *Reconciler) podsByNode(ctx context.Context) (map[string][]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := map[string][]*corev1.Pod{}
	for i := range list.Items {
		if p := &list.Items[i]; !ended(p) {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out, nil
}

// ended reports whether a pod has run its course: it holds nothing on
// its node any more.
func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// NewScheme holds the kinds the tidal controller reads and writes:
// Kubernetes' own and TidePools (for weft-tide and its tests and
// benchmark alike).
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// kind of a pod, as the tide sees it.
type kind int

const (
	online kind = iota
	batch
	// pinned are pods that stay whatever the tide: DaemonSets' and
	// static (mirror) pods, and pods that tolerate the taint of a lent
	// node (they may run there: Weft's own control plane, system pods
	// tolerating every taint).
	pinned
)

// lentTaint is the taint of an Offline node.
var lentTaint = corev1.Taint{Key: wellknown.TaintTide, Value: wellknown.TaintTideOffline, Effect: corev1.TaintEffectNoSchedule}

func (r *Reconciler) kindOf(p *corev1.Pod) kind {
	if p.Spec.SchedulerName == r.opts.BatchSchedulerName && r.opts.BatchSchedulerName != "" || p.Labels[wellknown.LabelManagedBy] == wellknown.ManagedByWeft {
		return batch
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return pinned
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return pinned
		}
	}
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(&lentTaint) {
			return pinned
		}
	}
	return online
}

// view is what the planner knows of a node.
func (r *Reconciler) view(n *corev1.Node, pods []*corev1.Pod) NodeView {
	v := NodeView{Name: n.Name, State: StateOf(n), Ready: ready(n) && !n.Spec.Unschedulable, MilliCPU: n.Status.Allocatable.Cpu().MilliValue()}
	for _, p := range pods {
		switch r.kindOf(p) {
		case online:
			v.OnlinePods++
			v.OnlineMilliCPU += cpuRequest(p)
			// The policy weighs what the services' owners set, not the
			// costs this controller set itself.
			if c, err := strconv.ParseInt(p.Annotations[deletionCost], 10, 64); err == nil && !ownCost(p) {
				v.DeletionCost += c
			}
		case batch:
			v.BatchPods++
		}
	}
	return v
}

// pendingOnline is what unbound online pods request, and the part of it
// the scheduler found no room for.
func (r *Reconciler) pendingOnline(unbound []*corev1.Pod) Pending {
	var sum Pending
	for _, p := range unbound {
		if r.kindOf(p) != online || p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		request := max(1, cpuRequest(p))
		sum.MilliCPU += request
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				sum.WaitingMilliCPU += request
			}
		}
	}
	return sum
}

// move moves a node to s: it starts a move (to an intermediate state),
// completes one, or rolls one back. batchPods are the batch pods on the
// node, the ones a move back to Online gives notice to.
func (r *Reconciler) move(ctx context.Context, pool *v1alpha1.TidePool, status *v1alpha1.TidePoolStatus, n *corev1.Node, s v1alpha1.NodeState, reason string, batchPods int, now time.Time) error {
	if n == nil {
		return nil
	}
	from, entered := StateOf(n), since(n)
	if !wellknown.TideState(from).CanMoveTo(wellknown.TideState(s)) {
		return fmt.Errorf("node %s: %s → %s is no move of the tide", n.Name, from, s)
	}
	noticed, killed := annotationCount(n, wellknown.AnnotationTideNoticedPods), annotationCount(n, wellknown.AnnotationTideKilledPods)
	orig := n.DeepCopy()
	setState(n, s, now)
	if s == v1alpha1.StateOfflineToOnline {
		n.Annotations[wellknown.AnnotationTideNoticeDeadline] = wellknown.FormatTime(now.Add(Notice(pool.Spec)))
		n.Annotations[wellknown.AnnotationTideNoticedPods] = wellknown.FormatCount(batchPods)
	}
	if err := r.client.Patch(ctx, n, client.MergeFrom(orig)); err != nil {
		*n = *orig
		return fmt.Errorf("node %s → %s: %w", n.Name, s, err)
	}
	transitionsTotal.WithLabelValues(pool.Name, string(s), reason).Inc()
	if (from == v1alpha1.StateOnlineToOffline || from == v1alpha1.StateOfflineToOnline) && !entered.IsZero() {
		transitionSeconds.WithLabelValues(pool.Name, string(from), string(s)).Observe(now.Sub(entered).Seconds())
	}
	if from == v1alpha1.StateOfflineToOnline && s == v1alpha1.StateOnline {
		// The notice's outcome: the batch pods it was given to, less
		// those still there at its deadline.
		saved := max(0, noticed-killed)
		batchPodsTotal.WithLabelValues(pool.Name, "saved").Add(float64(saved))
		batchPodsTotal.WithLabelValues(pool.Name, "killed").Add(float64(killed))
		if noticed > 0 {
			r.events.Eventf(n, corev1.EventTypeNormal, "TideNoticeOutcome", "node %s: %d of %d batch pods ended within the notice, %d killed at its deadline",
				n.Name, saved, noticed, killed)
		}
	}
	r.record(pool, status, n, from, s, reason, now)
	return nil
}

// each runs fn for 0..n-1, Parallelism at a time, and joins the errors.
func (r *Reconciler) each(n int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, r.opts.Parallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// record tells a transition: Events on the node and the pool, the pool's
// last transitions.
func (r *Reconciler) record(pool *v1alpha1.TidePool, status *v1alpha1.TidePoolStatus, n *corev1.Node, from, to v1alpha1.NodeState, reason string, now time.Time) {
	msg := fmt.Sprintf("node %s: %s → %s (%s)", n.Name, from, to, reason)
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	r.events.Event(n, corev1.EventTypeNormal, "Tide"+string(to), msg)
	r.events.Event(pool, corev1.EventTypeNormal, "Tide"+string(to), msg)
	r.opts.Logger.Info("tide: transition", "pool", pool.Name, "node", n.Name, "from", from, "to", to, "reason", reason)
	status.LastTransitions = append([]v1alpha1.Transition{{Node: n.Name, From: from, To: to, At: metav1.NewTime(now), Reason: reason}}, status.LastTransitions...)
	if len(status.LastTransitions) > 20 {
		status.LastTransitions = status.LastTransitions[:20]
	}
}

// drive takes a node in an intermediate state one step further.
//
// On its way to batch: its online pods are evicted through the Eviction
// API (their PodDisruptionBudgets decide how fast); once none is left and
// the hooks answered, it is Offline. A drain that outlasts the pool's
// DrainTimeout brings the node back to Online, with an Event.
//
// On its way back: its batch work had the notice to finish (weft-rm tells
// the AMs); at the deadline what is left is evicted, lowest tier first;
// once none is left and the hooks answered, it is Online.
func (r *Reconciler) drive(ctx context.Context, pool *v1alpha1.TidePool, status *v1alpha1.TidePoolStatus, n *corev1.Node, pods []*corev1.Pod, now time.Time) error {
	state := StateOf(n)
	var target, back v1alpha1.NodeState
	var leaves kind // the kind of pod that leaves the node in its state
	switch state {
	case v1alpha1.StateOnlineToOffline:
		target, back, leaves = v1alpha1.StateOffline, v1alpha1.StateOnline, online
		if t := since(n); !t.IsZero() && now.Sub(t) > DrainTimeout(pool.Spec) {
			r.events.Eventf(n, corev1.EventTypeWarning, "TideDrainTimeout", "online pods did not leave node %s within %s: back to Online", n.Name, DrainTimeout(pool.Spec))
			return r.move(ctx, pool, status, n, back, "DrainTimeout", 0, now)
		}
	case v1alpha1.StateOfflineToOnline:
		target, leaves = v1alpha1.StateOnline, batch
	case v1alpha1.StateOffline:
		return r.evictStrays(ctx, n, pods)
	default:
		return nil
	}
	leaving := r.ofKind(pods, leaves)
	if len(leaving) == 0 && leaves == online {
		// Before a drain completes, the API server's word, not the
		// cache's: a pod bound an instant before the taint landed may not
		// have reached the cache yet (as kubectl drain lists after it
		// cordons). One bound later still is a stray, evicted from the
		// lent node. (Taking a node back needs no such read: a batch pod
		// missed there keeps running on an Online node, as batch work
		// may.)
		live, err := r.livePods(ctx, n.Name)
		if err != nil {
			return err
		}
		leaving = r.ofKind(live, leaves)
	}
	if state == v1alpha1.StateOfflineToOnline {
		deadline, _ := wellknown.ParseTime(n.Annotations[wellknown.AnnotationTideNoticeDeadline])
		if len(leaving) > 0 && now.Before(deadline) {
			return nil // the notice runs
		}
		slices.SortStableFunc(leaving, func(a, b *corev1.Pod) int {
			return cmp.Compare(translator.PodTier(a), translator.PodTier(b))
		})
		if _, counted := n.Annotations[wellknown.AnnotationTideKilledPods]; !counted && len(leaving) > 0 {
			// What the notice did not save, counted once: a restarted
			// controller finds it on the Node.
			orig := n.DeepCopy()
			n.Annotations[wellknown.AnnotationTideKilledPods] = wellknown.FormatCount(len(leaving))
			if err := r.client.Patch(ctx, n, client.MergeFrom(orig)); err != nil {
				*n = *orig
				return fmt.Errorf("node %s: count the pods past the notice: %w", n.Name, err)
			}
		}
	}
	if len(leaving) > 0 {
		return r.evict(ctx, n, leaving)
	}
	from := v1alpha1.StateOnline
	if state == v1alpha1.StateOfflineToOnline {
		from = v1alpha1.StateOffline
	}
	retryAt, failures := hookRetry(n)
	if now.Before(retryAt) {
		return nil // the hooks failed; they are called again at retryAt
	}
	orig := n.DeepCopy()
	done := hooksDone(n, state)
	var failed []error
	for _, h := range append(hooksFor(pool.Spec.Hooks, state), hooksFor(pool.Spec.Hooks, target)...) {
		if done[h.Name] {
			continue
		}
		if err := r.opts.Caller.Call(ctx, h, HookCall{Pool: pool.Name, Node: n.Name, From: from, To: target}); err != nil {
			failed = append(failed, err)
			continue
		}
		done[h.Name] = true
		markHookDone(n, state, h.Name)
	}
	if len(failed) > 0 {
		err := errors.Join(failed...)
		failures++
		wait := hookBackoff(failures)
		n.Annotations[wellknown.AnnotationTideHookRetry] = wellknown.HookRetry{At: now.Add(wait), Failures: failures}.String()
		r.events.Eventf(n, corev1.EventTypeWarning, "TideHookFailed", "node %s stays %s (failure %d, next try in %s): %v", n.Name, state, failures, wait, err)
		if perr := r.client.Patch(ctx, n, client.MergeFrom(orig)); perr != nil {
			return errors.Join(err, perr)
		}
		return err
	}
	return r.move(ctx, pool, status, n, target, "Completed", 0, now)
}

// evict evicts pods from node n through the Eviction API, so that
// PodDisruptionBudgets hold; pods already on their way are left to go.
func (r *Reconciler) evict(ctx context.Context, n *corev1.Node, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := r.client.SubResource("eviction").Create(ctx, p, ev); err != nil && !apierrors.IsNotFound(err) {
			// 429: a PodDisruptionBudget holds it for now.
			errs = append(errs, fmt.Errorf("evict %s/%s from %s: %w", p.Namespace, p.Name, n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// evictStrays evicts online pods found on a lent node: they do not
// tolerate its taint, so they were bound in the instant before it landed,
// by a scheduler that had not seen it yet.
func (r *Reconciler) evictStrays(ctx context.Context, n *corev1.Node, pods []*corev1.Pod) error {
	var strays []*corev1.Pod
	for _, p := range r.ofKind(pods, online) {
		if p.DeletionTimestamp == nil {
			strays = append(strays, p)
		}
	}
	if len(strays) == 0 {
		return nil
	}
	r.events.Eventf(n, corev1.EventTypeWarning, "TideStrayOnlinePods", "%d online pods on lent node %s (bound as it was lent): evicted", len(strays), n.Name)
	return r.evict(ctx, n, strays)
}

// ofKind are the pods of kind k.
func (r *Reconciler) ofKind(pods []*corev1.Pod, k kind) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if r.kindOf(p) == k {
			out = append(out, p)
		}
	}
	return out
}

// livePods are the live pods bound to a node, as the API server has them.
func (r *Reconciler) livePods(ctx context.Context, node string) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.opts.APIReader.List(ctx, &list, client.MatchingFields{podNodeIndex: node}); err != nil {
		return nil, fmt.Errorf("list pods on %s: %w", node, err)
	}
	var out []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; !ended(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// writeStatus replaces the pool's status with the one this reconcile
// built, whole: a merge patch of only what changed would leave a status
// the schema refuses (the counts a new pool does not have yet), and one
// that drops a field omitted when zero. A conflict is fixed by the next
// reconcile.
func (r *Reconciler) writeStatus(ctx context.Context, pool *v1alpha1.TidePool, status *v1alpha1.TidePoolStatus) error {
	if equality.Semantic.DeepEqual(&pool.Status, status) {
		return nil
	}
	pool.Status = *status
	if err := r.client.Status().Update(ctx, pool); err != nil {
		return fmt.Errorf("pool %s status: %w", pool.Name, err)
	}
	return nil
}

// deletionCost is the ReplicaSet controller's annotation: pods of lower
// cost go first on scale-in.
const deletionCost = "controller.kubernetes.io/pod-deletion-cost"

func cpuRequest(p *corev1.Pod) int64 {
	var m int64
	for _, c := range p.Spec.Containers {
		m += c.Resources.Requests.Cpu().MilliValue()
	}
	return m
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// markDeletionCost gives the online pods of the nodes lent next the
// lowest pod-deletion-cost — the first node's lowest — so that the
// ReplicaSet controller, scaling a service in, deletes them before any
// other and empties those nodes first (it honours the annotation on
// ReplicaSet pods only, so only those are marked). A cost this
// controller set on a pod of another node is taken off again; a cost
// someone else set is never touched.
func (r *Reconciler) markDeletionCost(ctx context.Context, nodes []*corev1.Node, next []string, pods map[string][]*corev1.Pod) error {
	rank := map[string]int{}
	for i, name := range next {
		rank[name] = i - len(next)
	}
	var patches []*corev1.Pod
	var wants []string
	for _, n := range nodes {
		if StateOf(n) != v1alpha1.StateOnline {
			continue // its pods are leaving or are batch work
		}
		for _, p := range pods[n.Name] {
			if r.kindOf(p) != online || !ownedByReplicaSet(p) || p.DeletionTimestamp != nil {
				continue
			}
			_, userSet := p.Annotations[deletionCost]
			if userSet && !ownCost(p) {
				continue
			}
			want := ""
			if c, ok := rank[n.Name]; ok {
				want = strconv.Itoa(c)
			}
			if p.Annotations[wellknown.AnnotationTideDeletionCost] != want {
				patches, wants = append(patches, p), append(wants, want)
			}
		}
	}
	return r.each(len(patches), func(i int) error {
		p := patches[i]
		orig := p.DeepCopy()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		if wants[i] == "" {
			delete(p.Annotations, deletionCost)
			delete(p.Annotations, wellknown.AnnotationTideDeletionCost)
		} else {
			p.Annotations[deletionCost] = wants[i]
			p.Annotations[wellknown.AnnotationTideDeletionCost] = wants[i]
		}
		if err := r.client.Patch(ctx, p, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod-deletion-cost of %s/%s: %w", p.Namespace, p.Name, err)
		}
		return nil
	})
}

// ownCost reports whether p's pod-deletion-cost is the one this
// controller set.
func ownCost(p *corev1.Pod) bool {
	mark, ok := p.Annotations[wellknown.AnnotationTideDeletionCost]
	return ok && mark == p.Annotations[deletionCost]
}

func ownedByReplicaSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "ReplicaSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}
