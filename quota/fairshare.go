package quota

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// QueueQuota is the resource side of one queue: what it is guaranteed, how
// far it may grow, and how strongly it competes for idle capacity. It is
// separate from QueueConfig (YARN percentages and ACLs) because the
// scheduler works in absolute quantities of reclaimable capacity, which
// changes with the colocated online load while a percentage does not.
type QueueQuota struct {
	// Path is the full dotted name, starting at "root".
	Path string `json:"path"`
	// Guaranteed is the capacity the queue gets back by preemption when it
	// has demand for it.
	Guaranteed Resource `json:"guaranteed"`
	// Max caps the queue's usage, borrowing included. Nil means the queue
	// is bounded only by its ancestors and the cluster.
	Max *Resource `json:"max,omitempty"`
	// Weight divides idle capacity among siblings; zero counts as 1.
	Weight float64 `json:"weight,omitempty"`
	// UserLimitPercent, on a leaf, caps what one user's applications may
	// hold at this percent of the most the queue may hold (its max, its
	// ancestors', the cluster); zero is no limit.
	UserLimitPercent int32 `json:"userLimitPercent,omitempty"`
}

// Hierarchy is an immutable, validated tree of queue quotas.
type Hierarchy struct {
	byPath map[string]*hnode
	order  []*hnode // parents before children, siblings by path
}

type hnode struct {
	QueueQuota
	parent   *hnode
	children []*hnode
}

