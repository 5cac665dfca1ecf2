package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
)

func TestGangs(t *testing.T) {
	type want map[string]map[records.Tier]int
	tests := []struct {
		name  string
		nodes int // of 4 cpu, 16 GiB each
		jobs  []job
		want  want
	}{{
		name:  "a gang that does not fit places nothing, and does not block a smaller job behind it",
		nodes: 2,
		jobs: []job{
			{id: "big", queue: "root.a", high: 1, med: 4, each: res(2000, 1)}, // 10 cpu > 8
			{id: "small", queue: "root.a", high: 1, med: 2, each: res(2000, 1)},
		},
		want: want{"big": {}, "small": {records.TierHigh: 1, records.TierMedium: 2}},
	}, {
		name:  "higher priority goes first even if younger",
		nodes: 1,
		jobs: []job{
			{id: "old", queue: "root.a", high: 1, med: 1, each: res(2000, 1)},
			{id: "urgent", queue: "root.a", priority: 5, high: 1, med: 1, each: res(2000, 1)},
		},
		want: want{"old": {}, "urgent": {records.TierHigh: 1, records.TierMedium: 1}},
	}, {
		name:  "an incomplete gang waits for its missing members",
		nodes: 2,
		jobs:  []job{{id: "partial", queue: "root.a", minMembers: 4, high: 1, med: 2, low: 2, each: res(1000, 1)}},
		want:  want{"partial": {}},
	}, {
		name:  "elastic workers only after the minimum, minimums of all jobs first",
		nodes: 2,
		jobs: []job{
			{id: "j1", queue: "root.a", high: 1, med: 1, low: 6, each: res(1000, 1)},
			{id: "j2", queue: "root.a", high: 1, med: 2, low: 2, each: res(1000, 1)},
		},
		// 8 cpu: both minimums (5), then j1's elastic in age order (3).
		want: want{"j1": {records.TierHigh: 1, records.TierMedium: 1, records.TierLow: 3},
			"j2": {records.TierHigh: 1, records.TierMedium: 2}},
	}, {
		name:  "a job whose gang failed gets no elastic workers",
		nodes: 1,
		jobs:  []job{{id: "j", queue: "root.a", high: 1, med: 4, low: 2, each: res(1000, 1)}},
		want:  want{"j": {}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, quota.QueueQuota{Path: "root.a"})
			for i := range tc.nodes {
				h.node(fmt.Sprintf("n%d", i), res(4000, 16), quota.Resource{})
			}
			for _, j := range tc.jobs {
				h.submit(j)
			}
			h.cycle(New(Options{}))
			for app, w := range tc.want {
				got := h.placed(app)
				for _, tier := range []records.Tier{records.TierHigh, records.TierMedium, records.TierLow} {
					if got[tier] != w[tier] {
						t.Errorf("%s: %v tier placed %d, want %d", app, tier, got[tier], w[tier])
					}
				}
			}
		})
	}
}

func TestQueuesShareByDeficit(t *testing.T) {
	h := newHarness(t,
		quota.QueueQuota{Path: "root.a", Guaranteed: res(4000, 16)},
		quota.QueueQuota{Path: "root.b", Guaranteed: res(4000, 16)},
		quota.QueueQuota{Path: "root.c", Max: limit(1000, 4)})
	for i := range 4 {
		h.node(fmt.Sprintf("n%d", i), res(4000, 16), res(1000, 4)) // 12 cpu for Weft
	}
	// Each queue asks for far more than the cluster; a was first in line.
	h.submit(job{id: "a", queue: "root.a", high: 1, low: 30, each: res(500, 1)})
	h.submit(job{id: "b", queue: "root.b", high: 1, low: 30, each: res(500, 1)})
	h.submit(job{id: "c", queue: "root.c", high: 1, low: 30, each: res(500, 1)})
	h.cycle(New(Options{}))
	a, b, c := h.used("root.a"), h.used("root.b"), h.used("root.c")
	if c.MilliCPU != 1000 {
		t.Errorf("c used %v, want its max of 1000m", c)
	}
	if a.MilliCPU != 5500 || b.MilliCPU != 5500 {
		t.Errorf("a used %v, b used %v: want an even 5500m each", a, b)
	}
}

