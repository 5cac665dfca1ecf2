// Package cowtable holds tables of objects by id with secondary indexes,
// each a copy-on-write B-tree, for stores that publish immutable versions
// to readers and let one writer at a time work on a clone: the scheduler's
// store (scheduler/state) and the ResourceManager's (rmfacade/state).
//
// It replaces go-memdb, whose radix trees copied the path of every write
// again (past an 8,192-node cache per transaction) with a watch channel
// per node, and made garbage collection most of the scheduler's write
// cost and most of the RM's live heap at a large cluster's size. It knows
// no object of either store — keys are strings computed by the store's
// functions — so it sits in protos/, below both rooms, beside the
// vocabulary they share.
package cowtable

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/btree"
)

// ErrNotFound is wrapped by Delete of an id the table does not hold.
var ErrNotFound = errors.New("not found")

// degree is the B-trees' minimum degree: nodes hold 31 to 63 entries of
// 40 bytes (a write transaction's first write under a node copies about
// two kilobytes), and a 100,000-object table is three or four levels
// deep. Of 8, 16 and 32 (Kubernetes' choice for its B-trees), 32 applied
// the scheduler's plans fastest and held the least per allocation.
const degree = 32

// entry is one row of a tree: the object under a key and, in a secondary
// index, its id, which orders objects of equal key (what go-memdb's
// non-unique indexes did by appending the id to the key). The strings are
// the object's own or its key function's, not copies.
type entry[T any] struct {
	key, id string
	obj     *T
}

func less[T any](a, b entry[T]) bool {
	if c := strings.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.id < b.id
}

// Index is a secondary index of a table: objects by a key computed from
// them, such as containers by node. Set Key, or Keys for an index of
// several keys per object (an application's tags); a multi-key object is
// found under each of its distinct keys. An empty key is no key.
type Index[T any] struct {
	Name string
	Key  func(*T) string
	Keys func(*T) []string
	// AllowMissing leaves an object without a key out of the index (for
	// instance containers not yet placed, in an index by node). Without
	// it, Insert refuses such an object, as go-memdb refused one missing
	// a value for an index that did not allow it. Default false.
	AllowMissing bool
}

// each calls fn with each of obj's keys under ix, skipping empty ones, and
// reports whether it had any.
func (ix *Index[T]) each(obj *T, fn func(string)) bool {
	if ix.Keys == nil {
		k := ix.Key(obj)
		if k == "" {
			return false
		}
		fn(k)
		return true
	}
	found := false
	for _, k := range ix.Keys(obj) {
		if k != "" {
			fn(k)
			found = true
		}
	}
	return found
}

// Table is one kind of object held by id, with its secondary indexes. A
// Table value is immutable once its store published it: a write
// transaction works on a Clone, whose first write under any B-tree node
// copies that node and later writes in the same transaction change the
// copy in place, so snapshots share every node a transaction did not
// touch and never see a write in progress. A Table is written by one
// goroutine at a time; published ones may be read by any number.
type Table[T any] struct {
	name  string
	id    func(*T) string
	ids   *btree.BTreeG[entry[T]]
	by    []*btree.BTreeG[entry[T]]
	index []Index[T]
}

// New returns an empty table of objects identified by id. Indexes are
// addressed by their position in indexes. It panics on an index with
// neither or both of Key and Keys, a programming error.
func New[T any](name string, id func(*T) string, indexes ...Index[T]) Table[T] {
	t := Table[T]{name: name, id: id, ids: btree.NewG(degree, less[T]), index: indexes}
	for _, ix := range indexes {
		if (ix.Key == nil) == (ix.Keys == nil) {
			panic(fmt.Sprintf("cowtable: %s index %s: want one of Key and Keys", name, ix.Name))
		}
		t.by = append(t.by, btree.NewG(degree, less[T]))
	}
	return t
}

// Clone returns a table that shares t's trees lazily. It clones copies of
// t's trees, so that t itself, which snapshots may be reading, is never
// written (btree's Clone resets the copy-on-write context of the tree it
// is called on).
func (t Table[T]) Clone() Table[T] {
	c := t
	c.ids = cloneTree(t.ids)
	c.by = make([]*btree.BTreeG[entry[T]], len(t.by))
	for i, b := range t.by {
		c.by[i] = cloneTree(b)
	}
	return c
}

