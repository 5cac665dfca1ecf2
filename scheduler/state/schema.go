// Package state is the scheduler's state store: go-memdb tables with
// explicit indexes, one writer at a time, and consistent snapshots for the
// scheduling cycle. Plans computed on a snapshot come back through
// ApplyPlan, which validates them against the state as it is then.
package state

import (
	memdb "github.com/hashicorp/go-memdb"

	"github.com/weft-sh/weft/protos/memkey"
	"github.com/weft-sh/weft/scheduler/objects"
)

// Table names.
const (
	TableNodes        = "nodes"
	TableApplications = "applications"
	TableRequests     = "requests"
	TableAllocations  = "allocations"
	TableQueues       = "queues"
	tableIndex        = "index"
)

// Index names.
const (
	indexID    = "id"
	indexQueue = "queue"
	indexApp   = "app"
	indexNode  = "node"
)

// indexRow holds the latest store index inside memdb itself, so a snapshot
// reads the index that matches its data.
type indexRow struct {
	Key   string
	Value uint64
}

// schema has only the indexes some query reads, since every index costs
// each write of its table a copied path of go-immutable-radix nodes (with
// a watch channel each) and holds an entry per object: applications by
// queue (a cycle's leaves), requests and allocations by application (a
// cycle's jobs, gang checks, DeleteApplication), allocations by node
// (DeleteNode). A queue/tier index over requests and allocations, never
// read, cost a fifth of an allocation's heap and of ApplyPlan's writes.
func schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableNodes: {Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: memkey.Index(func(n *objects.Node) string { return n.ID })},
		}},
		TableApplications: {Name: TableApplications, Indexes: map[string]*memdb.IndexSchema{
			indexID:    {Name: indexID, Unique: true, Indexer: memkey.Index(func(a *objects.Application) string { return a.ID })},
			indexQueue: {Name: indexQueue, Indexer: memkey.Index(func(a *objects.Application) string { return a.Queue })},
		}},
		TableRequests: {Name: TableRequests, Indexes: map[string]*memdb.IndexSchema{
			indexID:  {Name: indexID, Unique: true, Indexer: memkey.Index(func(r *objects.Request) string { return r.ID })},
			indexApp: {Name: indexApp, Indexer: memkey.Index(func(r *objects.Request) string { return r.AppID })},
		}},
		TableAllocations: {Name: TableAllocations, Indexes: map[string]*memdb.IndexSchema{
			indexID:   {Name: indexID, Unique: true, Indexer: memkey.Index(func(a *objects.Allocation) string { return a.ID })},
			indexApp:  {Name: indexApp, Indexer: memkey.Index(func(a *objects.Allocation) string { return a.AppID })},
			indexNode: {Name: indexNode, Indexer: memkey.Index(func(a *objects.Allocation) string { return a.NodeID })},
		}},
		TableQueues: {Name: TableQueues, Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: memkey.Index(func(q *objects.QueueUsage) string { return q.Path })},
		}},
		tableIndex: {Name: tableIndex, Indexes: map[string]*memdb.IndexSchema{
			indexID: {Name: indexID, Unique: true, Indexer: memkey.Index(func(r *indexRow) string { return r.Key })},
		}},
	}}
}
