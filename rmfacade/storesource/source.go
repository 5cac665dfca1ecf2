// Package storesource feeds controller-runtime controllers from the RM's
// state store: the records the RM writes (applications, attempts,
// containers) wake the controllers that act on them, as watch events on
// Kubernetes objects wake a controller, instead of a periodic full read
// of the store.
package storesource

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/weft-sh/weft/rmfacade/state"
)

// Store is what a source follows: the RM's Manager, or the store itself.
type Store interface {
	Subscribe(func(*state.Snapshot, []state.Change)) (cancel func())
	Snapshot() *state.Snapshot
}

// Options says which requests a store's records make for one controller.
type Options struct {
	// Initial are the requests for what the store holds when the
	// controller starts: a restarted RM's records, recovered, made no
	// change a subscriber could see.
	Initial func(*state.Snapshot) []reconcile.Request
	// Changed are the requests one committed change makes, given the
	// store as that write left it.
	Changed func(*state.Snapshot, state.Change) []reconcile.Request
}

// New returns a source that, once its controller starts it, enqueues the
// Initial requests and then those of every change committed after. It
// subscribes before it reads, so no change falls between the two; a
// request made twice is queued once (the workqueue deduplicates), and the
// reconcilers read the records afresh, so being told twice is harmless.
// The subscription ends with the controller's context.
func New(store Store, opts Options) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		cancel := store.Subscribe(func(snap *state.Snapshot, changes []state.Change) {
			if opts.Changed == nil {
				return
			}
			for _, c := range changes {
				for _, r := range opts.Changed(snap, c) {
					q.Add(r)
				}
			}
		})
		context.AfterFunc(ctx, cancel)
		if opts.Initial != nil {
			for _, r := range opts.Initial(store.Snapshot()) {
				q.Add(r)
			}
		}
		return nil
	})
}

// Request names a record for a reconciler: its id's string.
func Request(id interface{ String() string }) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: id.String()}}
}

// RetryRateLimiter is how the controllers this package feeds (AM pods,
// container pods, Queues) retry a request that failed: from 100ms,
// doubling, up to 30s — a failed pod creation or deletion is tried again
// within the seconds YARN users expect, never after the default
// limiter's quarter of an hour.
func RetryRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, 30*time.Second)
}