func cloneTree[T any](b *btree.BTreeG[entry[T]]) *btree.BTreeG[entry[T]] {
	cp := *b
	return cp.Clone()
}

// Len returns the number of objects.
func (t Table[T]) Len() int { return t.ids.Len() }

// Get returns the object with id, or nil.
func (t Table[T]) Get(id string) *T {
	e, ok := t.ids.Get(entry[T]{key: id})
	if !ok {
		return nil
	}
	return e.obj
}

// All returns every object in id order.
func (t Table[T]) All() []*T {
	out := make([]*T, 0, t.ids.Len())
	t.Ascend("", func(o *T) bool {
		out = append(out, o)
		return true
	})
	return out
}

// Ascend calls fn with each object whose id starts with prefix, in id
// order, until fn returns false.
func (t Table[T]) Ascend(prefix string, fn func(*T) bool) {
	ascend(t.ids, prefix, fn)
}

// By returns the objects whose key in index i is key, in id order.
func (t Table[T]) By(i int, key string) []*T {
	var out []*T
	t.by[i].AscendGreaterOrEqual(entry[T]{key: key}, func(e entry[T]) bool {
		if e.key != key {
			return false
		}
		out = append(out, e.obj)
		return true
	})
	return out
}

// AscendBy calls fn with each object whose key in index i starts with
// prefix, in key order and then id order, until fn returns false. An empty
// prefix scans the whole index in order: with AllowMissing, only the
// objects that have a key. A multi-key object comes once per matching key.
func (t Table[T]) AscendBy(i int, prefix string, fn func(*T) bool) {
	ascend(t.by[i], prefix, fn)
}

func ascend[T any](b *btree.BTreeG[entry[T]], prefix string, fn func(*T) bool) {
	b.AscendGreaterOrEqual(entry[T]{key: prefix}, func(e entry[T]) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		return fn(e.obj)
	})
}

// Insert adds obj, or replaces the object of the same id. An object
// without id, or without a key for an index that does not allow one
// missing, is refused and the table left as it was.
func (t Table[T]) Insert(obj *T) error {
	if err := t.check(obj); err != nil {
		return err
	}
	id := t.id(obj)
	old, had := t.ids.ReplaceOrInsert(entry[T]{key: id, obj: obj})
	if had {
		// A replaced object's id string is kept, and the one just
		// computed dropped: the entries of every index and whoever took
		// the id from StoredID keep sharing one copy (a large cluster's RM
		// replaces each of 100,000 containers when its AM acquires it).
		// A second write of the path the first just copied; an insert of
		// a new object, the bulk of a plan's, costs nothing more.
		id = old.key
		t.ids.ReplaceOrInsert(entry[T]{key: id, obj: obj})
	}
	for i := range t.index {
		ix, tree := &t.index[i], t.by[i]
		if had {
			t.unindex(i, old.obj, id, obj)
		}
		ix.each(obj, func(k string) { tree.ReplaceOrInsert(entry[T]{key: k, id: id, obj: obj}) })
	}
	return nil
}

// unindex removes old's entries from index i, keeping those under a key
// that now (if now is not nil) has too, which Insert replaces in place.
func (t Table[T]) unindex(i int, old *T, id string, now *T) {
	ix, tree := &t.index[i], t.by[i]
	if now != nil && ix.Keys == nil {
		if k := ix.Key(old); k != "" && k != ix.Key(now) {
			tree.Delete(entry[T]{key: k, id: id})
		}
		return
	}
	var keep []string
	if now != nil {
		keep = ix.Keys(now)
	}
	ix.each(old, func(k string) {
		for _, n := range keep {
			if n == k {
				return
			}
		}
		tree.Delete(entry[T]{key: k, id: id})
	})
}

// Delete removes the object with id from the table and its indexes.
func (t Table[T]) Delete(id string) error {
	old, had := t.ids.Delete(entry[T]{key: id})
	if !had {
		return fmt.Errorf("cowtable: %s %q: %w", t.name, id, ErrNotFound)
	}
	for i := range t.index {
		t.unindex(i, old.obj, id, nil)
	}
	return nil
}

