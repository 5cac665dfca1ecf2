// Package objects holds the scheduler's own objects. They are plain values
// with no locks: the state store owns them, and an object read from it is
// shared with other readers and must never be modified; write a copy.
package objects

import (
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
)

// Node is a machine's reclaimable capacity as offered to Weft.
type Node struct {
	ID string
	// Allocatable is the reclaimable capacity Weft may use (for instance
	// Katalyst's reclaimed_millicpu/memory or Koordinator's batch-cpu).
	Allocatable quota.Resource
	// NonWeftUsed is taken by pods Weft does not own. It only reduces free
	// capacity: those pods are never preemption victims.
	NonWeftUsed quota.Resource
	// Allocated is the sum of Weft allocations on the node. The store
	// maintains it with every allocation change so that a cycle need not
	// scan all allocations to know what is free.
	Allocated quota.Resource
	// Releasing is the part of Allocated held by preemption victims that
	// have been notified: capacity that will be free soon, so the next
	// cycle does not pick more victims for the same need.
	Releasing quota.Resource
	// Cordoned nodes keep their allocations but take no new ones.
	Cordoned bool
	// ModifyIndex is the store index of the last change.
	ModifyIndex uint64
}

// Free is what is left for new Weft allocations; negative dimensions mean
// the online load grew into capacity Weft already uses.
func (n *Node) Free() quota.Resource {
	f := n.Allocatable.Sub(n.NonWeftUsed)
	f.SubInPlace(n.Allocated)
	return f
}

// Application is a Hadoop or Spark job.
type Application struct {
	ID    string
	Queue string // full leaf path, "root.etl"
	User  string
	// Priority orders applications within a queue, higher first.
	Priority int32
	// Submitted orders applications of equal priority, older first.
	Submitted time.Time
	// MinMembers is the size of the gang: how many high and medium
	// requests must run together before any of them runs. Zero means the
	// gang is whatever high and medium requests are pending.
	MinMembers int
	// Reserve is queue quota held for the job's declared maximum: what it
	// may still grow into. Other applications' placements leave it free in
	// the queue and its ancestors, so jobs scaling at the same time cannot
	// take each other's declared headroom; the job's own placements use it.
	Reserve quota.Resource
	// ModifyIndex is the store index of the last change.
	ModifyIndex uint64
}

// Request is one pending pod.
type Request struct {
	ID       string
	AppID    string
	Queue    string // copied from the application: what the request is charged to
	Tier     records.Tier
	Resource quota.Resource
	// Nodes, when set, are the only nodes the request may go to: what its
	// pod's node selector, affinity and tolerations allow, evaluated by
	// the shim, which knows Kubernetes. Nil allows every node. Shared and
	// read-only, like the rest of the object.
	Nodes map[string]bool
	// CreateIndex orders requests of one application and tier.
	CreateIndex uint64
}

// Allocation is a placed pod.
type Allocation struct {
	ID       string // the request id it came from
	AppID    string
	Queue    string
	NodeID   string
	Tier     records.Tier
	Resource quota.Resource
	// Preempting marks a victim chosen by an applied plan: the shim gives
	// the pod advance notice and the allocation is released when it exits.
	// Its capacity is still in use until then.
	Preempting  bool
	CreateIndex uint64
	ModifyIndex uint64
}

// QueueUsage is the running total for one queue of the hierarchy, leaf or
// parent: what its applications hold and what they still ask for. The
// store keeps it current so that quota checks and fair shares never need
// to scan allocations.
type QueueUsage struct {
	Path    string
	Used    quota.Resource
	Pending quota.Resource
	// Releasing is the part of Used held by notified preemption victims.
	Releasing   quota.Resource
	ModifyIndex uint64
}
