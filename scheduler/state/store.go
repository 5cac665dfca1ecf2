package state

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weft-sh/weft/protos/cowtable"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// ErrNotFound is wrapped by writes that name a missing object. It is the
// tables' own, so that a delete a check missed is one too.
var ErrNotFound = cowtable.ErrNotFound

// Store holds the scheduler's state. All writes go through Update or
// ApplyPlan, one at a time; reads go through snapshots and never block.
type Store struct {
	// cur is the latest published version; a snapshot holds on to the
	// version it loaded.
	cur atomic.Pointer[db]
	// queue is the hierarchy writes are checked against; SetHierarchy
	// replaces it while snapshots are taken.
	queue atomic.Pointer[quota.Hierarchy]
	// writeMu serialises writers: each clones the latest version, and
	// ApplyPlan validates and writes in one critical section.
	writeMu sync.Mutex
}

// New returns an empty store for the given queue hierarchy, with a usage
// row for every queue.
func New(h *quota.Hierarchy) (*Store, error) {
	s := &Store{}
	s.queue.Store(h)
	d := newDB()
	for _, p := range h.Paths() {
		if err := d.queues.Insert(&objects.QueueUsage{Path: p, ModifyIndex: 1}); err != nil {
			return nil, err
		}
	}
	d.index = 1
	s.cur.Store(d)
	return s, nil
}

// Hierarchy returns the queue hierarchy the store enforces.
func (s *Store) Hierarchy() *quota.Hierarchy { return s.queue.Load() }

// ErrQueuesChanged is returned by SetHierarchy for a hierarchy of other
// queues than the store's.
var ErrQueuesChanged = errors.New("the queues changed")

// SetHierarchy replaces the queues' quotas, for a store kept from one
// cycle to the next while the quotas move with the cluster's size and the
// queues' time windows. The queues must be the same (their usage rows
// stay); a new tree needs a new store. Snapshots taken before keep the
// hierarchy they were taken with.
func (s *Store) SetHierarchy(h *quota.Hierarchy) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if !slices.Equal(s.queue.Load().Paths(), h.Paths()) {
		return fmt.Errorf("state: set hierarchy: %w", ErrQueuesChanged)
	}
	s.queue.Store(h)
	return nil
}

// Snapshot returns a consistent read-only view.
func (s *Store) Snapshot() *Snapshot {
	return &Snapshot{reader{db: s.cur.Load(), queue: s.queue.Load()}}
}

// Update runs fn in the single write transaction at the next store index.
// If fn fails nothing changes.
func (s *Store) Update(fn func(*Txn) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	w := s.begin()
	if err := fn(w); err != nil {
		return err
	}
	s.commit(w)
	return nil
}

// begin starts a write transaction on a clone of the latest version; a
// transaction that is not committed is dropped with its clone.
func (s *Store) begin() *Txn {
	d := s.cur.Load().clone()
	return &Txn{reader: reader{db: d, queue: s.queue.Load()}, index: d.index + 1}
}

// commit publishes w's version.
func (s *Store) commit(w *Txn) {
	w.db.index = w.index
	s.cur.Store(w.db)
}

// Snapshot is a point-in-time view of the store. Objects it returns are
// shared and must not be modified.
type Snapshot struct{ reader }

// Txn is the write transaction Update hands out. It reads its own writes.
type Txn struct {
	reader
	index uint64
}

// WriteIndex is the store index this transaction writes at.
func (w *Txn) WriteIndex() uint64 { return w.index }

// UpsertNode inserts or replaces a node's capacity and cordon state. The
// store keeps Allocated itself; a caller's value is ignored.
func (w *Txn) UpsertNode(n *objects.Node) error {
	if n.ID == "" {
		return fmt.Errorf("state: node without id")
	}
	c := *n
	c.Allocatable = n.Allocatable.Clone()
	c.NonWeftUsed = n.NonWeftUsed.Clone()
	c.Allocated, c.Releasing = quota.Resource{}, quota.Resource{}
	if old := w.Node(n.ID); old != nil {
		c.Allocated, c.Releasing = old.Allocated, old.Releasing
	}
	c.ModifyIndex = w.index
	return w.db.nodes.Insert(&c)
}

