package objects

import "github.com/weft-sh/weft/protos/yarn/records"

// Plan is what one scheduling cycle proposes. It is computed on a snapshot
// and is only a proposal: the plan applier checks it against the state as
// it is when the plan arrives and applies what still holds.
type Plan struct {
	// SnapshotIndex is the store index the cycle read.
	SnapshotIndex uint64
	// Units are applied in order, each all or nothing.
	Units []Unit
	// Preemptions name victims to notify. They do not place anything: the
	// request they make room for is placed by a later cycle once the
	// victims have exited.
	Preemptions []Preemption
}

// Unit is a group of placements applied together: a job's gang minimum,
// or a single elastic request.
type Unit struct {
	AppID      string
	Gang       bool
	Placements []Placement
}

// Placement puts one pending request on one node.
type Placement struct {
	RequestID string
	NodeID    string
}

// Preemption names one victim allocation.
type Preemption struct {
	AllocationID string
	NodeID       string
	// VictimQueue lends the capacity; ForQueue is below its guarantee and
	// reclaims it for the request ForRequest.
	VictimQueue string
	ForQueue    string
	ForRequest  string
	Tier        records.Tier
}

// PlanResult reports what the applier did with a plan.
type PlanResult struct {
	// Index is the store index the plan was applied at.
	Index    uint64
	Applied  []Unit
	Rejected []Rejection
	// Preempted are victims now marked Preempting; stale preemptions (the
	// allocation is gone or already preempting) are dropped silently.
	Preempted []Preemption
}

// Rejection is a unit the applier refused, and why.
type Rejection struct {
	Unit   Unit
	Reason string
}

// Placed counts the pods placed by the applied units.
func (r *PlanResult) Placed() int {
	n := 0
	for _, u := range r.Applied {
		n += len(u.Placements)
	}
	return n
}
