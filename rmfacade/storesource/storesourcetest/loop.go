// Package storesourcetest drives a reconciler in a test as its controller
// would, without an API server: requests from its sources go through a
// workqueue and are reconciled one by one until none is left.
package storesourcetest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Loop is a reconciler's workqueue, fed by its sources and by the test.
type Loop struct {
	t *testing.T
	q workqueue.TypedRateLimitingInterface[reconcile.Request]
	r reconcile.Reconciler
	// Last is each request's last result.
	Last map[reconcile.Request]reconcile.Result
	seen map[reconcile.Request]bool // requests of pods that were
}

// Start starts sources (a storesource, say) into a new queue for r; they
// stop with the test.
func Start(t *testing.T, r reconcile.Reconciler, sources ...source.Source) *Loop {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); q.ShutDown() })
	for _, s := range sources {
		if err := s.Start(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return &Loop{t: t, q: q, r: r, Last: map[reconcile.Request]reconcile.Result{}, seen: map[reconcile.Request]bool{}}
}

// Add queues requests, as a watch event's handler would.
func (l *Loop) Add(reqs ...reconcile.Request) {
	for _, r := range reqs {
		l.q.Add(r)
	}
}

// Drain reconciles until the queue is empty, failing the test on an
// error; requests reconciling adds (through the sources) are reconciled
// too. RequeueAfter is recorded in Last, not waited for: the test moves
// its clock and adds the request again.
func (l *Loop) Drain() {
	l.t.Helper()
	for n := 0; l.q.Len() > 0; n++ {
		if n > 10000 {
			l.t.Fatal("the queue never drains: a reconcile keeps requeueing")
		}
		req, _ := l.q.Get()
		res, err := l.r.Reconcile(context.Background(), req)
		l.q.Done(req)
		if err != nil {
			l.t.Fatalf("reconcile %s: %v", req.Name, err)
		}
		l.Last[req] = res
	}
}

// SettlePods tells the reconciler of every pod in c that is or was, as a
// watch of pods mapped to requests by podRequests would tell it of the
// ones that changed, and drains the queue until the pods stop changing.
func (l *Loop) SettlePods(c client.Reader, podRequests func(context.Context, client.Object) []reconcile.Request) {
	l.t.Helper()
	ctx := context.Background()
	pods := func() string {
		var list corev1.PodList
		if err := c.List(ctx, &list); err != nil {
			l.t.Fatal(err)
		}
		out := ""
		for i := range list.Items {
			for _, r := range podRequests(ctx, &list.Items[i]) {
				l.seen[r] = true
			}
			out += list.Items[i].Name + "@" + list.Items[i].ResourceVersion + " "
		}
		return out
	}
	before := pods()
	for range 10 {
		for r := range l.seen {
			l.q.Add(r)
		}
		l.Drain()
		after := pods()
		if after == before {
			return
		}
		before = after
	}
	l.t.Fatal("the pods never settle")
}
