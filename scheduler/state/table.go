package state

import (
	"fmt"
	"strings"

	"github.com/google/btree"
)

// degree is the B-trees' minimum degree: nodes hold 31 to 63 entries of
// 40 bytes (a write transaction's first write under a node copies about
// two kilobytes), and a 100,000-object table is three or four levels
// deep. Of 8, 16 and 32 (Kubernetes' choice for its B-trees), 32 applied
// issue 18's plan fastest and held the least per allocation.
const degree = 32

// entry is one row of a tree: the object under a key and, in a secondary
// index, its id, which orders objects of equal key (what go-memdb's
// non-unique indexes did by appending the id to the key). The strings are
// the object's own, not copies.
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

// index is a secondary index of a table: objects by a key computed from
// them, such as allocations by node.
type index[T any] struct {
	name string
	key  func(*T) string
}

// table is one kind of object held by id, with its secondary indexes, each
// a copy-on-write B-tree. A table value is immutable once its store
// published it: a write transaction works on a clone (see clone), whose
// first write under any B-tree node copies that node and later writes in
// the same transaction change the copy in place, so snapshots share every
// node a transaction did not touch and never see a write in progress.
// This replaces go-memdb, whose radix trees copied the path of every
// write again (past an 8,192-node cache per transaction) with a watch
// channel per node, and made garbage collection most of the scheduler's
// write cost (issue 18).
type table[T any] struct {
	name  string
	id    func(*T) string
	ids   *btree.BTreeG[entry[T]]
	by    []*btree.BTreeG[entry[T]]
	index []index[T]
}

func newTable[T any](name string, id func(*T) string, indexes ...index[T]) table[T] {
	t := table[T]{name: name, id: id, ids: btree.NewG(degree, less[T]), index: indexes}
	for range indexes {
		t.by = append(t.by, btree.NewG(degree, less[T]))
	}
	return t
}

// clone returns a table that shares t's trees lazily. It clones copies of
// t's trees, so that t itself, which snapshots may be reading, is never
// written (btree's Clone resets the copy-on-write context of the tree it
// is called on).
func (t table[T]) clone() table[T] {
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

// get returns the object with id, or nil.
func (t table[T]) get(id string) *T {
	e, ok := t.ids.Get(entry[T]{key: id})
	if !ok {
		return nil
	}
	return e.obj
}

// all returns every object in id order.
func (t table[T]) all() []*T {
	out := make([]*T, 0, t.ids.Len())
	t.ids.Ascend(func(e entry[T]) bool {
		out = append(out, e.obj)
		return true
	})
	return out
}

// allBy returns the objects whose index i key is key, in id order.
func (t table[T]) allBy(i int, key string) []*T {
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

// insert adds obj, or replaces the object of the same id. Every index
// needs a key: an object without one is refused, as go-memdb refused an
// object missing a value for an index that did not allow it.
func (t table[T]) insert(obj *T) error {
	id := t.id(obj)
	if id == "" {
		return fmt.Errorf("state: %s: object without id", t.name)
	}
	for _, ix := range t.index {
		if ix.key(obj) == "" {
			return fmt.Errorf("state: %s %s: missing value for index %s", t.name, id, ix.name)
		}
	}
	old, had := t.ids.ReplaceOrInsert(entry[T]{key: id, obj: obj})
	for i, ix := range t.index {
		k := ix.key(obj)
		if had {
			if ok := ix.key(old.obj); ok != k {
				t.by[i].Delete(entry[T]{key: ok, id: id})
			}
		}
		t.by[i].ReplaceOrInsert(entry[T]{key: k, id: id, obj: obj})
	}
	return nil
}

// delete removes the object with obj's id.
func (t table[T]) delete(obj *T) error {
	id := t.id(obj)
	old, had := t.ids.Delete(entry[T]{key: id})
	if !had {
		return fmt.Errorf("state: %s %s: %w", t.name, id, ErrNotFound)
	}
	for i, ix := range t.index {
		t.by[i].Delete(entry[T]{key: ix.key(old.obj), id: id})
	}
	return nil
}