// DeleteNode removes a node. Its allocations go with it: pods on a lost
// node are gone.
func (w *Txn) DeleteNode(id string) error {
	n := w.Node(id)
	if n == nil {
		return fmt.Errorf("state: node %q: %w", id, ErrNotFound)
	}
	if err := w.release(w.AllocationsOnNode(id)); err != nil {
		return err
	}
	return w.db.nodes.Delete(id)
}

// UpsertApplication inserts or replaces an application. Its queue must be
// a leaf of the hierarchy and cannot change while it has requests or
// allocations (moving usage between queues is not supported yet).
func (w *Txn) UpsertApplication(a *objects.Application) error {
	if a.ID == "" {
		return fmt.Errorf("state: application without id")
	}
	if !slices.Contains(w.queue.Leaves(), a.Queue) {
		return fmt.Errorf("state: application %s: %q is not a leaf queue", a.ID, a.Queue)
	}
	if old := w.Application(a.ID); old != nil && old.Queue != a.Queue &&
		(len(w.RequestsOfApp(a.ID)) > 0 || len(w.AllocationsOfApp(a.ID)) > 0) {
		return fmt.Errorf("state: application %s: cannot move from %s to %s while active", a.ID, old.Queue, a.Queue)
	}
	c := *a
	c.ModifyIndex = w.index
	return w.db.apps.Insert(&c)
}

// DeleteApplication removes an application with its requests and
// allocations.
func (w *Txn) DeleteApplication(id string) error {
	a := w.Application(id)
	if a == nil {
		return fmt.Errorf("state: application %q: %w", id, ErrNotFound)
	}
	for _, r := range w.RequestsOfApp(id) {
		if err := w.RemoveRequest(r.ID); err != nil {
			return err
		}
	}
	if err := w.release(w.AllocationsOfApp(id)); err != nil {
		return err
	}
	return w.db.apps.Delete(a.ID)
}

// AddRequest adds a pending pod to its application.
func (w *Txn) AddRequest(r *objects.Request) error {
	if r.ID == "" || !r.Tier.Valid() {
		return fmt.Errorf("state: request %q: missing id or invalid tier %v", r.ID, r.Tier)
	}
	if !r.Resource.NonNegative().Equal(r.Resource) {
		return fmt.Errorf("state: request %s: negative resource %v", r.ID, r.Resource)
	}
	a := w.Application(r.AppID)
	if a == nil {
		return fmt.Errorf("state: request %s: application %q: %w", r.ID, r.AppID, ErrNotFound)
	}
	if w.Request(r.ID) != nil || w.Allocation(r.ID) != nil {
		return fmt.Errorf("state: request %s exists", r.ID)
	}
	c := *r
	c.AppID, c.Queue = a.ID, a.Queue
	c.Resource = r.Resource.Clone()
	c.CreateIndex = w.index
	if err := w.db.requests.Insert(&c); err != nil {
		return err
	}
	return w.chargeQueue(a.Queue, quota.Resource{}, c.Resource)
}

// RemoveRequest withdraws a pending pod.
func (w *Txn) RemoveRequest(id string) error {
	r := w.Request(id)
	if r == nil {
		return fmt.Errorf("state: request %q: %w", id, ErrNotFound)
	}
	if err := w.db.requests.Delete(r.ID); err != nil {
		return err
	}
	return w.chargeQueue(r.Queue, quota.Resource{}, quota.Resource{}.Sub(r.Resource))
}

// AddAllocation records a pod that already runs, placed before this store
// knew of it (a shim rebuilding its view, or a restart): it charges the
// node and the queues as a placement would, without any fit check, since
// the pod holds its resources whether they fit or not.
func (w *Txn) AddAllocation(al *objects.Allocation) error {
	if al.ID == "" || !al.Tier.Valid() {
		return fmt.Errorf("state: allocation %q: missing id or invalid tier %v", al.ID, al.Tier)
	}
	a := w.Application(al.AppID)
	if a == nil {
		return fmt.Errorf("state: allocation %s: application %q: %w", al.ID, al.AppID, ErrNotFound)
	}
	n := w.Node(al.NodeID)
	if n == nil {
		return fmt.Errorf("state: allocation %s: node %q: %w", al.ID, al.NodeID, ErrNotFound)
	}
	if w.Request(al.ID) != nil || w.Allocation(al.ID) != nil {
		return fmt.Errorf("state: allocation %s exists", al.ID)
	}
	c := *al
	// The application's and the node's own strings: 100,000 allocations
	// hold no copies of their ids.
	c.AppID, c.NodeID = a.ID, n.ID
	c.Queue, c.Resource = a.Queue, al.Resource.Clone()
	c.CreateIndex, c.ModifyIndex = w.index, w.index
	if err := w.db.allocations.Insert(&c); err != nil {
		return err
	}
	nc := *n
	nc.Allocated = n.Allocated.Add(c.Resource)
	if c.Preempting {
		// A victim notified before this store knew of it: its capacity is
		// already on its way back, and must not be reclaimed twice.
		nc.Releasing = n.Releasing.Add(c.Resource)
	}
	nc.ModifyIndex = w.index
	if err := w.db.nodes.Insert(&nc); err != nil {
		return err
	}
	if c.Preempting {
		if err := w.releasingQueue(a.Queue, c.Resource); err != nil {
			return err
		}
	}
	return w.chargeQueue(a.Queue, c.Resource, quota.Resource{})
}

