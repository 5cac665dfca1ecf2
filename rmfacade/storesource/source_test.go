package storesource

import (
	"context"
	"slices"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

func app(seq int32, st records.AppState) *records.Application {
	return &records.Application{ID: records.ApplicationID{ClusterTimestamp: 1700000000000, ID: seq}, State: st, Queue: "default", User: "alice", Type: "YARN"}
}

// A started source queues the requests of what the store held, then
// those of each change.
func TestSource(t *testing.T) {
	st, err := state.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	put := func(a *records.Application) {
		t.Helper()
		if err := st.Update(func(w *state.WriteTxn) error { return w.PutApplication(a) }); err != nil {
			t.Fatal(err)
		}
	}
	put(app(1, records.AppRunning))
	src := New(st, Options{
		Initial: func(snap *state.Snapshot) []reconcile.Request {
			var out []reconcile.Request
			for _, a := range snap.Applications(state.ApplicationFilter{}) {
				out = append(out, Request(a.ID))
			}
			return out
		},
		Changed: func(_ *state.Snapshot, c state.Change) []reconcile.Request {
			if a, ok := c.After.(*records.Application); ok && a.State == records.AppKilled {
				return []reconcile.Request{Request(a.ID)}
			}
			return nil
		},
	})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	put(app(2, records.AppRunning)) // no request: Changed wants only kills
	put(app(3, records.AppKilled))
	var got []string
	for q.Len() > 0 {
		r, _ := q.Get()
		got = append(got, r.Name)
		q.Done(r)
	}
	want := []string{app(1, "").ID.String(), app(3, "").ID.String()}
	if !slices.Equal(got, want) {
		t.Fatalf("requests %v, want %v", got, want)
	}
}