// NewHierarchy validates quotas and builds the tree. Every queue but root
// needs its parent; children's guarantees must sum to no more than their
// parent's (otherwise a guarantee could not be honoured even in theory) and
// a guarantee may not exceed the queue's own max.
func NewHierarchy(quotas []QueueQuota) (*Hierarchy, error) {
	h := &Hierarchy{byPath: map[string]*hnode{}}
	sorted := slices.Clone(quotas)
	slices.SortStableFunc(sorted, func(a, b QueueQuota) int {
		if d := strings.Count(a.Path, ".") - strings.Count(b.Path, "."); d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	for _, q := range sorted {
		if q.Path != "root" && !strings.HasPrefix(q.Path, "root.") {
			return nil, fmt.Errorf("quota: queue %q is not under root", q.Path)
		}
		if _, dup := h.byPath[q.Path]; dup {
			return nil, fmt.Errorf("quota: queue %q configured twice", q.Path)
		}
		if q.Weight < 0 || math.IsNaN(q.Weight) || math.IsInf(q.Weight, 0) {
			return nil, fmt.Errorf("quota: queue %q: weight %v", q.Path, q.Weight)
		}
		if q.Weight == 0 {
			q.Weight = 1
		}
		if !q.Guaranteed.NonNegative().Equal(q.Guaranteed) {
			return nil, fmt.Errorf("quota: queue %q: negative guarantee %v", q.Path, q.Guaranteed)
		}
		if !q.Guaranteed.FitsLimit(q.Max) {
			return nil, fmt.Errorf("quota: queue %q: guarantee %v exceeds max %v", q.Path, q.Guaranteed, *q.Max)
		}
		q.Guaranteed = q.Guaranteed.Clone()
		if q.Max != nil {
			m := q.Max.Clone()
			q.Max = &m
		}
		n := &hnode{QueueQuota: q}
		if q.Path != "root" {
			parent, ok := h.byPath[q.Path[:strings.LastIndexByte(q.Path, '.')]]
			if !ok {
				return nil, fmt.Errorf("quota: queue %q has no parent", q.Path)
			}
			n.parent = parent
			parent.children = append(parent.children, n)
		}
		h.byPath[q.Path] = n
		h.order = append(h.order, n)
	}
	if _, ok := h.byPath["root"]; !ok {
		return nil, fmt.Errorf("quota: no root queue")
	}
	for _, n := range h.order {
		if n.parent == nil {
			// Root's guarantee is the cluster, which changes with the
			// online load; it is not configured.
			continue
		}
		var sum Resource
		for _, c := range n.children {
			sum.AddInPlace(c.Guaranteed)
		}
		if !sum.Fits(n.Guaranteed) {
			return nil, fmt.Errorf("quota: children of %q are guaranteed %v, more than its %v", n.Path, sum, n.Guaranteed)
		}
	}
	return h, nil
}

// Paths returns every queue path, parents before children.
func (h *Hierarchy) Paths() []string {
	out := make([]string, len(h.order))
	for i, n := range h.order {
		out[i] = n.Path
	}
	return out
}

// Leaves returns the paths of queues without children: the queues that
// hold applications.
func (h *Hierarchy) Leaves() []string {
	var out []string
	for _, n := range h.order {
		if len(n.children) == 0 {
			out = append(out, n.Path)
		}
	}
	return out
}

// Quota returns a queue's configured quota.
func (h *Hierarchy) Quota(path string) (QueueQuota, bool) {
	n, ok := h.byPath[path]
	if !ok {
		return QueueQuota{}, false
	}
	return n.QueueQuota, true
}

// Lineage returns path and its ancestors, leaf first, root last; nil for an
// unknown queue. Usage charged to a leaf is charged to each of these.
func (h *Hierarchy) Lineage(path string) []string {
	var out []string
	for n := h.byPath[path]; n != nil; n = n.parent {
		out = append(out, n.Path)
	}
	return out
}

// QueueLoad is what a queue holds and wants: Used is allocated now,
// Pending is asked for and not yet allocated. Loads are given for leaf
// queues, which are the only ones holding applications (as in YARN); a
// parent's load is the sum of its children's.
type QueueLoad struct {
	Used    Resource
	Pending Resource
}

// Share is the outcome of FairShares for one queue.
type Share struct {
	// Guaranteed and Max are the configured values (Max nil: unlimited).
	Guaranteed Resource
	Max        *Resource
	// FairShare is what the queue should hold given everyone's demand:
	// its guarantee (up to its demand) plus its weighted part of idle
	// capacity, never above its max or its parent's fair share.
	FairShare Resource
	// Used splits into Within (covered by the guarantee) and Borrowed
	// (above the guarantee, hence reclaimable by preemption).
	Used, Within, Borrowed Resource
}

// FairShares computes every queue's fair share of capacity given loads,
// which may omit idle queues. It is a pure function of its inputs.
//
// Each dimension is divided independently, top down. At each parent the
// available amount goes first to the children's guarantees (capped by their
// demand; scaled down by guarantee if capacity has shrunk below them, as
// reclaimed capacity can), then the rest is water-filled by weight up to
// each child's demand and max. A child's share is what it divides among its
// own children, so no subtree ever gets more than its parent.
func (h *Hierarchy) FairShares(capacity Resource, loads map[string]QueueLoad) map[string]Share {
	// Aggregate loads bottom-up.
	used := make(map[*hnode]Resource, len(h.order))
	demand := make(map[*hnode]Resource, len(h.order))
	for i := len(h.order) - 1; i >= 0; i-- {
		n := h.order[i]
		var u, d Resource
		if l, ok := loads[n.Path]; ok && len(n.children) == 0 {
			u, d = l.Used.Clone(), l.Used.Add(l.Pending)
		}
		for _, c := range n.children {
			u.AddInPlace(used[c])
			d.AddInPlace(demand[c])
		}
		used[n] = u
		demand[n] = d
	}
	names := []string{ResourceCPU, ResourceMemory}
	names = appendNew(names, capacity.Names())
	for _, n := range h.order {
		names = appendNew(names, n.Guaranteed.Names())
		names = appendNew(names, demand[n].Names())
	}

	fair := make(map[*hnode]*Resource, len(h.order))
	for _, n := range h.order {
		fair[n] = &Resource{}
	}
	for _, name := range names {
		// What each queue could use at most: its demand within its max, and
		// for a parent no more than its children could use.
		capped := make(map[*hnode]int64, len(h.order))
		for i := len(h.order) - 1; i >= 0; i-- {
			n := h.order[i]
			d := demand[n].Get(name)
			if len(n.children) > 0 {
				d = 0
				for _, c := range n.children {
					d += capped[c]
				}
			}
			capped[n] = min(d, limitOf(n.Max, name))
		}
		root := h.byPath["root"]
		fair[root].SetInPlace(name, min(capacity.Get(name), capped[root]))
		for _, n := range h.order {
			if len(n.children) == 0 {
				continue
			}
			avail := fair[n].Get(name)
			give := divide(avail, n.children, capped, name)
			for i, c := range n.children {
				fair[c].SetInPlace(name, give[i])
			}
		}
	}

	out := make(map[string]Share, len(h.order))
	for _, n := range h.order {
		u := used[n]
		borrowed := u.Sub(n.Guaranteed).NonNegative()
		out[n.Path] = Share{Guaranteed: n.Guaranteed, Max: n.Max, FairShare: *fair[n],
			Used: u, Within: u.Sub(borrowed), Borrowed: borrowed}
	}
	return out
}

// divide splits avail among siblings: guarantees first, then idle capacity
// by weight, each child bounded by capped (its demand within its max).
func divide(avail int64, children []*hnode, capped map[*hnode]int64, name string) []int64 {
	give := make([]int64, len(children))
	want := make([]int64, len(children))
	weights := make([]float64, len(children))
	var sumGuar int64
	for i, c := range children {
		want[i] = min(c.Guaranteed.Get(name), capped[c])
		weights[i] = float64(want[i])
		sumGuar += want[i]
	}
	if sumGuar > avail {
		// Capacity below the promises: share it in proportion to them.
		waterfill(avail, weights, want, give)
		return give
	}
	copy(give, want)
	for i, c := range children {
		want[i] = capped[c] - give[i]
		weights[i] = c.Weight
	}
	waterfill(avail-sumGuar, weights, want, give)
	return give
}

// waterfill adds amount to give in proportion to weights, never giving
// child i more than want[i] on top; what a capped child cannot take is
// shared among the others in the next round. Integer remainders go to the
// earliest children still wanting, so the result is deterministic and
// hands out everything that is wanted.
func waterfill(amount int64, weights []float64, want, give []int64) {
	open := make([]bool, len(want))
	for i := range want {
		open[i] = want[i] > 0 && weights[i] > 0
	}
	for amount > 0 {
		var total float64
		for i, o := range open {
			if o {
				total += weights[i]
			}
		}
		if total == 0 {
			return
		}
		progress := false
		pool := amount
		for i, o := range open {
			if !o {
				continue
			}
			g := min(int64(float64(pool)*weights[i]/total), want[i], amount)
			if g > 0 {
				progress = true
				give[i] += g
				want[i] -= g
				amount -= g
			}
			if want[i] == 0 {
				open[i] = false
			}
		}
		if !progress {
			// Only rounding crumbs are left: one unit each, in order.
			for i, o := range open {
				if o && amount > 0 {
					give[i]++
					want[i]--
					amount--
					open[i] = want[i] > 0
				}
			}
		}
	}
}

func limitOf(limit *Resource, name string) int64 {
	if limit == nil {
		return math.MaxInt64
	}
	switch name {
	case ResourceCPU, ResourceMemory:
		return limit.Get(name)
	}
	if v, ok := limit.Extended[name]; ok {
		return v
	}
	return math.MaxInt64
}

func appendNew(dst, src []string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}
