package scheduler

import (
	"cmp"
	"context"
	"slices"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
)

// planPreemption reclaims borrowed capacity for leaf queues that are below
// their guarantee and still have work that found no room this cycle.
//
// Only what a queue is entitled to is reclaimed: a unit is considered only
// if the queue's usage with it stays within its guarantee. Victims come from
// other queues' borrowed capacity (never pushing a victim queue below its
// own guarantee), low tier anywhere in the cluster before any medium tier,
// never high tier, and never pods Weft does not own, which exist only as
// NonWeftUsed. Among nodes that would work, the one whose eviction empties
// it of Weft pods wins, then the one needing fewest victims.
//
// Victims are notified, not killed: the plan lists them, the shim gives
// advance notice, and the unit they make room for is placed by a later
// cycle once they exit. Capacity already being released counts first, so
// successive cycles do not pick new victims for the same need.
func (c *cycle) planPreemption(ctx context.Context) error {
	var needy []*wqueue
	for _, q := range c.leafs {
		if q.loaded && !q.quota.Guaranteed.IsZero() && q.used.Fits(q.quota.Guaranteed) && q.blocked() {
			needy = append(needy, q)
		}
	}
	if len(needy) == 0 {
		return nil
	}
	slices.SortStableFunc(needy, func(a, b *wqueue) int {
		return cmp.Compare(a.used.DominantShare(a.quota.Guaranteed), b.used.DominantShare(b.quota.Guaranteed))
	})
	c.loadAllocations()
	for _, q := range needy {
		for _, app := range q.apps {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var unit []*objects.Request
			switch {
			case app.blockedGang && len(app.gang) > 0:
				unit = app.gang
			case app.blockedElastic && app.gangRunning && app.elasticNext < len(app.elastic):
				unit = app.elastic[app.elasticNext : app.elasticNext+1]
			default:
				continue
			}
			var total quota.Resource
			for _, r := range unit {
				total.AddInPlace(r.Resource)
			}
			if !q.used.Add(total).Fits(q.quota.Guaranteed) || !q.fitsQuota(total) {
				continue // beyond what the queue is entitled to reclaim
			}
			c.reclaimFor(q, unit)
		}
	}
	return nil
}

// blocked reports whether a job of q found no room this cycle: only then
// is there anything to reclaim for (and every allocation to read).
func (q *wqueue) blocked() bool {
	for _, app := range q.apps {
		if app.blockedGang && len(app.gang) > 0 || app.blockedElastic && app.gangRunning && app.elasticNext < len(app.elastic) {
			return true
		}
	}
	return false
}

// loadAllocations indexes the snapshot's allocations by node, once, and
// only for cycles that plan preemption.
func (c *cycle) loadAllocations() {
	byID := make(map[string]*wnode, len(c.nodes))
	for _, w := range c.nodes {
		byID[w.n.ID] = w
	}
	for _, al := range c.snap.Allocations() {
		if w := byID[al.NodeID]; w != nil {
			w.allocs = append(w.allocs, al)
		}
	}
	for _, w := range c.nodes {
		// Cheapest loss first: low tier before medium, and the newest
		// pods, which have done the least work.
		slices.SortFunc(w.allocs, func(a, b *objects.Allocation) int {
			return cmp.Or(cmp.Compare(a.Tier, b.Tier), cmp.Compare(b.CreateIndex, a.CreateIndex), cmp.Compare(a.ID, b.ID))
		})
	}
	for _, q := range c.queue {
		if row := c.snap.QueueUsage(q.path); row != nil {
			q.reclaim = q.used.Sub(row.Releasing)
		}
	}
}

