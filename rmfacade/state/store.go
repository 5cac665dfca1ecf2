package state

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"sync/atomic"

	"github.com/weft-sh/weft/protos/cowtable"
	"github.com/weft-sh/weft/protos/yarn/records"
)

// Op is one durable change: a record's new encoding, or its deletion when
// Value is nil.
type Op struct {
	Table, Key string
	Value      []byte
}

// Durable persists the durable tables. Commit must be atomic and on stable
// storage when it returns.
type Durable interface {
	// Load calls fn for every stored record.
	Load(fn func(table, key string, value []byte) error) error
	Commit(ops []Op) error
	Close() error
}

// Store holds the ResourceManager's state.
type Store struct {
	// cur is the latest published version.
	cur     atomic.Pointer[db]
	durable Durable
	// writeMu makes the durable commit and the publication one step, so
	// the order of durable writes is the order readers observe.
	writeMu sync.Mutex
	// watchers are told of every committed write (Subscribe), under
	// writeMu; watchSeq names the next one.
	watchers map[int]func(*Snapshot, []Change)
	watchSeq int
	// attemptKeys are the containers' attempt index keys, written under
	// writeMu; an attempt's is dropped with the attempt.
	attemptKeys attemptKeys
}

// Change is one record a committed write transaction inserted, replaced
// or deleted: Before is nil for an insert, After for a deletion. Records
// are shared and must not be modified.
type Change struct {
	Table         string
	Before, After any
}

// Subscribe calls fn after every write transaction that commits changes,
// with a snapshot of the store as that transaction left it and the
// changes it made (several writes of one record collapsed into one), in
// commit order: the changes a controller's workqueue is fed from, in the
// place of a periodic full read of the tables. fn runs while writers
// wait, so it must not block nor write to the store. The returned func
// ends the subscription.
func (s *Store) Subscribe(fn func(*Snapshot, []Change)) (cancel func()) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.watchers == nil {
		s.watchers = map[int]func(*Snapshot, []Change){}
	}
	id := s.watchSeq
	s.watchSeq++
	s.watchers[id] = fn
	return func() {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		delete(s.watchers, id)
	}
}

// Open builds a store from what durable holds.
func Open(durable Durable) (*Store, error) {
	s := &Store{durable: durable, attemptKeys: attemptKeys{}}
	w := &WriteTxn{reader: reader{db: newDB(s.attemptKeys)}, attemptKeys: s.attemptKeys}
	err := durable.Load(func(table, key string, value []byte) error {
		newObj, ok := durableTables[table]
		if !ok {
			return fmt.Errorf("state: stored record %s/%s: unknown table", table, key)
		}
		obj := newObj()
		if err := json.Unmarshal(value, obj); err != nil {
			return fmt.Errorf("state: stored record %s/%s: %w", table, key, err)
		}
		return w.insert(table, key, obj)
	})
	if err != nil {
		return nil, err
	}
	s.cur.Store(w.db)
	return s, nil
}

// Close closes the durable backend.
func (s *Store) Close() error { return s.durable.Close() }

// Snapshot returns a consistent read-only view. It never blocks writers.
func (s *Store) Snapshot() *Snapshot {
	return &Snapshot{reader{db: s.cur.Load()}}
}

// Update runs fn in the single write transaction. The changes become
// visible, and Update returns nil, only once they are durable; if fn or the
// durable commit fails, nothing changes.
func (s *Store) Update(fn func(*WriteTxn) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	cur := s.cur.Load()
	w := &WriteTxn{reader: reader{db: cur.clone()}, track: len(s.watchers) > 0, attemptKeys: s.attemptKeys}
	if err := fn(w); err != nil {
		return err
	}
	if len(w.ops) > 0 {
		if err := s.durable.Commit(w.ops); err != nil {
			return fmt.Errorf("state: persist: %w", err)
		}
	}
	if w.nodesWritten {
		w.db.nodesChanged = make(chan struct{})
	}
	s.cur.Store(w.db)
	if w.nodesWritten {
		close(cur.nodesChanged) // after the publication, so that a woken reader sees it
	}
	if changes := w.changes(); len(changes) > 0 && len(s.watchers) > 0 {
		snap := s.Snapshot()
		for _, fn := range s.watchers {
			fn(snap, changes)
		}
	}
	return nil
}

// Snapshot is a point-in-time view of the store. Records it returns are
// shared and must not be modified.
type Snapshot struct{ reader }

// WriteTxn is the write transaction Update hands out. It reads its own
// writes.
type WriteTxn struct {
	reader
	ops []Op
	// track records the writes as Changes, for subscribers.
	track   bool
	written []written
	// nodesWritten is whether a node was inserted, replaced or deleted.
	nodesWritten bool
	attemptKeys  attemptKeys
}