// StoredID returns the table's own copy of id when it holds an object of
// that id, else id: a caller keeping the id of many objects (the
// scheduler's view of the RM's containers) shares the table's strings
// instead of holding copies.
func (t Table[T]) StoredID(id string) string {
	if e, ok := t.ids.Get(entry[T]{key: id}); ok {
		return e.key
	}
	return id
}

// ID returns obj's id in t.
func (t Table[T]) ID(obj *T) string { return t.id(obj) }

// ErrBatch is wrapped by InsertNew and DeleteHeld for an object the batch
// may not name: an id the table already holds, or one it does not hold as
// that very object.
var ErrBatch = errors.New("batch refused")

// batchParallel is the smallest batch whose trees InsertNew and DeleteHeld
// write on a goroutine each; below it, starting the goroutines costs more
// than they save.
const batchParallel = 256

// InsertNew inserts objs, none of which the table may hold yet (nor two of
// them share an id), writing the tree by id and each index's tree on a
// goroutine of its own: a batch of a hundred thousand (a scheduling plan's
// allocations) then costs about its slowest tree's writes rather than the
// sum of them all, which for the B-trees' lookups (cache misses, mostly)
// is most of a large write's time.
//
// An object without id or without a required index key is refused before
// anything is written. An id the table holds already is found only while
// writing: the error wraps ErrBatch and the table is left part-written,
// to be dropped with its write transaction.
func (t Table[T]) InsertNew(objs []*T) error {
	for _, obj := range objs {
		if err := t.check(obj); err != nil {
			return err
		}
	}
	return t.eachTree(len(objs), func(tree *btree.BTreeG[entry[T]], ix *Index[T]) error {
		for _, obj := range objs {
			id := t.id(obj)
			if ix != nil {
				ix.each(obj, func(k string) { tree.ReplaceOrInsert(entry[T]{key: k, id: id, obj: obj}) })
				continue
			}
			if _, had := tree.ReplaceOrInsert(entry[T]{key: id, obj: obj}); had {
				return fmt.Errorf("cowtable: %s %q held already: %w", t.name, id, ErrBatch)
			}
		}
		return nil
	})
}

// DeleteHeld removes objs, each the very object the table holds under its
// id (as Get returned it), from the tree by id and each index's tree on a
// goroutine of its own, as InsertNew writes. Since each index's entries
// are found from the objects themselves, an object the table does not
// hold is found only while writing: the error wraps ErrBatch and the table
// is left part-written, to be dropped with its write transaction.
func (t Table[T]) DeleteHeld(objs []*T) error {
	return t.eachTree(len(objs), func(tree *btree.BTreeG[entry[T]], ix *Index[T]) error {
		for _, obj := range objs {
			id := t.id(obj)
			if ix != nil {
				ix.each(obj, func(k string) { tree.Delete(entry[T]{key: k, id: id}) })
				continue
			}
			if old, had := tree.Delete(entry[T]{key: id}); !had || old.obj != obj {
				return fmt.Errorf("cowtable: %s %q not held as given: %w", t.name, id, ErrBatch)
			}
		}
		return nil
	})
}

// check is Insert's refusal of an object without id or index key.
func (t Table[T]) check(obj *T) error {
	id := t.id(obj)
	if id == "" {
		return fmt.Errorf("cowtable: %s: object without id", t.name)
	}
	for i := range t.index {
		ix := &t.index[i]
		if !ix.AllowMissing && !ix.each(obj, func(string) {}) {
			return fmt.Errorf("cowtable: %s %s: missing value for index %s", t.name, id, ix.Name)
		}
	}
	return nil
}

// eachTree calls write with the tree by id (and a nil index) and with each
// index's tree, on a goroutine each for a batch of n ≥ batchParallel, and
// returns their errors joined. The trees share no node, so their writers
// do not race.
func (t Table[T]) eachTree(n int, write func(*btree.BTreeG[entry[T]], *Index[T]) error) error {
	errs := make([]error, 1+len(t.index))
	if n < batchParallel {
		errs[0] = write(t.ids, nil)
		for i := range t.index {
			errs[1+i] = write(t.by[i], &t.index[i])
		}
		return errors.Join(errs...)
	}
	var wg sync.WaitGroup
	for i := range t.index {
		wg.Go(func() { errs[1+i] = write(t.by[i], &t.index[i]) })
	}
	errs[0] = write(t.ids, nil)
	wg.Wait()
	return errors.Join(errs...)
}
