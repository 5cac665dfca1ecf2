// Package state is the ResourceManager's state store: tables of
// copy-on-write B-trees (protos/cowtable) with explicit indexes, one
// writer at a time, and consistent snapshots for readers. Tables marked durable are written to a Durable backend before a
// write transaction commits, so whatever a caller was told succeeded
// survives a restart.
package state

import (
	"fmt"
	"strings"

	"github.com/weft-sh/weft/protos/cowtable"
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

// Secondary index positions, per table (cowtable.Index order in newDB).
const (
	appsByState = iota
	appsByQueue
	appsByUser
	appsByType
	appsByTag
	// appsCompleted holds only the applications in a final state, in the
	// order they completed: retention removes from its front.
	appsCompleted
)

const attemptsByApp = 0

const (
	containersByAttempt = iota
	containersByNode
	// containersPreempting holds the live containers under a preemption
	// notice, by attempt: each scheduling cycle checks their deadlines and
	// each allocate call tells its AM of its own, a handful among 100,000.
	containersPreempting
	// containersUndelivered holds the containers an AM has yet to be told
	// of, by attempt: each of its heartbeats asks, and most find none.
	containersUndelivered
)

const nodesByState = 0

// db is one version of the store's tables. A published db is never
// written; a write transaction clones it and publishes the clone.
type db struct {
	apps       cowtable.Table[records.Application]
	attempts   cowtable.Table[records.Attempt]
	containers cowtable.Table[records.Container]
	tokens     cowtable.Table[records.DelegationToken]
	nodes      cowtable.Table[records.Node]
	// nodesChanged is closed by the commit of the first later version
	// that changes a node; versions that share their nodes share it.
	nodesChanged chan struct{}
}

// attemptKeys holds one string per attempt id, the key of the attempt's
// containers in the "attempt" index: each container's entry then shares
// it rather than holding a copy (48 bytes of 550 per container).
// Index keys are computed by the store's one writer only (Insert and
// Delete run in Update, or in Open before the store is shared), so it
// needs no lock. A key dropped while some version still indexes
// containers under it is made again, equal, when next asked for.
type attemptKeys map[records.AttemptID]string

// of returns id's key, made the first time it is asked for.
func (k attemptKeys) of(id records.AttemptID) string {
	s, ok := k[id]
	if !ok {
		s = id.String()
		k[id] = s
	}
	return s
}

// newDB returns empty tables. Indexes without AllowMissing refuse an
// object without a key for them, as go-memdb's schemas do.
func newDB(keys attemptKeys) *db {
	type (
		app       = records.Application
		container = records.Container
	)
	return &db{
		apps: cowtable.New(TableApplications, (*app).Key,
			cowtable.Index[app]{Name: "state", Key: func(a *app) string { return string(a.State) }},
			cowtable.Index[app]{Name: "queue", Key: func(a *app) string { return a.Queue }},
			cowtable.Index[app]{Name: "user", Key: func(a *app) string { return a.User }},
			cowtable.Index[app]{Name: "type", Key: func(a *app) string { return strings.ToLower(a.Type) }},
			cowtable.Index[app]{Name: "tag", Keys: func(a *app) []string { return a.Tags }, AllowMissing: true},
			cowtable.Index[app]{Name: "completed", Key: completedKey, AllowMissing: true}),
		attempts: cowtable.New(TableAttempts, (*records.Attempt).Key,
			cowtable.Index[records.Attempt]{Name: "app", Key: func(a *records.Attempt) string { return a.ID.App.String() }}),
		containers: cowtable.New(TableContainers, (*container).Key,
			cowtable.Index[container]{Name: "attempt", Key: func(c *container) string { return keys.of(c.ID.Attempt) }},
			cowtable.Index[container]{Name: "node", Key: func(c *container) string { return c.Node }, AllowMissing: true},
			cowtable.Index[container]{Name: "preempting", Key: preemptingKey, AllowMissing: true},
			cowtable.Index[container]{Name: "undelivered", Key: undeliveredKey, AllowMissing: true}),
		tokens:       cowtable.New(TableTokens, (*records.DelegationToken).Key),
		nodes:        cowtable.New(TableNodes, (*records.Node).Key, cowtable.Index[records.Node]{Name: "state", Key: func(n *records.Node) string { return string(n.State) }}),
		nodesChanged: make(chan struct{}),
	}
}

// clone returns a version of d for a write transaction.
func (d *db) clone() *db {
	return &db{apps: d.apps.Clone(), attempts: d.attempts.Clone(), containers: d.containers.Clone(),
		tokens: d.tokens.Clone(), nodes: d.nodes.Clone(), nodesChanged: d.nodesChanged}
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
// "preempting" index, by attempt, and leaves every other out.
func preemptingKey(c *records.Container) string {
	if c.PreemptDeadline == 0 || c.State == records.ContainerComplete {
		return ""
	}
	return c.ID.Attempt.String()
}