// written is one write of a record, in the order of the transaction's
// writes.
type written struct {
	table, key string
	change     Change
}

// changes returns what the transaction changed, a record written several
// times once, at the place of its last write, with the value it had
// before the transaction (as go-memdb's Txn.Changes does): a record
// inserted then deleted is no change.
func (w *WriteTxn) changes() []Change {
	type id struct{ table, key string }
	first, last := map[id]any{}, map[id]int{}
	for i, c := range w.written {
		k := id{c.table, c.key}
		if _, ok := last[k]; !ok {
			first[k] = c.change.Before
		}
		last[k] = i
	}
	var out []Change
	for i, c := range w.written {
		k := id{c.table, c.key}
		if last[k] != i {
			continue
		}
		c.change.Before = first[k]
		if c.change.Before == nil && c.change.After == nil {
			continue
		}
		out = append(out, c.change)
	}
	return out
}

// insert writes obj to its table, recording the change.
func (w *WriteTxn) insert(table, key string, obj any) error {
	var err error
	var before any
	switch o := obj.(type) {
	case *records.Application:
		before, err = insert(w.db.apps, o)
	case *records.Attempt:
		before, err = insert(w.db.attempts, o)
	case *records.Container:
		before, err = insert(w.db.containers, o)
	case *records.DelegationToken:
		before, err = insert(w.db.tokens, o)
	case *records.Node:
		before, err = insert(w.db.nodes, o)
		w.nodesWritten = true
	default:
		err = fmt.Errorf("unexpected %T", obj)
	}
	if err != nil {
		return fmt.Errorf("state: insert %s/%s: %w", table, key, err)
	}
	if w.track {
		w.written = append(w.written, written{table, key, Change{Table: table, Before: before, After: obj}})
	}
	return nil
}

// insert puts obj into tb and returns the record it replaced, as an any
// that is nil (not a nil *T) when there was none.
func insert[T any](tb cowtable.Table[T], obj *T) (any, error) {
	old := tb.Get(tb.ID(obj))
	if err := tb.Insert(obj); err != nil {
		return nil, err
	}
	if old == nil {
		return nil, nil
	}
	return old, nil
}

// remove deletes the record with key from tb and returns it, or nil (an
// untyped nil) when tb has none.
func remove[T any](tb cowtable.Table[T], key string) any {
	old := tb.Get(key)
	if old == nil {
		return nil
	}
	_ = tb.Delete(key) // held, so found
	return old
}

func (w *WriteTxn) put(table, key string, obj any) error {
	if err := w.insert(table, key, obj); err != nil {
		return err
	}
	if _, ok := durableTables[table]; ok {
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("state: encode %s/%s: %w", table, key, err)
		}
		w.ops = append(w.ops, Op{Table: table, Key: key, Value: b})
	}
	return nil
}

// delete removes the record with key from table; a missing one is no
// error (nor a change).
func (w *WriteTxn) delete(table, key string) error {
	var old any
	switch table {
	case TableApplications:
		old = remove(w.db.apps, key)
	case TableAttempts:
		old = remove(w.db.attempts, key)
		if a, ok := old.(*records.Attempt); ok {
			delete(w.attemptKeys, a.ID)
		}
	case TableContainers:
		old = remove(w.db.containers, key)
	case TableTokens:
		old = remove(w.db.tokens, key)
	case TableNodes:
		old = remove(w.db.nodes, key)
		w.nodesWritten = w.nodesWritten || old != nil
	default:
		return fmt.Errorf("state: delete %s/%s: unknown table", table, key)
	}
	if old == nil {
		return nil
	}
	if w.track {
		w.written = append(w.written, written{table, key, Change{Table: table, Before: old}})
	}
	if _, ok := durableTables[table]; ok {
		w.ops = append(w.ops, Op{Table: table, Key: key})
	}
	return nil
}

// PutApplication inserts or replaces an application. Pass a fresh copy:
// stored records are shared with readers.
func (w *WriteTxn) PutApplication(a *records.Application) error {
	return w.put(TableApplications, a.Key(), a)
}

// PutAttempt inserts or replaces an attempt.
func (w *WriteTxn) PutAttempt(a *records.Attempt) error { return w.put(TableAttempts, a.Key(), a) }

// PutContainer inserts or replaces a container.
func (w *WriteTxn) PutContainer(c *records.Container) error {
	return w.put(TableContainers, c.Key(), c)
}

// PutNode inserts or replaces a node.
func (w *WriteTxn) PutNode(n *records.Node) error { return w.put(TableNodes, n.Key(), n) }

// PutToken inserts or replaces a delegation token.
func (w *WriteTxn) PutToken(t *records.DelegationToken) error { return w.put(TableTokens, t.Key(), t) }

