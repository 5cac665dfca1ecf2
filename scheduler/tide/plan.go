// Package tide is the tidal controller: it lends whole nodes of a
// TidePool to batch work while the online services' deployment level is
// below the pool's watermark, and takes them back, after notice, when it
// rises — ByteDance's first and safest colocation. A node walks Online →
// OnlineToOffline → Offline → OfflineToOnline → Online; the state lives
// on the Node (a label, taints, annotations), so a restarted controller
// carries on every move from where it stood.
//
// Plan decides which nodes move, from a view of the pool; the reconciler
// (controller.go) drives each node through its states.
package tide

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

// NodeView is what the planner knows of one of the pool's nodes.
type NodeView struct {
	Name  string
	State v1alpha1.NodeState
	// Ready is false for a node that is not Ready or is cordoned: it
	// counts for nothing and is never chosen.
	Ready bool
	// MilliCPU is the node's allocatable CPU.
	MilliCPU int64
	// OnlineMilliCPU is what the online pods on it request; OnlinePods
	// counts them (DaemonSets' and batch pods are not online work to
	// move); DeletionCost adds up their pod-deletion-cost.
	OnlineMilliCPU int64
	OnlinePods     int
	DeletionCost   int64
	// BatchPods counts the batch pods on it: the fewer, the cheaper to
	// take back.
	BatchPods int
}

// Plan is one decision over a pool.
type Plan struct {
	// LevelPercent is the online deployment level: what online pods
	// request (pending ones included) over the CPU of the nodes online
	// work may use.
	LevelPercent int32
	// Lend are Online nodes to start lending (→ OnlineToOffline).
	Lend []string
	// Abort are nodes on their way to batch to bring straight back
	// (OnlineToOffline → Online): they hold no batch work yet.
	Abort []string
	// Reclaim are Offline nodes to start taking back (→ OfflineToOnline).
	Reclaim []string
	// Next are the Online nodes that would be lent next, first first (at
	// most a tenth of the pool, and no more than the caps leave room
	// for): the reconciler gives their online pods the lowest
	// pod-deletion-cost, so that a ReplicaSet scaling in empties them
	// first and the next lending moves little or nothing.
	Next []string
	// Reason says why, for Events and the pool's transitions.
	Reason string
}

// Reasons of a plan.
const (
	ReasonBelowWatermark = "LevelBelowWatermark"
	ReasonAboveBand      = "LevelAboveBand"
	ReasonOnlinePending  = "OnlinePending"
	ReasonTimedWindow    = "TimedWindow"
)

// Pending is the online demand no node holds yet.
type Pending struct {
	// MilliCPU is what every unbound online pod requests — a replica
	// just created (one replacing a pod evicted from a node being lent)
	// as much as one the scheduler found no room for: demand the level
	// must count, or a node is lent that its pods still need.
	MilliCPU int64
	// WaitingMilliCPU is the part the scheduler found no room for
	// (Unschedulable): online work waiting, which takes a node back.
	WaitingMilliCPU int64
}

// Decide plans a pool's moves at now, counting the pending online
// demand in the level.
//
// Lending takes, in the policy's order, every Online node whose removal
// keeps the level at or under the watermark, the pool's minimum of online
// nodes (raised by a timed window in effect) and its cap of lent nodes
// allowing — many nodes in one decision, none while any node is being
// taken back. Taking back starts once the level passes the watermark plus
// the band, online pods wait, or a timed window wants more nodes online:
// first the nodes still on their way to batch, then Offline nodes with
// the fewest batch pods, until the level is back at the watermark.
func Decide(spec v1alpha1.TidePoolSpec, nodes []NodeView, pending Pending, now time.Time) Plan {
	watermark := int64(cmp.Or(spec.WatermarkPercent, 90))
	band := int64(spec.BandPercent)
	var capacity, returning, demand int64
	online, lent, toOnline := 0, 0, 0
	for _, n := range nodes {
		demand += n.OnlineMilliCPU
		switch n.State {
		case v1alpha1.StateOnline, "":
			if n.Ready {
				capacity += n.MilliCPU
				online++
			}
		case v1alpha1.StateOfflineToOnline:
			returning += n.MilliCPU
			toOnline++
			lent++
		default:
			lent++
		}
	}
	demand += pending.MilliCPU
	p := Plan{LevelPercent: percent(demand, capacity)}
	minOnline := int(spec.MinOnlineNodes)
	for _, w := range spec.Windows {
		if !now.Before(w.From.Time) && now.Before(w.To.Time) {
			minOnline = max(minOnline, int(w.OnlineNodes))
		}
	}
	fits := func(capacity int64) bool { return demand*100 <= watermark*capacity }

	wantBack := ""
	switch {
	case online+toOnline < minOnline:
		wantBack = ReasonTimedWindow
	case pending.WaitingMilliCPU > 0:
		wantBack = ReasonOnlinePending
	case int64(p.LevelPercent) > watermark+band:
		wantBack = ReasonAboveBand
	}
	if wantBack != "" {
		p.Reason = wantBack
		// Nodes still on their way to batch come back first. Pending
		// online pods want at least one node on its way back.
		total := capacity + returning
		satisfied := func() bool {
			return fits(total) && online+toOnline >= minOnline && (pending.WaitingMilliCPU == 0 || toOnline > 0 || len(p.Abort) > 0)
		}
		for _, n := range byName(nodes, v1alpha1.StateOnlineToOffline) {
			if satisfied() {
				break
			}
			if n.Ready {
				p.Abort = append(p.Abort, n.Name)
				total += n.MilliCPU
				online++
			}
		}
		offline := byName(nodes, v1alpha1.StateOffline)
		slices.SortStableFunc(offline, func(a, b NodeView) int { return cmp.Compare(a.BatchPods, b.BatchPods) })
		for _, n := range offline {
			if satisfied() {
				break
			}
			if n.Ready {
				p.Reclaim = append(p.Reclaim, n.Name)
				total += n.MilliCPU
				toOnline++
			}
		}
		p.Next = next(spec, nodes, nil, online, lent, minOnline)
		return p
	}
	if toOnline > 0 || int64(p.LevelPercent) >= watermark {
		p.Next = next(spec, nodes, nil, online, lent, minOnline)
		return p
	}
	for _, n := range lendOrder(spec, nodes) {
		if online-1 < minOnline || (spec.MaxLentNodes != nil && lent >= int(*spec.MaxLentNodes)) {
			break
		}
		if !fits(capacity - n.MilliCPU) {
			continue
		}
		p.Lend = append(p.Lend, n.Name)
		capacity -= n.MilliCPU
		online--
		lent++
	}
	if len(p.Lend) > 0 {
		p.Reason = ReasonBelowWatermark
	}
	p.Next = next(spec, nodes, p.Lend, online, lent, minOnline)
	return p
}

