package state

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// TestApplyPlanWithinUnits checks what ApplyPlan checks across a unit's
// own placements and across the plan's units, for units small enough to be
// checked by scanning and for larger ones (smallUnit): a request named
// twice, and members that fit a node one by one but not together.
func TestApplyPlanWithinUnits(t *testing.T) {
	one := quota.Resource{MilliCPU: 1000, Memory: 1 << 30}
	req := func(i int) string { return fmt.Sprintf("r-%03d", i) }
	// unit places requests from..to-1 (of 40, 1 core each) on nodes by
	// node(i); nodes n0..n39 have 4 cores each, so 5 on one node do not fit.
	unit := func(from, to int, node func(i int) int, swap func(p []objects.Placement)) objects.Unit {
		u := objects.Unit{AppID: "app", Gang: true}
		for i := from; i < to; i++ {
			u.Placements = append(u.Placements, objects.Placement{RequestID: req(i), NodeID: fmt.Sprintf("n%d", node(i))})
		}
		if swap != nil {
			swap(u.Placements)
		}
		return u
	}
	spread := func(i int) int { return i }
	fourPer := func(i int) int { return i / 4 }
	fivePer := func(i int) int { return i / 5 }
	twice := func(p []objects.Placement) { p[len(p)-1].RequestID = p[0].RequestID }
	cases := []struct {
		name    string
		units   []objects.Unit
		applied int
		reason  string // of the one rejected unit
	}{
		{"small unit, spread", []objects.Unit{unit(0, 4, spread, nil)}, 1, ""},
		{"large unit, spread", []objects.Unit{unit(0, 40, spread, nil)}, 1, ""},
		{"small unit, four to a node", []objects.Unit{unit(0, 8, fourPer, nil)}, 1, ""},
		{"large unit, four to a node", []objects.Unit{unit(0, 40, fourPer, nil)}, 1, ""},
		{"small unit, five to a node", []objects.Unit{unit(0, 5, fivePer, nil)}, 0, "node n0 has no room for r-004"},
		{"large unit, five to a node", []objects.Unit{unit(0, 40, fivePer, nil)}, 0, "node n0 has no room for r-004"},
		{"small unit names a request twice", []objects.Unit{unit(0, 4, spread, twice)}, 0, "request r-000 no longer pending"},
		{"large unit names a request twice", []objects.Unit{unit(0, 40, spread, twice)}, 0, "request r-000 no longer pending"},
		{"a later unit names a placed request", []objects.Unit{unit(0, 4, spread, nil), unit(3, 6, spread, nil)}, 1,
			"request r-003 no longer pending"},
		{"a later unit finds the node filled by an earlier one", []objects.Unit{unit(0, 4, fourPer, nil), unit(4, 5, func(int) int { return 0 }, nil)},
			1, "node n0 has no room for r-004"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, "root.a")
			err := s.Update(func(w *Txn) error {
				for i := range 40 {
					if err := w.UpsertNode(&objects.Node{ID: fmt.Sprintf("n%d", i), Allocatable: one.Add(one).Add(one).Add(one)}); err != nil {
						return err
					}
				}
				if err := w.UpsertApplication(&objects.Application{ID: "app", Queue: "root.a"}); err != nil {
					return err
				}
				for i := range 40 {
					if err := w.AddRequest(&objects.Request{ID: req(i), AppID: "app", Tier: records.TierMedium, Resource: one}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.ApplyPlan(&objects.Plan{Units: c.units})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Applied) != c.applied || len(r.Rejected) != len(c.units)-c.applied {
				t.Fatalf("applied %d, rejected %+v; want %d applied", len(r.Applied), r.Rejected, c.applied)
			}
			if c.reason != "" && !strings.Contains(r.Rejected[0].Reason, c.reason) {
				t.Errorf("rejected for %q, want %q", r.Rejected[0].Reason, c.reason)
			}
			// The store holds exactly the applied units, charged to their
			// nodes and queues.
			snap := s.Snapshot()
			placed, onNode := 0, map[string]int64{}
			for _, u := range r.Applied {
				for _, pl := range u.Placements {
					placed++
					onNode[pl.NodeID] += one.MilliCPU
					if al := snap.Allocation(pl.RequestID); al == nil || al.NodeID != pl.NodeID || snap.Request(pl.RequestID) != nil {
						t.Errorf("%s: allocation %+v, still pending %v", pl.RequestID, al, snap.Request(pl.RequestID) != nil)
					}
				}
			}
			if n := len(snap.Allocations()); n != placed {
				t.Errorf("%d allocations, want %d", n, placed)
			}
			for _, n := range snap.Nodes() {
				if n.Allocated.MilliCPU != onNode[n.ID] {
					t.Errorf("node %s allocated %v, want %dm", n.ID, n.Allocated, onNode[n.ID])
				}
			}
			for _, q := range []string{"root", "root.a"} {
				row := snap.QueueUsage(q)
				if row.Used.MilliCPU != int64(placed)*one.MilliCPU || row.Pending.MilliCPU != int64(40-placed)*one.MilliCPU {
					t.Errorf("queue %s used %v pending %v with %d placed", q, row.Used, row.Pending, placed)
				}
			}
		})
	}
}

// TestApplyPlanLarge checks a plan of several of the applier's chunks,
// whose writes run beside the checks of the units after them: later units
// still see what earlier ones placed (a repeated request, a node filled,
// gang members counted toward an application's minimum), stale units are
// refused, and the store ends with exactly the applied placements, in its
// tables and its indexes.
func TestApplyPlanLarge(t *testing.T) {
	one := quota.Resource{MilliCPU: 1000, Memory: 1 << 30}
	const elastic = 3*chunkSize + 100 // requests of application a
	const placedA = 3 * chunkSize     // of which the plan places these
	s := newStore(t, "root.a")
	err := s.Update(func(w *Txn) error {
		for i := range 100 {
			if err := w.UpsertNode(&objects.Node{ID: fmt.Sprintf("n%02d", i), Allocatable: quota.Resource{MilliCPU: 100_000, Memory: 100 << 30}}); err != nil {
				return err
			}
		}
		if err := w.UpsertNode(&objects.Node{ID: "small", Allocatable: one}); err != nil {
			return err
		}
		for _, app := range []*objects.Application{{ID: "a", Queue: "root.a"}, {ID: "g", Queue: "root.a", MinMembers: 4}} {
			if err := w.UpsertApplication(app); err != nil {
				return err
			}
		}
		for i := range elastic {
			if err := w.AddRequest(&objects.Request{ID: fmt.Sprintf("a-%05d", i), AppID: "a", Tier: records.TierLow, Resource: one}); err != nil {
				return err
			}
		}
		for i := range 6 {
			if err := w.AddRequest(&objects.Request{ID: fmt.Sprintf("g-%d", i), AppID: "g", Tier: records.TierMedium, Resource: one}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	one1 := func(app, req, node string) objects.Unit {
		return objects.Unit{AppID: app, Placements: []objects.Placement{{RequestID: req, NodeID: node}}}
	}
	gang := func(reqs ...int) objects.Unit {
		u := objects.Unit{AppID: "g", Gang: true}
		for _, r := range reqs {
			u.Placements = append(u.Placements, objects.Placement{RequestID: fmt.Sprintf("g-%d", r), NodeID: fmt.Sprintf("n%02d", r)})
		}
		return u
	}
	plan := &objects.Plan{}
	var refusals []string // why each refused unit is, in plan order
	add := func(u objects.Unit, refused string) {
		plan.Units = append(plan.Units, u)
		if refused != "" {
			refusals = append(refusals, refused)
		}
	}
	add(gang(4), "gang of g incomplete: 1 of 4")
	add(one1("a", "a-00000", "small"), "")
	for i := 1; i < placedA; i++ {
		add(one1("a", fmt.Sprintf("a-%05d", i), fmt.Sprintf("n%02d", i%100)), "")
	}
	add(gang(0, 1, 2, 3), "")
	add(gang(5), "") // 5 of 4, counting the gang placed above
	add(one1("a", "a-00007", "n00"), "request a-00007 no longer pending")
	add(one1("a", fmt.Sprintf("a-%05d", placedA), "small"), "node small has no room")
	add(one1("a", "a-gone", "n01"), "request a-gone no longer pending")
	add(one1("g", fmt.Sprintf("a-%05d", placedA+1), "n01"), "belongs to a")

	r, err := s.ApplyPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rejected) != len(refusals) {
		t.Fatalf("rejected %+v, want %q", r.Rejected, refusals)
	}
	for i, rj := range r.Rejected {
		if !strings.Contains(rj.Reason, refusals[i]) {
			t.Errorf("rejection %d: %q, want %q", i, rj.Reason, refusals[i])
		}
	}
	if len(r.Applied) != placedA+2 || r.Placed() != placedA+5 {
		t.Fatalf("%d units applied placing %d, want %d placing %d", len(r.Applied), r.Placed(), placedA+2, placedA+5)
	}

	snap := s.Snapshot()
	onNode := map[string]int{}
	for _, u := range r.Applied {
		for _, pl := range u.Placements {
			onNode[pl.NodeID]++
			if al := snap.Allocation(pl.RequestID); al == nil || al.NodeID != pl.NodeID || al.AppID != u.AppID || snap.Request(pl.RequestID) != nil {
				t.Fatalf("%s: allocation %+v, still pending %v", pl.RequestID, al, snap.Request(pl.RequestID) != nil)
			}
		}
	}
	if n := len(snap.Allocations()); n != placedA+5 {
		t.Errorf("%d allocations, want %d", n, placedA+5)
	}
	if n, m := len(snap.AllocationsOfApp("a")), len(snap.AllocationsOfApp("g")); n != placedA || m != 5 {
		t.Errorf("allocations by application: a %d, g %d; want %d and 5", n, m, placedA)
	}
	if n, m := len(snap.RequestsOfApp("a")), len(snap.RequestsOfApp("g")); n != elastic-placedA || m != 1 {
		t.Errorf("requests by application: a %d, g %d; want %d and 1", n, m, elastic-placedA)
	}
	for _, n := range snap.Nodes() {
		if got := len(snap.AllocationsOnNode(n.ID)); got != onNode[n.ID] || n.Allocated.MilliCPU != int64(onNode[n.ID])*one.MilliCPU {
			t.Errorf("node %s: %d allocations, allocated %v; want %d", n.ID, got, n.Allocated, onNode[n.ID])
		}
	}
	if row := snap.QueueUsage("root.a"); row.Used.MilliCPU != int64(placedA+5)*one.MilliCPU || row.Pending.MilliCPU != int64(elastic+6-placedA-5)*one.MilliCPU {
		t.Errorf("queue used %v pending %v", row.Used, row.Pending)
	}
}
