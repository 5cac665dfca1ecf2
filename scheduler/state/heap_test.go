package state

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// newStore returns an empty store for root and leaves without quotas.
func newStore(tb testing.TB, leaves ...string) *Store {
	tb.Helper()
	quotas := []quota.QueueQuota{{Path: "root"}}
	for _, l := range leaves {
		quotas = append(quotas, quota.QueueQuota{Path: l})
	}
	h, err := quota.NewHierarchy(quotas)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(h)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkHeld measures the heap a store holds per object at a large
// cluster's size (10,000 nodes, 1,000 applications in 20 queues, 100,000
// running containers or pending asks), the figure behind weft-rm's RSS:
// the objects, their ids and every index entry over them. Run it with
// -benchtime 1x; B/allocation and B/request are what it reports.
func BenchmarkHeld(b *testing.B) {
	const nodes, apps, perApp, queues = 10_000, 1000, 100, 20
	build := func(b *testing.B) *Store {
		var leaves []string
		for i := range queues {
			leaves = append(leaves, fmt.Sprintf("root.q%d", i))
		}
		s := newStore(b, leaves...)
		err := s.Update(func(w *Txn) error {
			for i := range nodes {
				err := w.UpsertNode(&objects.Node{ID: fmt.Sprintf("node-%05d", i),
					Allocatable: quota.Resource{MilliCPU: 32_000, Memory: 128 << 30}})
				if err != nil {
					return err
				}
			}
			for j := range apps {
				err := w.UpsertApplication(&objects.Application{ID: fmt.Sprintf("app-%05d", j),
					Queue: fmt.Sprintf("root.q%d", j%queues), MinMembers: 5})
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	tier := func(k int) records.Tier {
		switch {
		case k == 0:
			return records.TierHigh
		case k < 5:
			return records.TierMedium
		}
		return records.TierLow
	}
	r := quota.Resource{MilliCPU: 1000, Memory: 2 << 30}
	measure := func(b *testing.B, unit string, add func(w *Txn, app string, k, i int) error) {
		for b.Loop() {
			s := build(b)
			before := heapInUse()
			// One transaction per application, as containers come and go
			// in batches rather than all at once.
			for j := range apps {
				app := fmt.Sprintf("app-%05d", j)
				err := s.Update(func(w *Txn) error {
					for k := range perApp {
						if err := add(w, app, k, j*perApp+k); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			after := heapInUse()
			if n := len(s.Snapshot().AllocationsOfApp("app-00000")) + len(s.Snapshot().RequestsOfApp("app-00000")); n != perApp {
				b.Fatalf("app-00000 has %d objects, want %d", n, perApp)
			}
			b.ReportMetric(float64(after-before)/(apps*perApp), "B/"+unit)
			runtime.KeepAlive(s)
		}
	}
	b.Run("allocations", func(b *testing.B) {
		measure(b, "allocation", func(w *Txn, app string, k, i int) error {
			return w.AddAllocation(&objects.Allocation{ID: fmt.Sprintf("%s-%d", app, k), AppID: app,
				NodeID: fmt.Sprintf("node-%05d", i%nodes), Tier: tier(k), Resource: r})
		})
	})
	b.Run("requests", func(b *testing.B) {
		measure(b, "request", func(w *Txn, app string, k, _ int) error {
			return w.AddRequest(&objects.Request{ID: fmt.Sprintf("%s-%d", app, k), AppID: app, Tier: tier(k), Resource: r})
		})
	})
}
