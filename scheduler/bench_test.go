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

// benchSize is a benchmark cluster's shape: nodes of 32 reclaimable cores
// and 128 GiB with some online (non-Weft) load, and jobs of 1 AM, 4
// minimum workers and the rest elastic workers, of 1 core and 2 GiB each,
// spread over queues with guarantees and maxes, two of which cap theirs.
type benchSize struct {
	name                  string
	nodes, jobs, perJob   int
	queues                int
	guaranteed, cappedMax quota.Resource
}

var (
	// bench5k is many small jobs: 5,000 nodes and 50,000 pending pods in
	// 5,000 jobs of 10 over 10 queues.
	bench5k = benchSize{name: "5k", nodes: 5000, jobs: 5000, perJob: 10, queues: 10,
		guaranteed: res(8_000_000, 32_000), cappedMax: res(3_000_000, 12_000)} // room for 3,000 of the capped queues' 5,000 pods together
	// bench10k is a large cluster's size, test/bench/scale's: 10,000 nodes
	// and 100,000 pending pods in 1,000 jobs of 100 over 20 queues.
	bench10k = benchSize{name: "10k", nodes: 10_000, jobs: 1000, perJob: 100, queues: 20,
		guaranteed: res(8_000_000, 32_000), cappedMax: res(3_000_000, 12_000)} // room for 3,000 of the capped queues' 5,000 pods each
)

// benchStore builds the benchmark cluster of size z.
func benchStore(b *testing.B, z benchSize) *state.Store {
	b.Helper()
	quotas := []quota.QueueQuota{{Path: "root"}}
	for i := range z.queues {
		q := quota.QueueQuota{Path: fmt.Sprintf("root.q%d", i), Guaranteed: z.guaranteed, Weight: float64(1 + i%3)}
		if i < 2 {
			q.Guaranteed = res(2_000_000, 8_000)
			m := z.cappedMax
			q.Max = &m
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
		for i := range z.nodes {
			if err := w.UpsertNode(&objects.Node{ID: fmt.Sprintf("node-%05d", i), Allocatable: res(32_000, 128),
				NonWeftUsed: res(int64(i%8)*1000, int64(i%8)*4)}); err != nil {
				return err
			}
		}
		for j := range z.jobs {
			app := fmt.Sprintf("app-%05d", j)
			if err := w.UpsertApplication(&objects.Application{ID: app, Queue: fmt.Sprintf("root.q%d", j%z.queues),
				Priority: int32(j % 3), Submitted: time.Unix(int64(j), 0), MinMembers: 5}); err != nil {
				return err
			}
			for k := range z.perJob {
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

// BenchmarkSchedule measures one full cycle over every pending pod of a
// benchmark cluster: Schedule only, then Schedule plus ApplyPlan on a fresh
// store each time. decisions/s counts pods placed per second of measured
// time; apply-ms is ApplyPlan's share of a cycle+apply. The 10k size is
// measured with the bounded node search only: scoring all 10,000 nodes
// for each of 100,000 pods is not a configuration anyone runs.
func BenchmarkSchedule(b *testing.B) {
	for _, z := range []benchSize{bench5k, bench10k} {
		for _, nodes := range []int{0, 100} {
			if nodes == 0 && z.nodes > 5000 {
				continue
			}
			name := z.name + "/score=all"
			if nodes > 0 {
				name = fmt.Sprintf("%s/score=%d", z.name, nodes)
			}
			b.Run(name+"/cycle", func(b *testing.B) { benchCycle(b, z, nodes) })
			b.Run(name+"/cycle+apply", func(b *testing.B) { benchCycleApply(b, z, nodes) })
		}
	}
}

func benchCycle(b *testing.B, z benchSize, nodes int) {
	s := benchStore(b, z)
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
}

func benchCycleApply(b *testing.B, z benchSize, nodes int) {
	placed := 0
	var elapsed, applying time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := benchStore(b, z)
		b.StartTimer()
		start := time.Now()
		plan, err := New(Options{NodesToScore: nodes}).Schedule(context.Background(), s.Snapshot())
		if err != nil {
			b.Fatal(err)
		}
		scheduled := time.Now()
		r, err := s.ApplyPlan(plan)
		if err != nil || len(r.Rejected) > 0 {
			b.Fatalf("%v, %d rejected", err, len(r.Rejected))
		}
		elapsed += time.Since(start)
		applying += time.Since(scheduled)
		placed += r.Placed()
	}
	b.ReportMetric(float64(placed)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(placed)/float64(b.N), "pods/cycle")
	b.ReportMetric(float64(applying.Milliseconds())/float64(b.N), "apply-ms")
}

// BenchmarkScheduleOneAsk is a cycle over a large cluster in which one
// request waits, as most cycles of a running cluster are (an AM asking for
// one more container, a pod created): what a cycle costs whatever it
// places, by the cluster's nodes, with the node search bounded as weft-rm
// bounds it (AdaptivePercentage).
//
//	go test ./scheduler -run '^$' -bench ScheduleOneAsk
func BenchmarkScheduleOneAsk(b *testing.B) {
	for _, nodes := range []int{1000, 10_000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			h := newHarness(b, quota.QueueQuota{Path: "root.q"})
			for i := range nodes {
				h.node(fmt.Sprintf("node-%05d", i), res(32_000, 128), res(int64(i%8)*1000, int64(i%8)*4))
			}
			h.submit(job{id: "app", queue: "root.q", low: 1, each: res(1000, 2)})
			snap := h.store.Snapshot()
			sched := New(Options{PercentageOfNodesToScore: AdaptivePercentage})
			for b.Loop() {
				plan, err := sched.Schedule(context.Background(), snap)
				if err != nil {
					b.Fatal(err)
				}
				if len(plan.Units) != 1 {
					b.Fatalf("placed %d units, want 1", len(plan.Units))
				}
			}
		})
	}
}
