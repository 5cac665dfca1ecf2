package state

import (
	"errors"
	"fmt"
	"sync"

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
	base := s.cur.Load() // what w is cloned from: writeMu keeps it the latest
	w := s.begin()
	a := newApplier(w, base, p)
	res := &objects.PlanResult{Index: w.index, Applied: make([]objects.Unit, 0, len(p.Units))}
	for _, u := range p.Units {
		if reason := a.unit(u); reason != "" {
			res.Rejected = append(res.Rejected, objects.Rejection{Unit: u, Reason: reason})
			continue
		}
		res.Applied = append(res.Applied, u)
	}
	// The victims are looked up after the placements are written, so that
	// the tables a preemption reads are the plan's own.
	if err := a.written(); err != nil {
		return nil, err
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

// applier checks a plan's units one by one while a writer goroutine
// writes the units it accepted before.
//
// It caches the nodes and queue rows a plan touches and writes each back
// once, instead of once per placement: a large plan changes the same few
// queue rows tens of thousands of times. An accepted unit's requests are
// deleted and its allocations inserted by the writer, in chunks: that
// touches five B-trees (each table's by id and its indexes), most of a
// large plan's cost, and the writer works on those trees in
// parallel with each other and with the checks. So unit reads requests
// and allocations not in the transaction, which the writer is changing,
// but in the version it began from (base, which nothing writes), plus
// what earlier units of the plan placed (placed, gangPlaced).
type applier struct {
	*Txn
	base   reader
	nodes  map[string]*objects.Node
	queues map[string]*objects.QueueUsage
	// apps caches the plan's applications by id (nil: gone), lineages
	// their queues' lineages: a plan's units are of few applications.
	apps     map[string]*objects.Application
	lineages map[string][]string
	// placed holds the requests accepted units placed, which a later unit
	// naming one again is refused for; gangPlaced counts the gang members
	// placed per application, for a later unit's gang check.
	placed     map[*objects.Request]struct{}
	gangPlaced map[string]int
	// next is the chunk of accepted placements not yet handed to the
	// writer through chunks, of room for chunkCap; wrote reports the
	// writer's end.
	next     chunk
	chunkCap int
	chunks   chan chunk
	wrote    chan error
	// seen and nodeAdd are unit's scratch for units too large to check
	// by scanning (see smallUnit), kept to be cleared rather than made
	// for each unit.
	seen    map[string]bool
	nodeAdd map[string]quota.Resource
}

// chunk is accepted units' requests and the allocations that replace
// them, for the writer.
type chunk struct {
	taken []*objects.Request
	made  []*objects.Allocation
}

// chunkSize is the most placements a chunk holds: enough that each
// chunk's trees are worth a goroutine each (cowtable's batches), few
// enough that the writer starts early in a large plan.
const chunkSize = 2048

func newApplier(w *Txn, base *db, p *objects.Plan) *applier {
	n := 0
	for _, u := range p.Units {
		n += len(u.Placements)
	}
	a := &applier{Txn: w, base: reader{db: base, queue: w.queue}, nodes: map[string]*objects.Node{},
		queues: map[string]*objects.QueueUsage{}, apps: map[string]*objects.Application{}, lineages: map[string][]string{},
		placed: make(map[*objects.Request]struct{}, n), gangPlaced: map[string]int{},
		chunkCap: min(n, chunkSize), chunks: make(chan chunk, 4), wrote: make(chan error, 1)}
	go a.write()
	return a
}

// write is the writer: it applies each chunk to the transaction, the
// requests' trees and the allocations' side by side. The checks made sure
// of every id, so an error is the store's, and fails the plan; chunks
// after one are drained unwritten.
func (a *applier) write() {
	var err error
	for c := range a.chunks {
		if err != nil {
			continue
		}
		var deleted error
		var wg sync.WaitGroup
		wg.Go(func() { deleted = a.db.requests.DeleteHeld(c.taken) })
		inserted := a.db.allocations.InsertNew(c.made)
		wg.Wait()
		err = errors.Join(deleted, inserted)
	}
	a.wrote <- err
}

// flushChunk hands the accepted placements not yet written to the writer.
func (a *applier) flushChunk() {
	if len(a.next.taken) > 0 {
		a.chunks <- a.next
		a.next = chunk{}
	}
}

// written waits for the writer to write every accepted unit.
func (a *applier) written() error {
	a.flushChunk()
	close(a.chunks)
	if err := <-a.wrote; err != nil {
		return fmt.Errorf("state: apply plan: %w", err)
	}
	return nil
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

func (a *applier) app(id string) *objects.Application {
	if app, ok := a.apps[id]; ok {
		return app
	}
	app := a.base.Application(id)
	a.apps[id] = app
	return app
}

// repeated reports whether a unit's earlier placements, or an earlier
// unit's, name r.
func (a *applier) repeated(earlier []objects.Placement, r *objects.Request, small bool) bool {
	if _, ok := a.placed[r]; ok {
		return true
	}
	if !small {
		return a.seen[r.ID]
	}
	for _, pl := range earlier {
		if pl.RequestID == r.ID {
			return true
		}
	}
	return false
}

// unit checks one unit and, if it passes, charges its nodes and queues
// and hands its writes to the writer; it returns why it was rejected, or "".
func (a *applier) unit(u objects.Unit) string {
	app := a.app(u.AppID)
	if app == nil {
		return "application gone"
	}
	if len(u.Placements) == 0 {
		return "empty unit"
	}
	lineage, ok := a.lineages[app.Queue]
	if !ok {
		lineage = a.queue.Lineage(app.Queue)
		a.lineages[app.Queue] = lineage
	}
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
		r := a.base.Request(pl.RequestID)
		if r == nil || a.repeated(u.Placements[:i], r, small) {
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
		for _, al := range a.base.AllocationsOfApp(app.ID) {
			if al.Tier.Gang() {
				have++
			}
		}
		have += a.gangPlaced[app.ID]
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
	if a.next.taken == nil {
		a.next = chunk{taken: make([]*objects.Request, 0, a.chunkCap), made: make([]*objects.Allocation, 0, a.chunkCap)}
	}
	for i, r := range reqs {
		a.placed[r] = struct{}{}
		a.next.taken = append(a.next.taken, r)
		// The node's and the application's own id strings, so that the
		// allocation holds no copy of either.
		a.next.made = append(a.next.made, &objects.Allocation{ID: r.ID, AppID: app.ID, Queue: r.Queue,
			NodeID: a.nodes[u.Placements[i].NodeID].ID, Tier: r.Tier, Resource: r.Resource, CreateIndex: a.index, ModifyIndex: a.index})
	}
	a.gangPlaced[app.ID] += gangMembers
	if len(a.next.taken) >= chunkSize {
		a.flushChunk()
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
