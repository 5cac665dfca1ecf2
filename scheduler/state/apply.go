package state

import (
	"fmt"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// ApplyPlan is the plan applier. A plan was computed on a snapshot that may
// be stale by now, so every unit is checked against the current state,
// including the units applied before it in the same plan: each request must
// still be pending, each node present, schedulable and with room, and no
// queue or ancestor may exceed its max. A unit that fails any check is
// rejected as a whole, which keeps gangs all-or-nothing even when the
// state moved under the scheduler. Preemptions of allocations that are gone,
// already preempting, high-tier, or whose queue no longer borrows are
// dropped.
//
// The plan is applied in one write transaction; readers see all of it or
// none of it.
func (s *Store) ApplyPlan(p *objects.Plan) (*objects.PlanResult, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	w := s.begin()
	a := &applier{Txn: w, nodes: map[string]*objects.Node{}, queues: map[string]*objects.QueueUsage{}}
	res := &objects.PlanResult{Index: w.index, Applied: make([]objects.Unit, 0, len(p.Units))}
	for _, u := range p.Units {
		if reason := a.unit(u); reason != "" {
			res.Rejected = append(res.Rejected, objects.Rejection{Unit: u, Reason: reason})
			continue
		}
		res.Applied = append(res.Applied, u)
	}
	for _, pr := range p.Preemptions {
		ok, err := a.preempt(pr)
		if err != nil {
			return nil, err
		}
		if ok {
			res.Preempted = append(res.Preempted, pr)
		}
	}
	if err := a.flush(); err != nil {
		return nil, err
	}
	s.commit(w)
	return res, nil
}

// applier caches the nodes and queue rows a plan touches and writes each
// back once, instead of once per placement: a large plan changes the same
// few queue rows tens of thousands of times. A request placed earlier in
// the plan is gone from the transaction's requests, which is how a later
// unit naming it again is refused.
type applier struct {
	*Txn
	nodes  map[string]*objects.Node
	queues map[string]*objects.QueueUsage
	// seen and nodeAdd are unit's scratch for units too large to check
	// by scanning (see smallUnit), kept to be cleared rather than made
	// for each unit.
	seen    map[string]bool
	nodeAdd map[string]quota.Resource
}

// smallUnit is the most placements a unit checks for repeated requests
// and sums per node by scanning its own placements: most units are one
// elastic request or a gang of a few, and a map for each cost ApplyPlan
// more than the checks.
const smallUnit = 16

func (a *applier) node(id string) *objects.Node {
	if n, ok := a.nodes[id]; ok {
		return n
	}
	n := a.Node(id)
	if n != nil {
		c := *n
		c.Allocated, c.Releasing = n.Allocated.Clone(), n.Releasing.Clone()
		n = &c
	}
	a.nodes[id] = n
	return n
}

func (a *applier) queueRow(path string) *objects.QueueUsage {
	if q, ok := a.queues[path]; ok {
		return q
	}
	q := a.QueueUsage(path)
	if q != nil {
		c := *q
		c.Used, c.Pending, c.Releasing = q.Used.Clone(), q.Pending.Clone(), q.Releasing.Clone()
		q = &c
	}
	a.queues[path] = q
	return q
}

// repeated reports whether a unit's earlier placements name id.
func (a *applier) repeated(earlier []objects.Placement, id string, small bool) bool {
	if !small {
		return a.seen[id]
	}
	for _, pl := range earlier {
		if pl.RequestID == id {
			return true
		}
	}
	return false
}

// unit checks and applies one unit; it returns why it was rejected, or "".
func (a *applier) unit(u objects.Unit) string {
	app := a.Application(u.AppID)
	if app == nil {
		return "application gone"
	}
	if len(u.Placements) == 0 {
		return "empty unit"
	}
	lineage := a.queue.Lineage(app.Queue)
	small := len(u.Placements) <= smallUnit
	if !small {
		if a.seen == nil {
			a.seen, a.nodeAdd = map[string]bool{}, map[string]quota.Resource{}
		}
		clear(a.seen)
		clear(a.nodeAdd)
	}
	reqs := make([]*objects.Request, len(u.Placements))
	var total quota.Resource
	gangMembers := 0
	for i, pl := range u.Placements {
		r := a.Request(pl.RequestID)
		if r == nil || a.repeated(u.Placements[:i], pl.RequestID, small) {
			return fmt.Sprintf("request %s no longer pending", pl.RequestID)
		}
		if r.AppID != u.AppID {
			return fmt.Sprintf("request %s belongs to %s", r.ID, r.AppID)
		}
		if r.Tier.Gang() != u.Gang {
			return fmt.Sprintf("request %s of tier %v in a unit with gang=%v", r.ID, r.Tier, u.Gang)
		}
		if r.Tier.Gang() {
			gangMembers++
		}
		if !small {
			a.seen[r.ID] = true
		}
		reqs[i] = r
		n := a.node(pl.NodeID)
		if n == nil {
			return fmt.Sprintf("node %s gone", pl.NodeID)
		}
		if n.Cordoned {
			return fmt.Sprintf("node %s cordoned", pl.NodeID)
		}
		if r.Nodes != nil && !r.Nodes[pl.NodeID] {
			return fmt.Sprintf("request %s may not go to node %s", r.ID, pl.NodeID)
		}
		// What the unit already put on this node, with r.
		add := r.Resource.Clone()
		if small {
			for j, o := range u.Placements[:i] {
				if o.NodeID == pl.NodeID {
					add.AddInPlace(reqs[j].Resource)
				}
			}
		} else {
			add.AddInPlace(a.nodeAdd[pl.NodeID])
			a.nodeAdd[pl.NodeID] = add
		}
		if !add.Fits(n.Free()) {
			return fmt.Sprintf("node %s has no room for %s", pl.NodeID, r.ID)
		}
		total.AddInPlace(r.Resource)
	}
	if u.Gang && app.MinMembers > 0 {
		have := 0
		for _, al := range a.AllocationsOfApp(app.ID) {
			if al.Tier.Gang() {
				have++
			}
		}
		if have+gangMembers < app.MinMembers {
			return fmt.Sprintf("gang of %s incomplete: %d of %d members", app.ID, have+gangMembers, app.MinMembers)
		}
	}
	for _, p := range lineage {
		q, _ := a.queue.Quota(p)
		row := a.queueRow(p)
		if !row.Used.Add(total).FitsLimit(q.Max) {
			return fmt.Sprintf("queue %s would exceed its max", p)
		}
	}
	// Every check passed: apply.
	for i, pl := range u.Placements {
		a.nodes[pl.NodeID].Allocated.AddInPlace(reqs[i].Resource)
	}
	for _, p := range lineage {
		row := a.queueRow(p)
		row.Used.AddInPlace(total)
		row.Pending.SubInPlace(total)
	}
	for i, r := range reqs {
		if err := a.db.requests.Delete(r.ID); err != nil {
			return "store: " + err.Error()
		}
		// The node's and the application's own id strings, so that the
		// allocation holds no copy of either.
		al := &objects.Allocation{ID: r.ID, AppID: app.ID, Queue: r.Queue, NodeID: a.nodes[u.Placements[i].NodeID].ID,
			Tier: r.Tier, Resource: r.Resource, CreateIndex: a.index, ModifyIndex: a.index}
		if err := a.db.allocations.Insert(al); err != nil {
			return "store: " + err.Error()
		}
	}
	return ""
}

// preempt marks a victim; false means the preemption was stale.
func (a *applier) preempt(p objects.Preemption) (bool, error) {
	al := a.Allocation(p.AllocationID)
	if al == nil || al.Preempting || al.Tier == records.TierHigh {
		return false, nil
	}
	q, _ := a.queue.Quota(al.Queue)
	row := a.queueRow(al.Queue)
	if !Reclaimable(row.Used.Sub(row.Releasing), q.Guaranteed, al.Resource) {
		return false, nil
	}
	row.Releasing.AddInPlace(al.Resource)
	if n := a.node(al.NodeID); n != nil {
		n.Releasing.AddInPlace(al.Resource)
	}
	c := *al
	c.Preempting = true
	c.ModifyIndex = a.index
	return true, a.db.allocations.Insert(&c)
}

// Reclaimable reports whether victim may be taken from a queue that uses
// used: in every dimension where the queue borrows (uses more than its
// guarantee), taking it leaves the queue at or above its guarantee, and it
// borrows in at least one dimension the victim uses. Dimensions within
// the guarantee do not hold a victim back: a container frees all it holds,
// and a queue borrowing CPU while within its memory must still give the
// CPU back (YARN's DRF preemption likewise looks at the dominant share).
func Reclaimable(used, guaranteed, victim quota.Resource) bool {
	borrows := false
	after := used.Sub(victim)
	for _, name := range used.Names() {
		u, g := used.Get(name), guaranteed.Get(name)
		if u <= g {
			continue
		}
		if after.Get(name) < g {
			return false
		}
		if victim.Get(name) > 0 {
			borrows = true
		}
	}
	return borrows
}

func (a *applier) flush() error {
	for _, n := range a.nodes {
		if n == nil {
			continue
		}
		n.ModifyIndex = a.index
		if err := a.db.nodes.Insert(n); err != nil {
			return err
		}
	}
	for _, q := range a.queues {
		if q == nil {
			continue
		}
		q.ModifyIndex = a.index
		if err := a.db.queues.Insert(q); err != nil {
			return err
		}
	}
	return nil
}
