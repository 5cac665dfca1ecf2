// Package state is the ResourceManager's state store: go-memdb tables with
// explicit indexes, one writer at a time, and consistent snapshots for
// readers. Tables marked durable are written to a Durable backend before a
// write transaction commits, so whatever a caller was told succeeded
// survives a restart.
package state

import (
	"fmt"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/weft-sh/weft/rmfacade/records"
)

// Table names.
const (
	TableApplications = "applications"
	TableAttempts     = "attempts"
	TableContainers   = "containers"
	TableNodes        = "nodes"
	TableTokens       = "delegation_tokens"
)

// durableTables are persisted; nodes are re-reported after a restart.
var durableTables = map[string]func() any{
	TableApplications: func() any { return &records.Application{} },
	TableAttempts:     func() any { return &records.Attempt{} },
	TableContainers:   func() any { return &records.Container{} },
	TableTokens:       func() any { return &records.DelegationToken{} },
}

func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableApplications: {Name: TableApplications, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: keyIndex(func(a *records.Application) string { return a.Key() })},
			"state": {Name: "state", Indexer: keyIndex(func(a *records.Application) string { return string(a.State) })},
			"queue": {Name: "queue", Indexer: keyIndex(func(a *records.Application) string { return a.Queue })},
			"user":  {Name: "user", Indexer: keyIndex(func(a *records.Application) string { return a.User })},
			"type":  {Name: "type", Indexer: keyIndex(func(a *records.Application) string { return strings.ToLower(a.Type) })},
			"tag":   {Name: "tag", AllowMissing: true, Indexer: multiKeyIndex(func(a *records.Application) []string { return a.Tags })},
		}},
		TableAttempts: {Name: TableAttempts, Indexes: map[string]*memdb.IndexSchema{
			"id":  {Name: "id", Unique: true, Indexer: keyIndex(func(a *records.Attempt) string { return a.Key() })},
			"app": {Name: "app", Indexer: keyIndex(func(a *records.Attempt) string { return a.ID.App.String() })},
		}},
		TableContainers: {Name: TableContainers, Indexes: map[string]*memdb.IndexSchema{
			"id":      {Name: "id", Unique: true, Indexer: keyIndex(func(c *records.Container) string { return c.Key() })},
			"app":     {Name: "app", Indexer: keyIndex(func(c *records.Container) string { return c.ID.Attempt.App.String() })},
			"attempt": {Name: "attempt", Indexer: keyIndex(func(c *records.Container) string { return c.ID.Attempt.String() })},
			"node":    {Name: "node", AllowMissing: true, Indexer: keyIndex(func(c *records.Container) string { return c.Node })},
		}},
		TableTokens: {Name: TableTokens, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: keyIndex(func(t *records.DelegationToken) string { return t.Key() })},
		}},
		TableNodes: {Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: keyIndex(func(n *records.Node) string { return n.ID })},
			"state": {Name: "state", Indexer: keyIndex(func(n *records.Node) string { return string(n.State) })},
		}},
	}}
}

// keyIndex indexes objects of type *T by a string derived from them.
// memdb's field indexers cannot reach computed keys such as formatted ids.
type keyIndexer[T any] struct{ key func(*T) string }

func keyIndex[T any](key func(*T) string) memdb.Indexer { return keyIndexer[T]{key: key} }

func (ix keyIndexer[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("indexer: unexpected %T", obj)
	}
	k := ix.key(o)
	if k == "" {
		return false, nil, nil
	}
	return true, []byte(k + "\x00"), nil
}

func (ix keyIndexer[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("indexer: want one argument, got %d", len(args))
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("indexer: want a string, got %T", args[0])
	}
	return []byte(s + "\x00"), nil
}

// multiKeyIndexer indexes objects under several string keys (tags).
type multiKeyIndexer[T any] struct{ keys func(*T) []string }

func multiKeyIndex[T any](keys func(*T) []string) memdb.Indexer {
	return multiKeyIndexer[T]{keys: keys}
}

func (ix multiKeyIndexer[T]) FromObject(obj any) (bool, [][]byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return false, nil, fmt.Errorf("indexer: unexpected %T", obj)
	}
	var out [][]byte
	for _, k := range ix.keys(o) {
		if k != "" {
			out = append(out, []byte(k+"\x00"))
		}
	}
	return len(out) > 0, out, nil
}

func (ix multiKeyIndexer[T]) FromArgs(args ...any) ([]byte, error) {
	return keyIndexer[T]{}.FromArgs(args...)
}