// reclaimFor finds room for every request of unit, or changes nothing.
func (c *cycle) reclaimFor(q *wqueue, unit []*objects.Request) {
	var undo []func()
	var preemptions []objects.Preemption
	chosen := map[string]bool{}
	for _, r := range unit {
		w, victims := c.findVictims(q, r.Resource, r.Nodes, chosen)
		if w == nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			return
		}
		// Hold the room for r in this cycle's view, so the next request
		// of the gang, or the next queue, does not count it again.
		w.free.SubInPlace(r.Resource)
		q.charge(r.Resource, 1)
		undo = append(undo, func() { w.free.AddInPlace(r.Resource); q.charge(r.Resource, -1) })
		for _, v := range victims {
			chosen[v.ID] = true
			w.soon.AddInPlace(v.Resource)
			vq := c.queue[v.Queue]
			vq.reclaim.SubInPlace(v.Resource)
			undo = append(undo, func() { w.soon.SubInPlace(v.Resource); vq.reclaim.AddInPlace(v.Resource) })
			preemptions = append(preemptions, objects.Preemption{AllocationID: v.ID, NodeID: w.n.ID,
				VictimQueue: v.Queue, ForQueue: q.path, ForRequest: r.ID, Tier: v.Tier})
		}
	}
	for id := range chosen {
		c.chosen(id)
	}
	c.plan.Preemptions = append(c.plan.Preemptions, preemptions...)
}

func (c *cycle) chosen(id string) {
	if c.victims == nil {
		c.victims = map[string]bool{}
	}
	c.victims[id] = true
}

// findVictims returns a node that can hold r once the returned victims
// (possibly none) have exited. Capacity already being released is used
// before any new victim; then low-tier victims only, then low and medium.
func (c *cycle) findVictims(q *wqueue, r quota.Resource, allowed, pending map[string]bool) (*wnode, []*objects.Allocation) {
	for _, w := range c.nodes {
		if allowed != nil && !allowed[w.n.ID] {
			continue
		}
		if r.Fits(w.free.Add(w.soon)) {
			return w, nil
		}
	}
	for _, maxTier := range []records.Tier{records.TierLow, records.TierMedium} {
		var best *wnode
		var bestVictims []*objects.Allocation
		bestWhole := false
		for _, w := range c.nodes {
			if allowed != nil && !allowed[w.n.ID] {
				continue
			}
			if !r.Fits(w.n.Allocatable.Sub(w.n.NonWeftUsed)) {
				continue // would not fit even on the empty node
			}
			victims, whole := c.victimsOn(w, q, r, maxTier, pending)
			if victims == nil {
				continue
			}
			better := best == nil || whole && !bestWhole ||
				whole == bestWhole && len(victims) < len(bestVictims)
			if better {
				best, bestVictims, bestWhole = w, victims, whole
			}
		}
		if best != nil {
			return best, bestVictims
		}
	}
	return nil, nil
}

// victimsOn picks, in cheapest-loss order, the fewest eligible victims on
// w that make room for r; nil if that is impossible. whole reports that no
// Weft pod would be left on the node.
func (c *cycle) victimsOn(w *wnode, q *wqueue, r quota.Resource, maxTier records.Tier, pending map[string]bool) ([]*objects.Allocation, bool) {
	room := w.free.Add(w.soon)
	var victims []*objects.Allocation
	taken := map[*wqueue]quota.Resource{}
	remaining := 0
	fits := false
	for _, al := range w.allocs {
		if al.Preempting || c.victims[al.ID] || pending[al.ID] {
			continue
		}
		if fits {
			remaining++
			continue
		}
		vq := c.queue[al.Queue]
		if al.Tier > maxTier || al.Tier == records.TierHigh || vq == nil || vq == q ||
			!state.Reclaimable(vq.reclaim.Sub(taken[vq]), vq.quota.Guaranteed, al.Resource) {
			remaining++
			continue
		}
		victims = append(victims, al)
		taken[vq] = taken[vq].Add(al.Resource)
		room.AddInPlace(al.Resource)
		fits = r.Fits(room)
	}
	if !fits {
		return nil, false
	}
	return victims, remaining == 0
}
