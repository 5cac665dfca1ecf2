// Package state is the scheduler's state store: tables of copy-on-write
// B-trees with explicit indexes, one writer at a time, and consistent
// snapshots for the scheduling cycle. Plans computed on a snapshot come
// back through ApplyPlan, which validates them against the state as it is
// then.
package state

import (
	"github.com/weft-sh/weft/protos/cowtable"
	"github.com/weft-sh/weft/scheduler/objects"
)

// Secondary index positions, per table.
const (
	appsByQueue     = 0
	appsReservingBy = 1

	requestsByApp = 0

	allocationsByApp  = 0
	allocationsByNode = 1
)

// db is one version of the store's tables. A published db is never
// written; a write transaction clones it and publishes the clone.
//
// The tables have only the indexes some query reads, since every index
// costs each write of its table and holds an entry per object:
// applications by queue (a cycle's leaves), those holding quota for a
// declared maximum by queue (each cycle's holds: a few of thousands),
// requests and allocations by application (a cycle's jobs, gang checks,
// DeleteApplication), allocations by node (DeleteNode).
type db struct {
	// index is the store index of the last write this version contains.
	index       uint64
	nodes       cowtable.Table[objects.Node]
	apps        cowtable.Table[objects.Application]
	requests    cowtable.Table[objects.Request]
	allocations cowtable.Table[objects.Allocation]
	queues      cowtable.Table[objects.QueueUsage]
}

func newDB() *db {
	return &db{
		nodes: cowtable.New("node", func(n *objects.Node) string { return n.ID }),
		apps: cowtable.New("application", func(a *objects.Application) string { return a.ID },
			cowtable.Index[objects.Application]{Name: "queue", Key: func(a *objects.Application) string { return a.Queue }},
			cowtable.Index[objects.Application]{Name: "reserving", AllowMissing: true, Key: func(a *objects.Application) string {
				if a.Reserve.IsZero() {
					return ""
				}
				return a.Queue
			}}),
		requests: cowtable.New("request", func(r *objects.Request) string { return r.ID },
			cowtable.Index[objects.Request]{Name: "app", Key: func(r *objects.Request) string { return r.AppID }}),
		allocations: cowtable.New("allocation", func(a *objects.Allocation) string { return a.ID },
			cowtable.Index[objects.Allocation]{Name: "app", Key: func(a *objects.Allocation) string { return a.AppID }},
			cowtable.Index[objects.Allocation]{Name: "node", Key: func(a *objects.Allocation) string { return a.NodeID }}),
		queues: cowtable.New("queue", func(q *objects.QueueUsage) string { return q.Path }),
	}
}

// clone returns a version of d for a write transaction.
func (d *db) clone() *db {
	return &db{index: d.index, nodes: d.nodes.Clone(), apps: d.apps.Clone(), requests: d.requests.Clone(),
		allocations: d.allocations.Clone(), queues: d.queues.Clone()}
}
