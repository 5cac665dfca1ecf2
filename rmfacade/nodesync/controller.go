package nodesync

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/weft-sh/weft/translator/kubeclient"
)

var _ reconcile.Reconciler = (*Syncer)(nil)

// Reconcile updates one YARN node (a request named by the Kubernetes
// node's name) from what the watches hold, as a NodeManager's heartbeat
// updates its node in YARN's RM, and asks to be woken when what it read
// goes stale on its own (a cooldown's end, an agent's heartbeat ageing, a
// node not Ready reaching NodeExpiry).
func (s *Syncer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !kubeclient.WaitForSync(ctx, s.synced()...) {
		return reconcile.Result{}, fmt.Errorf("nodes and pods not listed: %w", ctx.Err())
	}
	if req == ownPodsBatch {
		return reconcile.Result{}, s.syncOwnPods()
	}
	after, err := s.syncNode(req.Name)
	return reconcile.Result{RequeueAfter: after}, err
}

// ownPodsBatch is the request that writes every node whose record lags
// behind Weft's own pods (see podEvents). No node's request has a
// namespace: nodes are cluster-scoped; nor can a namespace hold a slash.
var ownPodsBatch = reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "nodesync/own-pods", Name: "batch"}}

// nodeRequest is the request that reconciles one node.
func nodeRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// syncOwnPods writes, in one transaction, the nodes Weft's own pods moved
// on since the last batch, and asks for a node's reconcile when a record
// it wrote goes stale on its own (a cooldown it began ends). On a failed
// write the nodes wait for the batch's retry.
func (s *Syncer) syncOwnPods() error {
	s.ownMu.Lock()
	names, q := s.ownMoved, s.queue
	s.ownMoved = nil
	s.ownMu.Unlock()
	if len(names) == 0 {
		return nil
	}
	err := s.writeNodes(slices.Collect(maps.Keys(names)), q)
	if err != nil {
		s.ownMu.Lock()
		if s.ownMoved == nil {
			s.ownMoved = map[string]struct{}{}
		}
		maps.Copy(s.ownMoved, names)
		s.ownMu.Unlock()
	}
	return err
}

// SetupWithManager runs the Syncer under mgr, fed by its own informers
// (Run runs them): a node is reconciled when its Node, its CNR or a pod
// bound to it changes in a way that moves its numbers.
func (s *Syncer) SetupWithManager(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named("nodes").
		WatchesRawSource(&source.Informer{Informer: s.nodeInformer, Handler: &handler.EnqueueRequestForObject{},
			Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: s.nodeMoved}}}).
		WatchesRawSource(&source.Informer{Informer: s.podInformer, Handler: s.podEvents(),
			Predicates: []predicate.Predicate{predicate.Funcs{UpdateFunc: s.podMoved}}}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4})
	if s.cnrInformer != nil {
		b = b.WatchesRawSource(&source.Informer{Informer: s.cnrInformer, Handler: &handler.EnqueueRequestForObject{}})
	}
	return b.Complete(s)
}

// PodNode maps a pod to the node it is bound to.
func PodNode(_ context.Context, o client.Object) []reconcile.Request {
	if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []reconcile.Request{nodeRequest(p.Spec.NodeName)}
	}
	return nil
}

// podEvents enqueues the node of a pod that moves the node's numbers. A
// change in what others' pods hold there is read at once: the allocator's
// capacity is the node's less theirs. A change of Weft's own pods waits up
// to ownPodDelay, as YARN's RM learns of a node's containers at its
// NodeManager's next heartbeat: the allocator accounts for Weft's pods from
// the pods themselves, and the record's Used only shows them (yarn node
// -list, the AMs' headroom). The nodes they moved on are written by one
// batch (ownPodsBatch) each ownPodDelay, not by a reconcile a node: pods
// bound at a scheduler's pace reach a node seconds apart, so a node's own
// delay would join none of them: test/bench/binding's 5,000 bindings
// across 1,000 nodes would be 5,000 reconciles and store transactions, a
// tenth of weft-rm's CPU while it binds (the controller's per-reconcile
// logger, ID and metrics, a timer each in the delaying queue, every
// transaction waking the store's subscribers); a batch a second writes
// each node at most once in it.
func (s *Syncer) podEvents() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		own := true
		var reqs []reconcile.Request
		for _, o := range objs {
			p, ok := o.(*corev1.Pod)
			if !ok {
				continue
			}
			own = own && s.isWeft(p)
			reqs = append(reqs, PodNode(context.Background(), p)...)
		}
		if len(reqs) == 0 {
			return
		}
		if !own || s.ownPodDelay() < 0 {
			for _, r := range reqs {
				q.Add(r)
			}
			return
		}
		s.ownMu.Lock()
		// Only the first node since the last batch took its nodes asks
		// for the next: the others join a batch already asked for (each
		// AddAfter is a handoff to the delaying queue's goroutine, which
		// would only find the batch waiting).
		first := len(s.ownMoved) == 0
		if s.ownMoved == nil {
			s.ownMoved = map[string]struct{}{}
		}
		for _, r := range reqs {
			s.ownMoved[r.Name] = struct{}{}
		}
		s.queue = q
		s.ownMu.Unlock()
		if first {
			q.AddAfter(ownPodsBatch, s.ownPodDelay())
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
		// Both versions decide: a pod that stopped or started being
		// Weft's moves what others hold.
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.ObjectNew, e.ObjectOld)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
	}
}

// nodeMoved tells a Node update that can change the node's record: what
// the trimmed watch keeps of it (labels, annotations — the agents'
// capacity and utilization —, spec, allocatable and readiness) changed,
// or the record's report time is due for its refresh (reportRefresh).
// Most of a node's updates are its kubelet's status reports, whose
// heartbeat times the trimmed status no longer shows (test/bench/binding:
// ~700 a round from 1,000 kwok nodes, a reconcile each that would write
// nothing); kube-scheduler likewise drops node updates that change nothing
// it schedules by (nodeSchedulingPropertiesChange in its event handlers).
// What goes stale with no event (an agent's heartbeat ageing, a cooldown's
// end, a node not Ready expiring) is woken by the reconcile's
// RequeueAfter, not by these updates.
func (s *Syncer) nodeMoved(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*corev1.Node)
	after, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	if !maps.Equal(before.Labels, after.Labels) || !maps.Equal(before.Annotations, after.Annotations) ||
		!equality.Semantic.DeepEqual(before.Spec, after.Spec) || !equality.Semantic.DeepEqual(before.Status, after.Status) {
		return true
	}
	// A sync would write the record with nothing else changed (nodeRecord).
	return reportDue(s.mgr.Snapshot().Node(s.nodeID(after.Name)), s.opts.Now())
}

// podMoved tells a pod update that changes its node's numbers: it was
// bound, or what it holds or whose it is changed. Status updates, the
// bulk of a pod's events, do not.
func (s *Syncer) podMoved(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*corev1.Pod)
	after, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 || after.Spec.NodeName == "" {
		return false
	}
	if before.Spec.NodeName != after.Spec.NodeName || s.isWeft(before) != s.isWeft(after) {
		return true
	}
	bb, bm := s.opts.Profile.PodAmounts(before)
	ab, am := s.opts.Profile.PodAmounts(after)
	return bb != ab || bm != am
}