func TestNodeScoring(t *testing.T) {
	for _, tc := range []struct {
		scoring Scoring
		want    string
	}{{LeastAllocated, "empty"}, {MostAllocated, "busy"}} {
		h := newHarness(t, quota.QueueQuota{Path: "root.a"})
		h.node("busy", res(4000, 16), res(2000, 8))
		h.node("empty", res(4000, 16), quota.Resource{})
		h.submit(job{id: "j", queue: "root.a", high: 1, each: res(1000, 1)})
		plan, _ := h.cycle(New(Options{Scoring: tc.scoring}))
		if got := plan.Units[0].Placements[0].NodeID; got != tc.want {
			t.Errorf("%v: placed on %s, want %s", tc.scoring, got, tc.want)
		}
	}
}

func TestApplyPlanRejectsStale(t *testing.T) {
	tests := []struct {
		name   string
		change func(w *state.Txn) error
		reason string
	}{
		{"node cordoned", func(w *state.Txn) error {
			return w.UpsertNode(&objects.Node{ID: "n0", Allocatable: res(4000, 16), Cordoned: true})
		}, "node n0 cordoned"},
		{"online load grew", func(w *state.Txn) error {
			return w.UpsertNode(&objects.Node{ID: "n0", Allocatable: res(4000, 16), NonWeftUsed: res(3000, 0)})
		}, "no room"},
		{"request withdrawn", func(w *state.Txn) error { return w.RemoveRequest("j-medium-1") }, "no longer pending"},
		{"application gone", func(w *state.Txn) error { return w.DeleteApplication("j") }, "application gone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, quota.QueueQuota{Path: "root.a"})
			h.node("n0", res(4000, 16), quota.Resource{})
			h.submit(job{id: "j", queue: "root.a", high: 1, med: 2, each: res(1000, 1)})
			plan, err := New(Options{}).Schedule(context.Background(), h.store.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			h.update(tc.change)
			r, err := h.store.ApplyPlan(plan)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Applied) != 0 || len(r.Rejected) != 1 || !contains(r.Rejected[0].Reason, tc.reason) {
				t.Fatalf("applied %d, rejected %+v; want the gang rejected for %q", len(r.Applied), r.Rejected, tc.reason)
			}
			if n := len(h.store.Snapshot().AllocationsOfApp("j")); n != 0 {
				t.Fatalf("%d members of a rejected gang allocated", n)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestMaxNeverExceeded submits random jobs to 10 queues under two parents
// with maxes, completes random pods between cycles, and after every cycle
// checks that no queue or parent is above its max, no node is overcommitted,
// and every job's gang is either running in full or not at all.
func TestMaxNeverExceeded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	quotas := []quota.QueueQuota{
		{Path: "root.prod", Guaranteed: res(200_000, 800), Max: limit(300_000, 1200)},
		{Path: "root.adhoc", Max: limit(150_000, 600)},
	}
	var leaves []string
	for i := range 10 {
		parent := "root.prod"
		if i >= 6 {
			parent = "root.adhoc"
		}
		q := quota.QueueQuota{Path: fmt.Sprintf("%s.q%d", parent, i), Weight: float64(1 + i%3)}
		if parent == "root.prod" {
			q.Guaranteed = res(30_000, 120)
		}
		if i%2 == 0 {
			q.Max = limit(int64(40_000+rng.IntN(60_000)), int64(160+rng.IntN(240)))
		}
		quotas = append(quotas, q)
		leaves = append(leaves, q.Path)
	}
	h := newHarness(t, quotas...)
	for i := range 40 {
		h.node(fmt.Sprintf("n%02d", i), res(16_000, 64), res(int64(rng.IntN(4))*1000, int64(rng.IntN(8))))
	}
	hier := h.store.Hierarchy()
	s := New(Options{NodesToScore: 8})
	jobs := map[string]job{}
	submitted, atMax := 0, 0
	for cycle := range 60 {
		for range 1 + rng.IntN(25) {
			submitted++
			j := job{id: fmt.Sprintf("j%d", submitted), queue: leaves[rng.IntN(len(leaves))], priority: int32(rng.IntN(3)),
				high: 1, med: rng.IntN(6), low: rng.IntN(10), each: res(int64(250*(1+rng.IntN(8))), int64(1+rng.IntN(4)))}
			if rng.IntN(3) == 0 {
				j.minMembers = 1 + j.med + rng.IntN(2) // sometimes not all submitted
			}
			jobs[j.id] = j
			h.submit(j)
		}
		h.cycle(s)
		snap := h.store.Snapshot()
		for _, p := range hier.Paths() {
			q, _ := hier.Quota(p)
			used := snap.QueueUsage(p).Used
			if !used.FitsLimit(q.Max) {
				t.Fatalf("cycle %d: %s uses %v, above max %v", cycle, p, used, *q.Max)
			}
			if q.Max != nil && used.Add(res(2000, 4)).FitsLimit(q.Max) == false {
				atMax++ // the invariant was actually under pressure
			}
		}
		for _, n := range snap.Nodes() {
			var sum quota.Resource
			for _, a := range snap.AllocationsOnNode(n.ID) {
				sum.AddInPlace(a.Resource)
			}
			if !sum.Equal(n.Allocated) || !n.Allocated.Add(n.NonWeftUsed).Fits(n.Allocatable) {
				t.Fatalf("cycle %d: node %s allocated %v (sum %v) non-weft %v of %v", cycle, n.ID, n.Allocated, sum,
					n.NonWeftUsed, n.Allocatable)
			}
		}
		for id, j := range jobs {
			got := h.placed(id)
			gang := got[records.TierHigh] + got[records.TierMedium]
			if gang != 0 && gang < max(j.minMembers, 1+j.med) && len(snap.RequestsOfApp(id)) > 0 {
				t.Fatalf("cycle %d: job %s runs a partial gang %d of %d", cycle, id, gang, 1+j.med)
			}
			if gang == 0 && got[records.TierLow] > 0 {
				t.Fatalf("cycle %d: job %s has elastic workers without its gang", cycle, id)
			}
		}
		if cycle == 59 && atMax == 0 {
			t.Fatal("no queue ever came near its max: the test exercises nothing")
		}
		// Churn: some pods finish, some whole jobs finish.
		h.update(func(w *state.Txn) error {
			for _, a := range w.Allocations() {
				if a.Tier == records.TierLow && rng.IntN(5) == 0 {
					if err := w.ReleaseAllocation(a.ID); err != nil {
						return err
					}
				}
			}
			for id := range jobs {
				if rng.IntN(15) == 0 {
					delete(jobs, id)
					if err := w.DeleteApplication(id); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
}

// A leaf's user limit caps what one user's applications hold, those
// already running included, at a percent of what the queue may hold;
// other users take the rest.
func TestUserLimit(t *testing.T) {
	h := newHarness(t, quota.QueueQuota{Path: "root.a", UserLimitPercent: 50})
	h.node("n0", res(4000, 16), quota.Resource{})
	h.node("n1", res(4000, 16), quota.Resource{})
	s := New(Options{})
	h.submit(job{id: "alice-1", queue: "root.a", user: "alice", high: 1, med: 1, low: 4, each: res(1000, 1)})
	h.submit(job{id: "bob-1", queue: "root.a", user: "bob", high: 1, low: 5, each: res(1000, 1)})
	h.cycle(s)
	if a, b := h.count("alice-1"), h.count("bob-1"); a != 4 || b != 4 {
		t.Fatalf("alice holds %d cpus, bob %d; want 4 each (half of 8)", a, b)
	}
	// A third node raises the limit to 6: alice's jobs get the 2 she may
	// still take, counting what her first job holds, and bob his 2.
	h.node("n2", res(4000, 16), quota.Resource{})
	h.submit(job{id: "alice-2", queue: "root.a", user: "alice", high: 1, low: 3, each: res(1000, 1)})
	h.cycle(s)
	if a, b := h.count("alice-1")+h.count("alice-2"), h.count("bob-1"); a != 6 || b != 6 {
		t.Fatalf("alice holds %d, bob %d; want 6 each (half of 12)", a, b)
	}
	if h.count("alice-2") == 0 {
		t.Fatal("alice's second job's AM was not placed")
	}
}

// Quota held for a job's declared maximum is left to it: a job arriving
// later in the same queue gets only what is neither used nor held, and the
// first job then grows into its headroom though the queue is near its max.
func TestDeclaredMaximumHoldsQuota(t *testing.T) {
	h := newHarness(t, quota.QueueQuota{Path: "root.a", Max: limit(8000, 64)})
	h.node("n0", res(8000, 32), quota.Resource{})
	h.node("n1", res(8000, 32), quota.Resource{})
	s := New(Options{})
	// Declared 6 workers of 1 cpu, 2 placed: 4 cpu held.
	h.submit(job{id: "x", queue: "root.a", high: 1, med: 1, each: res(1000, 1), reserve: res(4000, 4)})
	h.cycle(s)
	h.submit(job{id: "y", queue: "root.a", high: 1, low: 5, each: res(1000, 1)})
	h.cycle(s)
	if got := h.count("y"); got != 2 {
		t.Fatalf("y got %d cpus of the 8-cpu queue beside x's 2 used and 4 held, want 2", got)
	}
	// x scales up to its maximum: the held quota is there for it.
	h.update(func(w *state.Txn) error {
		for i := range 4 {
			if err := w.AddRequest(&objects.Request{ID: fmt.Sprintf("x-more-%d", i), AppID: "x", Tier: records.TierLow, Resource: res(1000, 1)}); err != nil {
				return err
			}
		}
		return nil
	})
	h.cycle(s)
	if got := h.count("x"); got != 6 {
		t.Fatalf("x holds %d cpus after scaling, want its declared 6", got)
	}
}

// TestNodesToScore checks the search bound against kube-scheduler's
// numFeasibleNodesToFind for the same settings.
func TestNodesToScore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		nodes int
		want  int
	}{
		{"unbounded by default", Options{}, 10_000, 0},
		{"a fixed bound wins", Options{NodesToScore: 8, PercentageOfNodesToScore: 50}, 10_000, 8},
		{"percentage", Options{PercentageOfNodesToScore: 10}, 5_000, 500},
		{"percentage never below 100 nodes", Options{PercentageOfNodesToScore: 10}, 500, 100},
		{"100% is every node", Options{PercentageOfNodesToScore: 100}, 10_000, 0},
		{"a small cluster is searched whole", Options{PercentageOfNodesToScore: AdaptivePercentage}, 99, 0},
		{"adaptive at 1,000 nodes: 42%", Options{PercentageOfNodesToScore: AdaptivePercentage}, 1_000, 420},
		{"adaptive at 5,000 nodes: 10%", Options{PercentageOfNodesToScore: AdaptivePercentage}, 5_000, 500},
		{"adaptive at 10,000 nodes: the 5% floor", Options{PercentageOfNodesToScore: AdaptivePercentage}, 10_000, 500},
		{"adaptive at 150 nodes: 49%, raised to 100", Options{PercentageOfNodesToScore: AdaptivePercentage}, 150, 100},
	} {
		if got := tc.opts.nodesToScore(tc.nodes); got != tc.want {
			t.Errorf("%s: nodesToScore(%d) = %d, want %d", tc.name, tc.nodes, got, tc.want)
		}
	}
}

// TestAdaptiveSearchStillPlacesEveryPod: with the search bounded a cycle
// over a cluster larger than the bound places as many pods as scoring
// every node does, on nodes that had room.
func TestAdaptiveSearchStillPlacesEveryPod(t *testing.T) {
	placed := map[int]int{}
	for _, pct := range []int{0, AdaptivePercentage} {
		h := newHarness(t, quota.QueueQuota{Path: "root.a"})
		for i := range 3000 {
			h.node(fmt.Sprintf("n%04d", i), res(4_000, 16), res(int64(i%4)*1000, 0))
		}
		for i := range 50 {
			h.submit(job{id: fmt.Sprintf("j%d", i), queue: "root.a", high: 1, med: 3, low: 20, each: res(1000, 1)})
		}
		h.cycle(New(Options{PercentageOfNodesToScore: pct}))
		for i := range 50 {
			for _, n := range h.placed(fmt.Sprintf("j%d", i)) {
				placed[pct] += n
			}
		}
	}
	if placed[0] != 50*24 || placed[AdaptivePercentage] != placed[0] {
		t.Fatalf("placed %d scoring every node, %d with the adaptive bound; want %d each", placed[0], placed[AdaptivePercentage], 50*24)
	}
}

// One Scheduler's cycles start from what it derived of the last cycle's
// nodes (nodeMemo): each cycle must still see every node as its own
// snapshot holds it — not as the last cycle left its working copy, and
// not as a node was before the store replaced, cordoned or removed it.
func TestCyclesSeeEachSnapshotsNodes(t *testing.T) {
	gpu := func(r quota.Resource, n int64) quota.Resource { r.SetInPlace("nvidia.com/gpu", n); return r }
	h := newHarness(t, quota.QueueQuota{Path: "root.a"})
	h.node("a-gpu", gpu(res(4000, 16), 1), quota.Resource{})
	h.node("b-cpu", res(4000, 16), res(3000, 0))
	h.submit(job{id: "j", queue: "root.a", low: 1, each: gpu(res(1000, 1), 1)})
	s := New(Options{})
	placedOn := func(snap *state.Snapshot) []string {
		t.Helper()
		plan, err := s.Schedule(context.Background(), snap)
		if err != nil {
			t.Fatal(err)
		}
		var nodes []string
		for _, u := range plan.Units {
			for _, p := range u.Placements {
				nodes = append(nodes, p.NodeID)
			}
		}
		return nodes
	}
	first := h.store.Snapshot()
	// The same snapshot twice: the first cycle's placement took the
	// GPU from its working copy of a-gpu only.
	for i := range 2 {
		if got := placedOn(first); !slices.Equal(got, []string{"a-gpu"}) {
			t.Fatalf("cycle %d over the first snapshot placed on %v, want [a-gpu]", i+1, got)
		}
	}
	// The GPU node cordoned: nowhere to go.
	h.update(func(w *state.Txn) error {
		return w.UpsertNode(&objects.Node{ID: "a-gpu", Allocatable: gpu(res(4000, 16), 1), Cordoned: true})
	})
	if got := placedOn(h.store.Snapshot()); len(got) != 0 {
		t.Fatalf("placed on %v with the GPU node cordoned, want nowhere", got)
	}
	// A CPU job fits only where the others left room: b-cpu's online
	// load gone, and a-gpu removed (the nodes after it shift).
	h.submit(job{id: "k", queue: "root.a", low: 1, each: res(2000, 1)})
	h.update(func(w *state.Txn) error {
		if err := w.DeleteNode("a-gpu"); err != nil {
			return err
		}
		return w.UpsertNode(&objects.Node{ID: "b-cpu", Allocatable: res(4000, 16)})
	})
	if got := placedOn(h.store.Snapshot()); !slices.Equal(got, []string{"b-cpu"}) {
		t.Fatalf("placed on %v after a-gpu went and b-cpu emptied, want [b-cpu]", got)
	}
	// And the first snapshot, still held, is still what it was.
	if got := placedOn(first); !slices.Equal(got, []string{"a-gpu"}) {
		t.Fatalf("the first snapshot again placed on %v, want [a-gpu]", got)
	}
}
