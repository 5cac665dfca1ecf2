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

	"github.com/weft-sh/weft/protos/memkey"
	"github.com/weft-sh/weft/protos/yarn/records"
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
			// completed holds only the applications in a final state, in
			// the order they completed: retention removes from its front.
			"completed": {Name: "completed", AllowMissing: true, Indexer: memkey.Index(completedKey)},
		}},
		TableAttempts: {Name: TableAttempts, Indexes: map[string]*memdb.IndexSchema{
			"id":  {Name: "id", Unique: true, Indexer: memkey.Index(func(a *records.Attempt) string { return a.Key() })},
			"app": {Name: "app", Indexer: memkey.Index(func(a *records.Attempt) string { return a.ID.App.String() })},
		}},
		TableContainers: {Name: TableContainers, Indexes: map[string]*memdb.IndexSchema{
			"id":      {Name: "id", Unique: true, Indexer: memkey.Index(func(c *records.Container) string { return c.Key() })},
			"attempt": {Name: "attempt", Indexer: memkey.Index(func(c *records.Container) string { return c.ID.Attempt.String() })},
			"node":    {Name: "node", AllowMissing: true, Indexer: memkey.Index(func(c *records.Container) string { return c.Node })},
			// Live containers under a preemption notice, whose deadline each
			// scheduling cycle checks: a handful among 100,000.
			"preempting": {Name: "preempting", AllowMissing: true, Indexer: memkey.Index(preemptingKey)},
			// Containers an AM has yet to be told of, by attempt: each of
			// its heartbeats asks, and most find none.
			"undelivered": {Name: "undelivered", AllowMissing: true, Indexer: memkey.Index(undeliveredKey)},
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

// completedKey orders a completed application by when it completed: its
// finish time, then its id for those that finished within one millisecond.
// YARN's RMAppManager keeps the same order in a list in memory, and after a
// restart rebuilds it in application id order (RMState's TreeMap); the
// finish time is stored, so here the order survives a restart. Numbers are
// zero-padded so that the keys sort as the numbers do. An application not
// in a final state has no key and is not in the index.
func completedKey(a *records.Application) string {
	if !a.State.Terminal() {
		return ""
	}
	return fmt.Sprintf("%020d/%020d/%010d", max(a.FinishTime, 0), max(a.ID.ClusterTimestamp, 0), max(a.ID.ID, 0))
}

// undeliveredKey puts a container its AM has yet to be given (ToAcquire)
// or told completed (ToReport) in the "undelivered" index under its
// attempt and which, and leaves every other out.
func undeliveredKey(c *records.Container) string {
	switch {
	case c.ToAcquire():
		return undelivered(c.ID.Attempt, toAcquire)
	case c.ToReport():
		return undelivered(c.ID.Attempt, toReport)
	}
	return ""
}

const (
	toAcquire = "acquire"
	toReport  = "report"
)

func undelivered(attempt records.AttemptID, which string) string {
	return attempt.String() + "/" + which
}

// preemptingKey puts a live container under a preemption notice in the
// "preempting" index, and leaves every other out.
func preemptingKey(c *records.Container) string {
	if c.PreemptDeadline == 0 || c.State == records.ContainerComplete {
		return ""
	}
	return "notified"
}
