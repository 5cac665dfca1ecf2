// Package memkey holds the ResourceManager facade's go-memdb indexers over
// keys computed from an object — memdb's reflection-based field indexers
// cannot reach formatted ids and are slower — and typed queries. (The
// scheduler's store shared them until it left go-memdb for copy-on-write
// B-trees, which cost a fifth of the heap per allocation.)
package memkey

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
)

// Indexer indexes objects of type *T by a string derived from them; an
// empty key leaves the object out of the index.
type Indexer[T any] struct{ Key func(*T) string }

// Index returns an Indexer over key.
func Index[T any](key func(*T) string) memdb.Indexer { return Indexer[T]{Key: key} }

// FromObject implements memdb.SingleIndexer.
func (ix Indexer[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("indexer: unexpected %T", obj)
	}
	k := ix.Key(o)
	if k == "" {
		return false, nil, nil
	}
	return true, []byte(k + "\x00"), nil
}

// FromArgs implements memdb.Indexer: one string argument.
func (ix Indexer[T]) FromArgs(args ...any) ([]byte, error) { return fromArgs(args) }

func fromArgs(args []any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("indexer: want one argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("indexer: want a string, got %T", args[0])
	}
	return []byte(s + "\x00"), nil
}

// PrefixFromArgs implements memdb.PrefixIndexer: the "<index>_prefix"
// lookups, of every key that starts with one string argument.
func (ix Indexer[T]) PrefixFromArgs(args ...any) ([]byte, error) {
	b, err := fromArgs(args)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil // without the terminator
}

// MultiIndexer indexes objects under several string keys (tags).
type MultiIndexer[T any] struct{ Keys func(*T) []string }

// MultiIndex returns a MultiIndexer over keys.
func MultiIndex[T any](keys func(*T) []string) memdb.Indexer { return MultiIndexer[T]{Keys: keys} }

// FromObject implements memdb.MultiIndexer.
func (ix MultiIndexer[T]) FromObject(obj any) (bool, [][]byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("indexer: unexpected %T", obj)
	}
	var out [][]byte
	for _, k := range ix.Keys(o) {
		if k != "" {
			out = append(out, []byte(k+"\x00"))
		}
	}
	return len(out) > 0, out, nil
}

// FromArgs implements memdb.Indexer: one string argument.
func (ix MultiIndexer[T]) FromArgs(args ...any) ([]byte, error) { return fromArgs(args) }

// First returns the first object of an index matching key, or nil.
func First[T any](tx *memdb.Txn, table, index, key string) *T {
	obj, err := tx.First(table, index, key)
	if err != nil || obj == nil {
		return nil
	}
	return obj.(*T)
}

// All returns every object of an index matching args.
func All[T any](tx *memdb.Txn, table, index string, args ...any) []*T {
	it, err := tx.Get(table, index, args...)
	if err != nil {
		return nil
	}
	var out []*T
	for obj := it.Next(); obj != nil; obj = it.Next() {
		out = append(out, obj.(*T))
	}
	return out
}
