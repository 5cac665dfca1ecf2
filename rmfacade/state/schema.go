// Package state is the ResourceManager's state store: go-memdb tables with
// explicit indexes, one writer at a time, and consistent snapshots for
// readers. Tables marked durable are written to a Durable backend before a
// write transaction commits, so whatever a caller was told succeeded
// survives a restart.
package state

import (
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/scheduler/state/memkey"
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
			"id":    {Name: "id", Unique: true, Indexer: memkey.Index(func(a *records.Application) string { return a.Key() })},
			"state": {Name: "state", Indexer: memkey.Index(func(a *records.Application) string { return string(a.State) })},
			"queue": {Name: "queue", Indexer: memkey.Index(func(a *records.Application) string { return a.Queue })},
			"user":  {Name: "user", Indexer: memkey.Index(func(a *records.Application) string { return a.User })},
			"type":  {Name: "type", Indexer: memkey.Index(func(a *records.Application) string { return strings.ToLower(a.Type) })},
			"tag":   {Name: "tag", AllowMissing: true, Indexer: memkey.MultiIndex(func(a *records.Application) []string { return a.Tags })},
		}},
		TableAttempts: {Name: TableAttempts, Indexes: map[string]*memdb.IndexSchema{
			"id":  {Name: "id", Unique: true, Indexer: memkey.Index(func(a *records.Attempt) string { return a.Key() })},
			"app": {Name: "app", Indexer: memkey.Index(func(a *records.Attempt) string { return a.ID.App.String() })},
		}},
		TableContainers: {Name: TableContainers, Indexes: map[string]*memdb.IndexSchema{
			"id":      {Name: "id", Unique: true, Indexer: memkey.Index(func(c *records.Container) string { return c.Key() })},
			"app":     {Name: "app", Indexer: memkey.Index(func(c *records.Container) string { return c.ID.Attempt.App.String() })},
			"attempt": {Name: "attempt", Indexer: memkey.Index(func(c *records.Container) string { return c.ID.Attempt.String() })},
			"node":    {Name: "node", AllowMissing: true, Indexer: memkey.Index(func(c *records.Container) string { return c.Node })},
		}},
		TableTokens: {Name: TableTokens, Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: memkey.Index(func(t *records.DelegationToken) string { return t.Key() })},
		}},
		TableNodes: {Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
			"id":    {Name: "id", Unique: true, Indexer: memkey.Index(func(n *records.Node) string { return n.ID })},
			"state": {Name: "state", Indexer: memkey.Index(func(n *records.Node) string { return string(n.State) })},
		}},
	}}
}