// ReleaseAllocation frees a placed pod that has exited (completed, failed,
// or evicted after a preemption notice). It is ReleaseAllocations for one,
// without the batch's maps: the RM's pod view releases and charges again
// every pod it re-derives, one at a time, many times a second.
func (w *Txn) ReleaseAllocation(id string) error {
	a := w.Allocation(id)
	if a == nil {
		return fmt.Errorf("state: allocation %q: %w", id, ErrNotFound)
	}
	if err := w.db.allocations.Delete(a.ID); err != nil {
		return err
	}
	var releasing quota.Resource
	if a.Preempting {
		releasing = a.Resource
	}
	if err := w.freeOnNode(a.NodeID, a.Resource, releasing); err != nil {
		return err
	}
	return w.freeInQueue(a.Queue, a.Resource, releasing)
}

// ReleaseAllocations frees placed pods as ReleaseAllocation frees each,
// and charges each node and queue they held once: the RM's view releases
// a whole plan's placements at once (rmfacade/allocator), whose node and
// queue rows written per pod cost more than the pods' own deletes. The
// ids must be distinct; an unknown one fails the transaction.
func (w *Txn) ReleaseAllocations(ids ...string) error {
	als := make([]*objects.Allocation, 0, len(ids))
	for _, id := range ids {
		al := w.Allocation(id)
		if al == nil {
			return fmt.Errorf("state: allocation %q: %w", id, ErrNotFound)
		}
		als = append(als, al)
	}
	return w.release(als)
}

// release is ReleaseAllocations of allocations already looked up (as the
// store holds them): DeleteNode and DeleteApplication have them from
// their indexes.
func (w *Txn) release(als []*objects.Allocation) error {
	type freed struct{ allocated, releasing quota.Resource }
	nodes, queues := map[string]*freed{}, map[string]*freed{}
	add := func(m map[string]*freed, key string, al *objects.Allocation) {
		f := m[key]
		if f == nil {
			f = &freed{}
			m[key] = f
		}
		f.allocated.AddInPlace(al.Resource)
		if al.Preempting {
			f.releasing.AddInPlace(al.Resource)
		}
	}
	for _, al := range als {
		add(nodes, al.NodeID, al)
		add(queues, al.Queue, al)
	}
	if err := w.db.allocations.DeleteHeld(als); err != nil {
		return fmt.Errorf("state: release allocations: %w", err)
	}
	for id, f := range nodes {
		if err := w.freeOnNode(id, f.allocated, f.releasing); err != nil {
			return err
		}
	}
	for leaf, f := range queues {
		if err := w.freeInQueue(leaf, f.allocated, f.releasing); err != nil {
			return err
		}
	}
	return nil
}

// freeOnNode takes released allocations' resources off a node's
// Allocated, and those under preemption off its Releasing too; a node
// already gone is left so.
func (w *Txn) freeOnNode(id string, allocated, releasing quota.Resource) error {
	n := w.Node(id)
	if n == nil {
		return nil
	}
	c := *n
	c.Allocated = n.Allocated.Sub(allocated)
	if !releasing.IsZero() {
		c.Releasing = n.Releasing.Sub(releasing)
	}
	c.ModifyIndex = w.index
	return w.db.nodes.Insert(&c)
}

