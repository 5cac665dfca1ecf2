package scheduler

import (
	"context"
	"slices"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
)

// TestPreemptionOrder fills the cluster with a borrowing queue, then lets a
// queue with an unused guarantee ask for room, and checks which pods are
// named as victims.
func TestPreemptionOrder(t *testing.T) {
	tests := []struct {
		name string
		// The borrower's jobs, placed first on an empty cluster.
		borrower []job
		need     job
		// wantTiers are the victims' tiers, sorted; wantNodes (if set) the
		// nodes they are on.
		wantTiers []records.Tier
		wantNodes []string
	}{{
		name:      "low tier before medium, never high",
		borrower:  []job{{id: "b1", queue: "root.borrow", high: 1, med: 3, low: 4, each: res(1000, 1)}},
		need:      job{id: "g", queue: "root.guar", high: 1, med: 1, each: res(1000, 1)},
		wantTiers: []records.Tier{records.TierLow, records.TierLow},
	}, {
		name:      "medium only when low is not enough; high never",
		borrower:  []job{{id: "b1", queue: "root.borrow", high: 2, med: 6, each: res(1000, 1)}},
		need:      job{id: "g", queue: "root.guar", high: 1, each: res(1000, 1)},
		wantTiers: []records.Tier{records.TierMedium},
	}, {
		name:     "nothing to take without touching high tier",
		borrower: []job{{id: "b1", queue: "root.borrow", high: 8, each: res(1000, 1)}},
		need:     job{id: "g", queue: "root.guar", high: 1, each: res(1000, 1)},
	}, {
		name:     "not entitled beyond the guarantee",
		borrower: []job{{id: "b1", queue: "root.borrow", high: 1, low: 7, each: res(1000, 1)}},
		need:     job{id: "g", queue: "root.guar", high: 1, med: 4, each: res(1000, 1)}, // 5 > 4 guaranteed
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t,
				quota.QueueQuota{Path: "root.guar", Guaranteed: res(4000, 16)},
				quota.QueueQuota{Path: "root.borrow"})
			h.node("n0", res(4000, 16), quota.Resource{})
			h.node("n1", res(4000, 16), quota.Resource{})
			s := New(Options{Scoring: MostAllocated})
			for _, j := range tc.borrower {
				h.submit(j)
			}
			h.cycle(s)
			h.submit(tc.need)
			plan, r := h.cycle(s)
			if len(plan.Units) != 0 {
				t.Fatalf("placed %+v on a full cluster", plan.Units)
			}
			var tiers []records.Tier
			nodes := map[string]bool{}
			for _, p := range r.Preempted {
				tiers = append(tiers, p.Tier)
				nodes[p.NodeID] = true
				if p.VictimQueue != "root.borrow" || p.ForQueue != "root.guar" {
					t.Errorf("victim %+v", p)
				}
			}
			slices.Sort(tiers)
			if !slices.Equal(tiers, tc.wantTiers) {
				t.Fatalf("victim tiers %v, want %v (plan %+v)", tiers, tc.wantTiers, plan.Preemptions)
			}
			if len(tiers) == 0 {
				return
			}
			// A second cycle must not pick more victims for the same need.
			plan2, err := s.Schedule(context.Background(), h.store.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			if len(plan2.Preemptions) != 0 {
				t.Fatalf("second cycle picked more victims: %+v", plan2.Preemptions)
			}
			// Nor a store rebuilt from the records, as a shim rebuilds its
			// view (the victims come back as preempting allocations).
			if plan3, err := s.Schedule(context.Background(), h.rebuilt().store.Snapshot()); err != nil {
				t.Fatal(err)
			} else if len(plan3.Preemptions) != 0 {
				t.Fatalf("a rebuilt store picked more victims: %+v", plan3.Preemptions)
			}
			// Once the victims exit, the waiting job is placed.
			for _, p := range r.Preempted {
				h.update(func(w *state.Txn) error { return w.ReleaseAllocation(p.AllocationID) })
			}
			h.cycle(s)
			if got := h.placed("g"); got[records.TierHigh]+got[records.TierMedium] != tc.need.high+tc.need.med {
				t.Fatalf("after eviction %v placed", got)
			}
		})
	}
}

// TestPreemptionPrefersWholeNodes: n0 holds two small low-tier pods beside
// non-Weft load; n1 one big low-tier pod among others. Evicting n1's big
// pod alone would do, but evicting n0's two empties n0 of Weft pods, which
// is worth more (whole-node lending, large pods), so n0 is chosen.
func TestPreemptionPrefersWholeNodes(t *testing.T) {
	h := newHarness(t,
		quota.QueueQuota{Path: "root.guar", Guaranteed: res(4000, 16)},
		quota.QueueQuota{Path: "root.borrow"})
	h.node("n0", res(4000, 16), res(2000, 0))
	h.node("n1", res(4000, 16), quota.Resource{})
	h.update(func(w *state.Txn) error {
		if err := w.UpsertApplication(&objects.Application{ID: "b", Queue: "root.borrow"}); err != nil {
			return err
		}
		for _, r := range []struct {
			id  string
			cpu int64
		}{{"a1", 1000}, {"a2", 1000}, {"b2", 1000}, {"b3", 1000}, {"b1", 2000}} {
			if err := w.AddRequest(&objects.Request{ID: r.id, AppID: "b", Tier: records.TierLow, Resource: res(r.cpu, 1)}); err != nil {
				return err
			}
		}
		return nil
	})
	plan := &objects.Plan{}
	for req, node := range map[string]string{"a1": "n0", "a2": "n0", "b1": "n1", "b2": "n1", "b3": "n1"} {
		plan.Units = append(plan.Units, objects.Unit{AppID: "b", Placements: []objects.Placement{{RequestID: req, NodeID: node}}})
	}
	if r, err := h.store.ApplyPlan(plan); err != nil || len(r.Rejected) > 0 {
		t.Fatalf("setup: %v %+v", err, r)
	}
	h.submit(job{id: "g", queue: "root.guar", high: 1, each: res(2000, 1)})
	_, r := h.cycle(New(Options{}))
	var victims []string
	for _, p := range r.Preempted {
		victims = append(victims, p.AllocationID)
	}
	slices.Sort(victims)
	if !slices.Equal(victims, []string{"a1", "a2"}) {
		t.Fatalf("victims %v, want the two on n0", victims)
	}
}
