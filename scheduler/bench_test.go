package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
)

// benchStore builds the benchmark cluster: 5,000 nodes of 32 reclaimable
// cores and 128 GiB with some online (non-Weft) load, and 50,000 pending
// pods in 5,000 jobs of 10 (1 AM, 4 minimum workers, 5 elastic) spread over
// 10 queues with guarantees and maxes, two of which cap their queues.
func benchStore(b *testing.B) *state.Store {
	b.Helper()
	quotas := []quota.QueueQuota{{Path: "root"}}
	for i := range 10 {
		q := quota.QueueQuota{Path: fmt.Sprintf("root.q%d", i), Guaranteed: res(8_000_000, 32_000), Weight: float64(1 + i%3)}
		if i < 2 {
			q.Guaranteed = res(2_000_000, 8_000)
			q.Max = limit(3_000_000, 12_000) // room for 3,000 of these queues' 5,000 pods
		}
		quotas = append(quotas, q)
	}
	h, err := quota.NewHierarchy(quotas)
	if err != nil {
		b.Fatal(err)
	}
	s, err := state.New(h)
	if err != nil {
		b.Fatal(err)
	}
	err = s.Update(func(w *state.Txn) error {
		for i := range 5000 {
			if err := w.UpsertNode(&objects.Node{ID: fmt.Sprintf("node-%05d", i), Allocatable: res(32_000, 128),
				NonWeftUsed: res(int64(i%8)*1000, int64(i%8)*4)}); err != nil {
				return err
			}
		}
		for j := range 5000 {
			app := fmt.Sprintf("app-%05d", j)
			if err := w.UpsertApplication(&objects.Application{ID: app, Queue: fmt.Sprintf("root.q%d", j%10),
				Priority: int32(j % 3), Submitted: time.Unix(int64(j), 0), MinMembers: 5}); err != nil {
				return err
			}
			for k := range 10 {
				tier := records.TierLow
				switch {
				case k == 0:
					tier = records.TierHigh
				case k < 5:
					tier = records.TierMedium
				}
				if err := w.AddRequest(&objects.Request{ID: fmt.Sprintf("%s-%d", app, k), AppID: app, Tier: tier,
					Resource: res(1000, 2)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkSchedule measures one full cycle over the 50,000 pending pods:
// Schedule only, then Schedule plus ApplyPlan on a fresh store each time.
// decisions/s counts pods placed per second of measured time.
func BenchmarkSchedule(b *testing.B) {
	for _, nodes := range []int{0, 100} {
		name := "score=all"
		if nodes > 0 {
			name = fmt.Sprintf("score=%d", nodes)
		}
		b.Run(name+"/cycle", func(b *testing.B) {
			s := benchStore(b)
			snap := s.Snapshot()
			placed := 0
			b.ResetTimer()
			for b.Loop() {
				plan, err := New(Options{NodesToScore: nodes}).Schedule(context.Background(), snap)
				if err != nil {
					b.Fatal(err)
				}
				for _, u := range plan.Units {
					placed += len(u.Placements)
				}
			}
			b.ReportMetric(float64(placed)/b.Elapsed().Seconds(), "decisions/s")
			b.ReportMetric(float64(placed)/float64(b.N), "pods/cycle")
		})
		b.Run(name+"/cycle+apply", func(b *testing.B) {
			placed := 0
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s := benchStore(b)
				b.StartTimer()
				start := time.Now()
				plan, err := New(Options{NodesToScore: nodes}).Schedule(context.Background(), s.Snapshot())
				if err != nil {
					b.Fatal(err)
				}
				r, err := s.ApplyPlan(plan)
				if err != nil || len(r.Rejected) > 0 {
					b.Fatalf("%v, %d rejected", err, len(r.Rejected))
				}
				elapsed += time.Since(start)
				placed += r.Placed()
			}
			b.ReportMetric(float64(placed)/elapsed.Seconds(), "decisions/s")
			b.ReportMetric(float64(placed)/float64(b.N), "pods/cycle")
		})
	}
}
