package scheduler

import "github.com/weft-sh/weft/quota"

// selectNode returns the best node with room for r among those allowed
// (nil: all), or nil.
//
// Scoring looks at the fraction of each node's allocatable CPU and memory
// left after placement; extended resources only filter. With a bound
// (Options.NodesToScore, PercentageOfNodesToScore) the search stops after that many feasible nodes and the next search
// starts after the last node examined, so consecutive pods spread over the
// cluster instead of rescanning the same full nodes at the front.
func (c *cycle) selectNode(r quota.Resource, allowed map[string]bool) *wnode {
	n := len(c.nodes)
	if n == 0 {
		return nil
	}
	limit := c.nodesToScore
	most := c.s.opts.Scoring == MostAllocated
	var best *wnode
	bestScore := 0.0
	feasible := 0
	start := c.s.nodeCursor % n
	i := 0
	for ; i < n; i++ {
		w := c.nodes[(start+i)%n]
		if !r.Fits(w.free) || allowed != nil && !allowed[w.n.ID] {
			continue
		}
		// Free fraction after placement, averaged over cpu and memory.
		score := (float64(w.free.MilliCPU-r.MilliCPU)*w.invCPU + float64(w.free.Memory-r.Memory)*w.invMem) / 2
		if most {
			score = -score
		}
		if best == nil || score > bestScore {
			best, bestScore = w, score
		}
		feasible++
		if limit > 0 && feasible >= limit {
			i++
			break
		}
	}
	if limit > 0 {
		c.s.nodeCursor = (start + i) % n
	}
	return best
}