// freeInQueue takes released allocations' resources off a leaf queue and
// its parents' usage, and those under preemption off the leaf's Releasing.
func (w *Txn) freeInQueue(leaf string, allocated, releasing quota.Resource) error {
	if !releasing.IsZero() {
		if err := w.releasingQueue(leaf, quota.Resource{}.Sub(releasing)); err != nil {
			return err
		}
	}
	return w.chargeQueue(leaf, quota.Resource{}.Sub(allocated), quota.Resource{})
}

// releasingQueue adds a delta to the Releasing total of a leaf queue.
// Only leaves track it: victims are chosen by their leaf's borrowing.
func (w *Txn) releasingQueue(leaf string, delta quota.Resource) error {
	q := w.QueueUsage(leaf)
	if q == nil {
		return fmt.Errorf("state: queue %q: %w", leaf, ErrNotFound)
	}
	c := *q
	c.Releasing = q.Releasing.Add(delta)
	c.ModifyIndex = w.index
	return w.db.queues.Insert(&c)
}

// chargeQueue adds used and pending deltas to a queue and its ancestors.
func (w *Txn) chargeQueue(leaf string, used, pending quota.Resource) error {
	for _, p := range w.queue.Lineage(leaf) {
		q := w.QueueUsage(p)
		if q == nil {
			return fmt.Errorf("state: queue %q: %w", p, ErrNotFound)
		}
		c := *q
		c.Used = q.Used.Add(used)
		c.Pending = q.Pending.Add(pending)
		c.ModifyIndex = w.index
		if err := w.db.queues.Insert(&c); err != nil {
			return err
		}
	}
	return nil
}

// reader holds the queries shared by snapshots and write transactions.
type reader struct {
	db    *db
	queue *quota.Hierarchy
}

// Index is the store index of the last write this view contains.
func (r reader) Index() uint64 { return r.db.index }

// Hierarchy returns the queue hierarchy.
func (r reader) Hierarchy() *quota.Hierarchy { return r.queue }

// Node returns a node or nil.
func (r reader) Node(id string) *objects.Node { return r.db.nodes.Get(id) }

// Nodes returns every node in id order.
func (r reader) Nodes() []*objects.Node { return r.db.nodes.All() }

// Application returns an application or nil.
func (r reader) Application(id string) *objects.Application { return r.db.apps.Get(id) }

// ApplicationsInQueue returns a leaf queue's applications in id order.
func (r reader) ApplicationsInQueue(queue string) []*objects.Application {
	return r.db.apps.By(appsByQueue, queue)
}

// ReservingApplicationsInQueue returns a leaf queue's applications that
// hold quota for a declared maximum (a non-zero Reserve), in id order.
func (r reader) ReservingApplicationsInQueue(queue string) []*objects.Application {
	return r.db.apps.By(appsReservingBy, queue)
}

// ApplicationsWithRequests returns the applications that have pending
// requests, in id order: what a cycle may place, without the applications
// that only hold allocations, which are most of a busy cluster's.
func (r reader) ApplicationsWithRequests() []*objects.Application {
	var out []*objects.Application
	last := ""
	r.db.requests.AscendBy(requestsByApp, "", func(rq *objects.Request) bool {
		if rq.AppID != last {
			last = rq.AppID
			if a := r.db.apps.Get(last); a != nil {
				out = append(out, a)
			}
		}
		return true
	})
	return out
}

// Request returns a pending request or nil.
func (r reader) Request(id string) *objects.Request { return r.db.requests.Get(id) }

// RequestsOfApp returns an application's pending requests in id order.
func (r reader) RequestsOfApp(app string) []*objects.Request {
	return r.db.requests.By(requestsByApp, app)
}

// Allocation returns an allocation or nil.
func (r reader) Allocation(id string) *objects.Allocation { return r.db.allocations.Get(id) }

// Allocations returns every allocation in id order.
func (r reader) Allocations() []*objects.Allocation { return r.db.allocations.All() }

// AllocationsOnNode returns a node's allocations in id order.
func (r reader) AllocationsOnNode(node string) []*objects.Allocation {
	return r.db.allocations.By(allocationsByNode, node)
}

// AllocationsOfApp returns an application's allocations in id order.
func (r reader) AllocationsOfApp(app string) []*objects.Allocation {
	return r.db.allocations.By(allocationsByApp, app)
}

// QueueUsage returns a queue's usage row or nil.
func (r reader) QueueUsage(path string) *objects.QueueUsage { return r.db.queues.Get(path) }
