package state

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/weft-sh/weft/protos/memkey"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// ErrNotFound is wrapped by writes that name a missing object.
var ErrNotFound = errors.New("not found")

// Store holds the scheduler's state. All writes go through Update or
// ApplyPlan, one at a time; reads go through snapshots and never block.
type Store struct {
	db *memdb.MemDB
	// queue is the hierarchy writes are checked against; SetHierarchy
	// replaces it while snapshots are taken.
	queue atomic.Pointer[quota.Hierarchy]
	// writeMu serialises writers. memdb allows one write transaction at
	// a time anyway; holding our own lock lets ApplyPlan validate and
	// write in one critical section.
	writeMu sync.Mutex
}

// New returns an empty store for the given queue hierarchy, with a usage
// row for every queue.
func New(h *quota.Hierarchy) (*Store, error) {
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state: schema: %w", err)
	}
	s := &Store{db: db}
	s.queue.Store(h)
	tx := db.Txn(true)
	defer tx.Abort()
	for _, p := range h.Paths() {
		if err := tx.Insert(TableQueues, &objects.QueueUsage{Path: p, ModifyIndex: 1}); err != nil {
			return nil, err
		}
	}
	if err := tx.Insert(tableIndex, &indexRow{Key: "latest", Value: 1}); err != nil {
		return nil, err
	}
	tx.Commit()
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
	return &Snapshot{reader{tx: s.db.Txn(false), queue: s.queue.Load()}}
}

// Update runs fn in the single write transaction at the next store index.
// If fn fails nothing changes.
func (s *Store) Update(fn func(*Txn) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	w := s.begin()
	defer w.tx.Abort()
	if err := fn(w); err != nil {
		return err
	}
	return w.commit()
}

func (s *Store) begin() *Txn {
	tx := s.db.Txn(true)
	r := reader{tx: tx, queue: s.queue.Load()}
	return &Txn{reader: r, index: r.Index() + 1}
}

// Snapshot is a point-in-time view of the store. Objects it returns are
// shared and must not be modified.
type Snapshot struct{ reader }

// Txn is the write transaction Update hands out. It reads its own writes.
type Txn struct {
	reader
	index uint64
}

func (w *Txn) commit() error {
	if err := w.tx.Insert(tableIndex, &indexRow{Key: "latest", Value: w.index}); err != nil {
		return err
	}
	w.tx.Commit()
	return nil
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
	return w.tx.Insert(TableNodes, &c)
}

// DeleteNode removes a node. Its allocations go with it: pods on a lost
// node are gone.
func (w *Txn) DeleteNode(id string) error {
	n := w.Node(id)
	if n == nil {
		return fmt.Errorf("state: node %q: %w", id, ErrNotFound)
	}
	for _, a := range w.AllocationsOnNode(id) {
		if err := w.ReleaseAllocation(a.ID); err != nil {
			return err
		}
	}
	return w.tx.Delete(TableNodes, w.Node(id))
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
	return w.tx.Insert(TableApplications, &c)
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
	for _, al := range w.AllocationsOfApp(id) {
		if err := w.ReleaseAllocation(al.ID); err != nil {
			return err
		}
	}
	return w.tx.Delete(TableApplications, a)
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
	c.Queue = a.Queue
	c.Resource = r.Resource.Clone()
	c.CreateIndex = w.index
	if err := w.tx.Insert(TableRequests, &c); err != nil {
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
	if err := w.tx.Delete(TableRequests, r); err != nil {
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
	c.Queue, c.Resource = a.Queue, al.Resource.Clone()
	c.CreateIndex, c.ModifyIndex = w.index, w.index
	if err := w.tx.Insert(TableAllocations, &c); err != nil {
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
	if err := w.tx.Insert(TableNodes, &nc); err != nil {
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
// or evicted after a preemption notice).
func (w *Txn) ReleaseAllocation(id string) error {
	a := w.Allocation(id)
	if a == nil {
		return fmt.Errorf("state: allocation %q: %w", id, ErrNotFound)
	}
	if err := w.tx.Delete(TableAllocations, a); err != nil {
		return err
	}
	if n := w.Node(a.NodeID); n != nil {
		c := *n
		c.Allocated = n.Allocated.Sub(a.Resource)
		if a.Preempting {
			c.Releasing = n.Releasing.Sub(a.Resource)
		}
		c.ModifyIndex = w.index
		if err := w.tx.Insert(TableNodes, &c); err != nil {
			return err
		}
	}
	if a.Preempting {
		if err := w.releasingQueue(a.Queue, quota.Resource{}.Sub(a.Resource)); err != nil {
			return err
		}
	}
	return w.chargeQueue(a.Queue, quota.Resource{}.Sub(a.Resource), quota.Resource{})
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
	return w.tx.Insert(TableQueues, &c)
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
		if err := w.tx.Insert(TableQueues, &c); err != nil {
			return err
		}
	}
	return nil
}

// reader holds the queries shared by snapshots and write transactions.
type reader struct {
	tx    *memdb.Txn
	queue *quota.Hierarchy
}

func first[T any](r reader, table, index, key string) *T {
	return memkey.First[T](r.tx, table, index, key)
}

func all[T any](r reader, table, index string, args ...any) []*T {
	return memkey.All[T](r.tx, table, index, args...)
}

// Index is the store index of the last write this view contains.
func (r reader) Index() uint64 {
	if row := first[indexRow](r, tableIndex, indexID, "latest"); row != nil {
		return row.Value
	}
	return 0
}

// Hierarchy returns the queue hierarchy.
func (r reader) Hierarchy() *quota.Hierarchy { return r.queue }

// Node returns a node or nil.
func (r reader) Node(id string) *objects.Node {
	return first[objects.Node](r, TableNodes, indexID, id)
}

// Nodes returns every node in id order.
func (r reader) Nodes() []*objects.Node { return all[objects.Node](r, TableNodes, indexID) }

// Application returns an application or nil.
func (r reader) Application(id string) *objects.Application {
	return first[objects.Application](r, TableApplications, indexID, id)
}

// ApplicationsInQueue returns a leaf queue's applications in id order.
func (r reader) ApplicationsInQueue(queue string) []*objects.Application {
	return all[objects.Application](r, TableApplications, indexQueue, queue)
}

// Request returns a pending request or nil.
func (r reader) Request(id string) *objects.Request {
	return first[objects.Request](r, TableRequests, indexID, id)
}

// RequestsOfApp returns an application's pending requests in id order.
func (r reader) RequestsOfApp(app string) []*objects.Request {
	return all[objects.Request](r, TableRequests, indexApp, app)
}

// Allocation returns an allocation or nil.
func (r reader) Allocation(id string) *objects.Allocation {
	return first[objects.Allocation](r, TableAllocations, indexID, id)
}

// Allocations returns every allocation in id order.
func (r reader) Allocations() []*objects.Allocation {
	return all[objects.Allocation](r, TableAllocations, indexID)
}

// AllocationsOnNode returns a node's allocations.
func (r reader) AllocationsOnNode(node string) []*objects.Allocation {
	return all[objects.Allocation](r, TableAllocations, indexNode, node)
}

// AllocationsOfApp returns an application's allocations.
func (r reader) AllocationsOfApp(app string) []*objects.Allocation {
	return all[objects.Allocation](r, TableAllocations, indexApp, app)
}

// QueueUsage returns a queue's usage row or nil.
func (r reader) QueueUsage(path string) *objects.QueueUsage {
	return first[objects.QueueUsage](r, TableQueues, indexID, path)
}