// DeleteToken removes a delegation token.
func (w *WriteTxn) DeleteToken(seq int32) error {
	return w.delete(TableTokens, (&records.DelegationToken{Sequence: seq}).Key())
}

// DeleteNode removes a node.
func (w *WriteTxn) DeleteNode(id string) error { return w.delete(TableNodes, id) }

// DeleteApplication removes an application with its attempts and
// containers: the removal of a completed application YARN's RMAppManager
// no longer retains. YARN's RMStateStore.removeApplication takes the
// application and its attempts in one operation; YARN keeps no containers
// in its store, here they go with their application, so that no record
// outlives it.
func (w *WriteTxn) DeleteApplication(id records.ApplicationID) error {
	key := id.String()
	for _, c := range w.ContainersOfApp(id) {
		if err := w.delete(TableContainers, c.Key()); err != nil {
			return err
		}
	}
	for _, a := range w.AttemptsOf(id) {
		if err := w.delete(TableAttempts, a.Key()); err != nil {
			return err
		}
	}
	return w.delete(TableApplications, key)
}

// reader holds the queries shared by snapshots and write transactions.
type reader struct{ db *db }

// scan returns what a scan of a table or index passes on.
func scan[T any](ascend func(string, func(*T) bool), prefix string) []*T {
	var out []*T
	ascend(prefix, func(o *T) bool {
		out = append(out, o)
		return true
	})
	return out
}

// Application returns the application with the given id, or nil.
func (r reader) Application(id records.ApplicationID) *records.Application {
	return r.db.apps.Get(id.String())
}

// ApplicationFilter selects applications as YARN's GetApplicationsRequest
// and the REST /apps query do. Empty fields do not filter; within a field
// any value matches. Types and tags match case-insensitively.
type ApplicationFilter struct {
	States                     []records.AppState
	Queues, Users              []string
	Types, Tags                []string
	Name                       string
	StartedBegin, StartedEnd   int64
	FinishedBegin, FinishedEnd int64
	// Limit keeps the first Limit matches in id order; 0 keeps all.
	Limit int
}

// Applications returns the matching applications in id order.
func (r reader) Applications(f ApplicationFilter) []*records.Application {
	// Walk the most selective index the filter names, then check the rest.
	var candidates []*records.Application
	switch {
	case len(f.States) > 0:
		for _, s := range f.States {
			candidates = append(candidates, r.db.apps.By(appsByState, string(s))...)
		}
	case len(f.Queues) > 0:
		for _, q := range f.Queues {
			candidates = append(candidates, r.db.apps.By(appsByQueue, q)...)
		}
	case len(f.Users) > 0:
		for _, u := range f.Users {
			candidates = append(candidates, r.db.apps.By(appsByUser, u)...)
		}
	default:
		candidates = r.db.apps.All()
	}
	out := candidates[:0:0]
	for _, a := range candidates {
		if f.matches(a) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *records.Application) int { return a.ID.Compare(b.ID) })
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out
}

func (f ApplicationFilter) matches(a *records.Application) bool {
	if len(f.States) > 0 && !slices.Contains(f.States, a.State) {
		return false
	}
	if len(f.Queues) > 0 && !slices.Contains(f.Queues, a.Queue) {
		return false
	}
	if len(f.Users) > 0 && !slices.Contains(f.Users, a.User) {
		return false
	}
	if len(f.Types) > 0 && !slices.ContainsFunc(f.Types, func(t string) bool { return strings.EqualFold(t, a.Type) }) {
		return false
	}
	if len(f.Tags) > 0 && !slices.ContainsFunc(f.Tags, func(t string) bool {
		return slices.ContainsFunc(a.Tags, func(at string) bool { return strings.EqualFold(t, at) })
	}) {
		return false
	}
	if f.Name != "" && f.Name != a.Name {
		return false
	}
	if f.StartedBegin > 0 && a.StartTime < f.StartedBegin || f.StartedEnd > 0 && a.StartTime > f.StartedEnd {
		return false
	}
	if f.FinishedBegin > 0 && (a.FinishTime == 0 || a.FinishTime < f.FinishedBegin) ||
		f.FinishedEnd > 0 && (a.FinishTime == 0 || a.FinishTime > f.FinishedEnd) {
		return false
	}
	return true
}

// CompletedApplications returns the applications in a final state
// (FINISHED, FAILED, KILLED) in the order they completed, the oldest
// first: by finish time, and by id among those that finished within one
// millisecond.
func (r reader) CompletedApplications() []*records.Application {
	return scan(func(p string, fn func(*records.Application) bool) { r.db.apps.AscendBy(appsCompleted, p, fn) }, "")
}

// Attempt returns the attempt with the given id, or nil.
func (r reader) Attempt(id records.AttemptID) *records.Attempt {
	return r.db.attempts.Get(id.String())
}

