package nodesync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
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
// goes stale on its own (a cooldown's end, an agent's heartbeat ageing).
func (s *Syncer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !kubeclient.WaitForSync(ctx, s.synced()...) {
		return reconcile.Result{}, fmt.Errorf("nodes and pods not listed: %w", ctx.Err())
	}
	after, err := s.syncNode(req.Name)
	return reconcile.Result{RequeueAfter: after}, err
}

// SetupWithManager runs the Syncer under mgr, fed by its own informers
// (Run runs them): a node is reconciled when its Node, its CNR or a pod
// bound to it changes in a way that moves its numbers.
func (s *Syncer) SetupWithManager(mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named("nodes").
		WatchesRawSource(&source.Informer{Informer: s.nodeInformer, Handler: &handler.EnqueueRequestForObject{}}).
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
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p.Spec.NodeName}}}
	}
	return nil
}

// podEvents enqueues the node of a pod that moves the node's numbers. A
// change in what others' pods hold there is read at once: the allocator's
// capacity is the node's less theirs. A change of Weft's own pods waits up
// to ownPodDelay, as YARN's RM learns of a node's containers at its
// NodeManager's next heartbeat: the allocator accounts for Weft's pods from
// the pods themselves, the record's Used only shows them (yarn node -list,
// the AMs' headroom), and a burst of bindings then writes a node once, not
// once a pod (test/bench/binding: 5,000 such writes were a seventh of
// weft-rm's CPU while it bound 5,000 pods).
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
		for _, r := range reqs {
			if own && s.ownPodDelay() > 0 {
				q.AddAfter(r, s.ownPodDelay())
			} else {
				q.Add(r)
			}
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