// Notice is how long batch work on a node being taken back has to finish
// before what is left is evicted: the pool's notice, 10 minutes when it
// sets none. Zero takes the node back at once, as Katalyst's tide does.
func Notice(spec v1alpha1.TidePoolSpec) time.Duration {
	if spec.Notice != nil {
		return spec.Notice.Duration
	}
	return 10 * time.Minute
}

// DrainTimeout is how long a node on its way to batch may take to see its
// online pods leave before it goes back to Online: the pool's, 5 minutes
// when it sets none (or zero).
func DrainTimeout(spec v1alpha1.TidePoolSpec) time.Duration {
	if spec.DrainTimeout != nil && spec.DrainTimeout.Duration > 0 {
		return spec.DrainTimeout.Duration
	}
	return 5 * time.Minute
}

// lendOrder is the pool's Ready Online nodes in the order the policy
// lends them: the lowest deletion cost first (DeletionCost), then the
// fewest online pods, then the least online CPU, then by name.
func lendOrder(spec v1alpha1.TidePoolSpec, nodes []NodeView) []NodeView {
	var out []NodeView
	for _, n := range byName(nodes, v1alpha1.StateOnline) {
		if n.Ready {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b NodeView) int {
		if spec.Policy == v1alpha1.PolicyDeletionCost {
			if c := cmp.Compare(a.DeletionCost, b.DeletionCost); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.OnlinePods, b.OnlinePods); c != 0 {
			return c
		}
		return cmp.Compare(a.OnlineMilliCPU, b.OnlineMilliCPU)
	})
	return out
}

// next is the Online nodes, besides those lent now, that the pool would
// lend next once the level allows: a tenth of the pool (at least one),
// no more than the minimum of online nodes and the cap of lent nodes
// leave room for.
func next(spec v1alpha1.TidePoolSpec, nodes []NodeView, lending []string, online, lent, minOnline int) []string {
	room := online - minOnline
	if spec.MaxLentNodes != nil {
		room = min(room, int(*spec.MaxLentNodes)-lent)
	}
	room = min(room, max(1, len(nodes)/10))
	var out []string
	for _, n := range lendOrder(spec, nodes) {
		if len(out) >= room {
			break
		}
		if !slices.Contains(lending, n.Name) {
			out = append(out, n.Name)
		}
	}
	return out
}

// byName is the nodes in state s (Online includes a node without one),
// in name order.
func byName(nodes []NodeView, s v1alpha1.NodeState) []NodeView {
	var out []NodeView
	for _, n := range nodes {
		if n.State == s || (s == v1alpha1.StateOnline && n.State == "") {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b NodeView) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func percent(part, whole int64) int32 {
	if whole <= 0 {
		if part > 0 {
			return 1000 // demand with no capacity at all: far above any watermark
		}
		return 0
	}
	return int32(part * 100 / whole)
}

func (p Plan) String() string {
	return fmt.Sprintf("level %d%%: lend %v, abort %v, reclaim %v (%s)", p.LevelPercent, p.Lend, p.Abort, p.Reclaim, p.Reason)
}