// AttemptsOf returns an application's attempts in id order.
func (r reader) AttemptsOf(app records.ApplicationID) []*records.Attempt {
	out := r.db.attempts.By(attemptsByApp, app.String())
	slices.SortFunc(out, func(a, b *records.Attempt) int { return cmp.Compare(a.ID.ID, b.ID.ID) })
	return out
}

// Container returns the container with the given id, or nil.
func (r reader) Container(id records.ContainerID) *records.Container {
	return r.db.containers.Get(id.String())
}

// ContainerKey returns the store's own copy of a container's key
// (ContainerID.String) when it holds the container: what keeps many
// containers' ids (the scheduler's view) shares the store's strings.
func (r reader) ContainerKey(id records.ContainerID) string {
	return r.db.containers.StoredID(id.String())
}

// ContainersOfAttempt returns an attempt's containers in id order.
func (r reader) ContainersOfAttempt(id records.AttemptID) []*records.Container {
	return sortContainers(r.db.containers.By(containersByAttempt, id.String()))
}

// ContainersOfApp returns all containers of an application in id order.
func (r reader) ContainersOfApp(id records.ApplicationID) []*records.Container {
	// By the prefix its attempts' ids share: an index of their own would
	// hold an entry for each of 100,000 containers for a few listings.
	return sortContainers(scan(func(p string, fn func(*records.Container) bool) { r.db.containers.AscendBy(containersByAttempt, p, fn) }, id.AttemptPrefix()))
}

// NodesChanged returns a channel closed at the first write after this
// snapshot that changes any node: what is derived from all nodes can be
// kept until then.
func (r reader) NodesChanged() <-chan struct{} {
	return r.db.nodesChanged
}

// ContainersToAcquire returns an attempt's containers to hand to its AM
// (records.Container.ToAcquire), in id order.
func (r reader) ContainersToAcquire(id records.AttemptID) []*records.Container {
	return sortContainers(r.db.containers.By(containersUndelivered, undelivered(id, toAcquire)))
}

// ContainersToReport returns an attempt's completed containers its AM
// has yet to hear of (records.Container.ToReport), in id order.
func (r reader) ContainersToReport(id records.AttemptID) []*records.Container {
	return sortContainers(r.db.containers.By(containersUndelivered, undelivered(id, toReport)))
}

// PreemptingContainers returns the live containers under a preemption
// notice (PreemptDeadline set, not complete).
func (r reader) PreemptingContainers() []*records.Container {
	var out []*records.Container
	r.db.containers.AscendBy(containersPreempting, "", func(c *records.Container) bool {
		out = append(out, c)
		return true
	})
	return out
}

// PreemptingContainersOf returns an attempt's live containers under a
// preemption notice, in id order.
func (r reader) PreemptingContainersOf(id records.AttemptID) []*records.Container {
	return sortContainers(r.db.containers.By(containersPreempting, id.String()))
}

// ContainersOnNode returns the containers placed on a node, any state.
func (r reader) ContainersOnNode(node string) []*records.Container {
	return r.db.containers.By(containersByNode, node)
}

// ContainersByApp returns every container, grouped by application and in
// id order within each: for a listing of many applications, one pass over
// the table costs less than a lookup per application.
func (r reader) ContainersByApp() map[records.ApplicationID][]*records.Container {
	out := map[records.ApplicationID][]*records.Container{}
	for _, c := range r.db.containers.All() {
		out[c.ID.Attempt.App] = append(out[c.ID.Attempt.App], c)
	}
	for _, cs := range out {
		sortContainers(cs)
	}
	return out
}

func sortContainers(cs []*records.Container) []*records.Container {
	slices.SortFunc(cs, func(a, b *records.Container) int {
		if c := cmp.Compare(a.ID.Attempt.ID, b.ID.Attempt.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.ID.ID, b.ID.ID)
	})
	return cs
}

// Token returns the delegation token with the given sequence number, or nil.
func (r reader) Token(seq int32) *records.DelegationToken {
	return r.db.tokens.Get((&records.DelegationToken{Sequence: seq}).Key())
}

// Tokens returns all delegation tokens in sequence order.
func (r reader) Tokens() []*records.DelegationToken {
	return r.db.tokens.All()
}

// Node returns the node with the given id, or nil.
func (r reader) Node(id string) *records.Node { return r.db.nodes.Get(id) }

// Nodes returns the nodes in the given states (all when none), by id.
func (r reader) Nodes(states ...records.NodeState) []*records.Node {
	var out []*records.Node
	if len(states) == 0 {
		out = r.db.nodes.All()
	}
	for _, s := range states {
		out = append(out, r.db.nodes.By(nodesByState, string(s))...)
	}
	slices.SortFunc(out, func(a, b *records.Node) int { return strings.Compare(a.ID, b.ID) })
	return out
}
