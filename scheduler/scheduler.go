package scheduler

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
)

// Scoring chooses among nodes that fit a request.
type Scoring int

const (
	// LeastAllocated spreads pods onto the emptiest nodes, which keeps
	// headroom on every node when the online load grows back.
	LeastAllocated Scoring = iota
	// MostAllocated packs pods onto the fullest nodes, which leaves whole
	// nodes empty for large pods and for tidal whole-node lending.
	MostAllocated
)

// Options configure a Scheduler.
type Options struct {
	Scoring Scoring
	// NodesToScore stops the node search after this many feasible nodes,
	// starting each search where the last one ended, as kube-scheduler's
	// percentageOfNodesToScore does. Zero: PercentageOfNodesToScore
	// decides.
	NodesToScore int
	// PercentageOfNodesToScore, when NodesToScore is zero, bounds the
	// search to this percentage of the cycle's nodes, but never below 100
	// nodes (kube-scheduler's percentageOfNodesToScore and its
	// minFeasibleNodesToFind). AdaptivePercentage picks kube-scheduler's
	// default, which shrinks as the cluster grows. Zero scores every
	// feasible node.
	PercentageOfNodesToScore int
	// DisablePreemption skips preemption planning.
	DisablePreemption bool
}

// AdaptivePercentage, as Options.PercentageOfNodesToScore, is
// kube-scheduler's default search bound: 50% of the nodes less one point
// per 125 nodes, at least 5% (numFeasibleNodesToFind) — every node of a
// small cluster, 500 of 10,000. Scoring more finds a slightly better node
// for each pod at a cost linear in the cluster; past a few hundred
// feasible nodes the best of a sample is as good as the best of all, and
// the rotating start spreads consecutive pods anyway.
const AdaptivePercentage = -1

// minNodesToScore is kube-scheduler's minFeasibleNodesToFind: a bounded
// search still looks at this many feasible nodes.
const minNodesToScore = 100

// nodesToScore is how many feasible nodes a search of a cycle over n
// nodes looks at; zero: all of them.
func (o Options) nodesToScore(n int) int {
	if o.NodesToScore > 0 {
		return o.NodesToScore
	}
	pct := o.PercentageOfNodesToScore
	if pct == 0 || pct >= 100 || n < minNodesToScore {
		return 0
	}
	if pct == AdaptivePercentage {
		pct = max(50-n/125, 5)
	}
	return max(n*pct/100, minNodesToScore)
}

// Scheduler computes plans. It holds no state between cycles but the
// rotating node-search offset and what it derived of the last cycle's
// nodes (nodeMemo), so one Scheduler must not run two cycles
// concurrently; there is one writer of plans anyway.
type Scheduler struct {
	opts       Options
	nodeCursor int
	nodes      nodeMemo
}

// nodeMemo is what newCycle derived of each node of the last cycle's
// snapshot, before the cycle placed anything, and the buffers the cycle
// worked in. The store never changes a node in place: it inserts a new
// object. So an entry whose node is the very object the next snapshot
// holds at its place is still right, and the next cycle copies it instead
// of reading the node again. A cycle over 10,000 nodes with one request
// to place spent nearly all its time deriving every node afresh and
// allocating its working copies (BenchmarkScheduleOneAsk).
//
// The memo holds the last snapshot's nodes, so no other object can have
// their addresses while it does: a pointer that matches is that node.
type nodeMemo struct {
	entries []nodeEntry
	// capacity is the sum of the capacity of the entries not cordoned.
	capacity quota.Resource
	// work and ptrs are the last cycle's working nodes, reused: nothing
	// of a cycle outlives Schedule but its plan, which names nodes by id.
	work []wnode
	ptrs []*wnode
}

// nodeEntry is one node as a cycle starts with it.
type nodeEntry struct {
	w wnode
	// capacity is what the node offers Weft: allocatable less what
	// others hold, never negative.
	capacity quota.Resource
}

// entryOf derives a node's entry.
func entryOf(n *objects.Node) nodeEntry {
	e := nodeEntry{w: wnode{n: n, free: n.Free(), soon: n.Releasing.Clone()},
		capacity: n.Allocatable.Sub(n.NonWeftUsed).NonNegative()}
	if n.Allocatable.MilliCPU > 0 {
		e.w.invCPU = 1 / float64(n.Allocatable.MilliCPU)
	}
	if n.Allocatable.Memory > 0 {
		e.w.invMem = 1 / float64(n.Allocatable.Memory)
	}
	return e
}

// start brings the memo to the nodes of a snapshot and returns the
// cycle's working copies of the nodes that take allocations (not
// cordoned), and what the cluster offers Weft.
func (m *nodeMemo) start(nodes []*objects.Node) ([]*wnode, quota.Resource) {
	changed := len(m.entries) != len(nodes)
	if len(m.entries) > len(nodes) {
		clear(m.entries[len(nodes):]) // gone nodes are not held
	}
	m.entries = slices.Grow(m.entries[:0], len(nodes))[:len(nodes)]
	for i, n := range nodes {
		// Positions shift only when nodes come or go: then the entries
		// after the change are derived again.
		if m.entries[i].w.n != n {
			m.entries[i] = entryOf(n)
			changed = true
		}
	}
	if changed {
		m.capacity = quota.Resource{}
		for i := range m.entries {
			if !m.entries[i].w.n.Cordoned {
				m.capacity.AddInPlace(m.entries[i].capacity)
			}
		}
	}
	was := len(m.work)
	m.work, m.ptrs = m.work[:0], m.ptrs[:0]
	for i := range m.entries {
		if e := &m.entries[i]; !e.w.n.Cordoned {
			w := e.w
			// The cycle changes free and soon in place: extended
			// resources get maps of their own.
			if len(w.free.Extended) > 0 {
				w.free = w.free.Clone()
			}
			if len(w.soon.Extended) > 0 {
				w.soon = w.soon.Clone()
			}
			m.work = append(m.work, w)
		}
	}
	if len(m.work) < was {
		clear(m.work[len(m.work):was])
		clear(m.ptrs[len(m.work):was])
	}
	// Pointers taken once work no longer grows.
	for i := range m.work {
		m.ptrs = append(m.ptrs, &m.work[i])
	}
	return m.ptrs, m.capacity
}

// New returns a Scheduler.
func New(opts Options) *Scheduler { return &Scheduler{opts: opts} }

// Schedule runs one cycle on snap and returns the plan. It does not modify
// the store: the caller submits the plan to state.Store.ApplyPlan.
//
// The cycle has three phases, each ordering leaf queues by DRF deficit
// (dominant share of usage over fair share, lowest first) and applications
// within a queue by priority then age:
//  1. gang minimums (high and medium tiers), each all or nothing;
//  2. elastic low-tier requests, one at a time, of jobs whose gang runs;
//  3. preemption for queues below their guarantee that still have work.
//
// A job that cannot be placed is skipped for the rest of the cycle, so a
// large gang never blocks smaller jobs behind it.
func (s *Scheduler) Schedule(ctx context.Context, snap *state.Snapshot) (*objects.Plan, error) {
	c := s.newCycle(snap)
	if err := c.placeGangs(ctx); err != nil {
		return nil, err
	}
	if err := c.placeElastic(ctx); err != nil {
		return nil, err
	}
	if !s.opts.DisablePreemption {
		if err := c.planPreemption(ctx); err != nil {
			return nil, err
		}
	}
	return c.plan, nil
}

// cycle is the working view of one scheduling cycle: copies of the
// quantities it changes as it places pods, never the store's objects.
type cycle struct {
	s     *Scheduler
	snap  *state.Snapshot
	h     *quota.Hierarchy
	plan  *objects.Plan
	nodes []*wnode
	queue map[string]*wqueue
	leafs []*wqueue
	// nodesToScore bounds each node search of the cycle (0: none).
	nodesToScore int
	// capacity is what the cluster offers Weft this cycle.
	capacity quota.Resource
	// reserve is what each application with a declared maximum may still
	// take of the quota held for it (objects.Application.Reserve).
	reserve map[string]quota.Resource
	// victims are allocations this cycle's preemptions already chose.
	victims map[string]bool
	// placements is where single placements' units take their one
	// Placement from (onePlacement).
	placements []objects.Placement
	// asking are the applications with pending requests by leaf, read at
	// the first leaf's load.
	asking map[string][]*objects.Application
}

// placementBlock is the most single placements onePlacement allocates at
// once: a cycle of a large backlog places tens of thousands of elastic
// pods, each its own unit, and one allocation for each would be a tenth
// of the cycle. Blocks start at 8 and double, for the many cycles that
// place a pod or two.
const placementBlock = 1024

// onePlacement returns p as a one-element slice for a unit, cut from a
// block shared with the cycle's other single placements.
func (c *cycle) onePlacement(p objects.Placement) []objects.Placement {
	if len(c.placements) == cap(c.placements) {
		c.placements = make([]objects.Placement, 0, min(max(2*cap(c.placements), 8), placementBlock))
	}
	c.placements = append(c.placements, p)
	n := len(c.placements)
	return c.placements[n-1 : n : n]
}

type wnode struct {
	n *objects.Node
	// free is what this cycle may still place; soon is capacity held by
	// notified victims, usable only by preemption planning.
	free, soon quota.Resource
	// invCPU and invMem are 1/allocatable, precomputed for scoring.
	invCPU, invMem float64
	allocs         []*objects.Allocation // loaded by preemption planning only
}

type wqueue struct {
	path   string
	quota  quota.QueueQuota
	parent *wqueue
	used   quota.Resource // includes this cycle's placements
	fair   quota.Resource
	// reclaim is what victims may still be taken from: usage (with this
	// cycle's placements) minus victims releasing or chosen.
	reclaim quota.Resource
	// reserved is quota held for declared maxima of applications in the
	// subtree, less what they placed this cycle.
	reserved quota.Resource
	// Leaves with a user limit only: the most one user may hold, and what
	// each user holds (with this cycle's placements), loaded lazily.
	userCap *quota.Resource
	users   map[string]quota.Resource
	// Leaves only: applications in order, loaded lazily.
	apps    []*wapp
	loaded  bool
	gangAt  int // next app to try in phase 1
	elastAt int // next app to try in phase 2
}

type wapp struct {
	a       *objects.Application
	gang    []*objects.Request // pending high then medium tier
	elastic []*objects.Request // pending low tier, oldest first
	// gangRunning: the job's minimum is allocated or was placed this cycle.
	gangRunning bool
	// blocked: a unit of this job did not fit on any node (not a quota
	// refusal); preemption may make room for it.
	blockedGang, blockedElastic bool
	elasticNext                 int
}

func (s *Scheduler) newCycle(snap *state.Snapshot) *cycle {
	c := &cycle{s: s, snap: snap, h: snap.Hierarchy(), plan: &objects.Plan{SnapshotIndex: snap.Index()},
		queue: map[string]*wqueue{}}
	// Every cycle walks every node (5,000 a simulated minute in weft-sim):
	// it copies what it derived of them last cycle (nodeMemo), and the
	// index by id is left to the cycles that plan preemption
	// (loadAllocations).
	c.nodes, c.capacity = s.nodes.start(snap.Nodes())
	c.nodesToScore = s.opts.nodesToScore(len(c.nodes))
	loads := map[string]quota.QueueLoad{}
	for _, p := range c.h.Paths() {
		q, _ := c.h.Quota(p)
		w := &wqueue{path: p, quota: q}
		if row := snap.QueueUsage(p); row != nil {
			w.used = row.Used.Clone()
			loads[p] = quota.QueueLoad{Used: row.Used, Pending: row.Pending}
		}
		if lin := c.h.Lineage(p); len(lin) > 1 {
			w.parent = c.queue[lin[1]]
		}
		c.queue[p] = w
	}
	for _, p := range c.h.Leaves() {
		c.leafs = append(c.leafs, c.queue[p])
	}
	for p, sh := range c.h.FairShares(c.capacity, loads) {
		c.queue[p].fair = sh.FairShare
	}
	c.reserve = map[string]quota.Resource{}
	for _, leaf := range c.leafs {
		for _, a := range snap.ReservingApplicationsInQueue(leaf.path) {
			c.reserve[a.ID] = a.Reserve
			for cur := leaf; cur != nil; cur = cur.parent {
				cur.reserved.AddInPlace(a.Reserve)
			}
		}
	}
	return c
}

// deficit is the DRF ordering key: the dominant share of what a queue uses
// relative to its fair share. A queue far below its share goes first.
func (q *wqueue) deficit() float64 {
	d := q.used.DominantShare(q.fair)
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d
}

// fitsQuotaFor reports whether app may add r in its leaf q: within max in
// q and every ancestor (the root within the cluster), leaving the quota
// held for other applications' declared maxima.
func (c *cycle) fitsQuotaFor(q *wqueue, app string, r quota.Resource) bool {
	own := c.reserve[app]
	for cur := q; cur != nil; cur = cur.parent {
		others := cur.reserved.Sub(own).NonNegative()
		limit := cur.quota.Max
		if limit == nil && cur.parent == nil && !others.IsZero() {
			// The cluster bounds the root: what is held for others there
			// is not this job's, even where no queue sets a max. (Without
			// holds, a full cluster is left to node fit, so that
			// preemption can see the job blocked.)
			limit = &c.capacity
		}
		if limit == nil {
			continue
		}
		if !cur.used.Add(r).Add(others).FitsLimit(limit) {
			return false
		}
	}
	return true
}

// useReserve charges app's placement of r against the quota held for it.
func (c *cycle) useReserve(q *wqueue, app string, r quota.Resource) {
	own, ok := c.reserve[app]
	if !ok {
		return
	}
	take := own.Min(r).NonNegative()
	c.reserve[app] = own.Sub(take)
	for cur := q; cur != nil; cur = cur.parent {
		cur.reserved.SubInPlace(take)
	}
}

// fitsQuota reports whether adding r keeps q and every ancestor within max.
func (q *wqueue) fitsQuota(r quota.Resource) bool {
	for cur := q; cur != nil; cur = cur.parent {
		if cur.quota.Max != nil && !cur.used.Add(r).FitsLimit(cur.quota.Max) {
			return false
		}
	}
	return true
}

func (q *wqueue) charge(r quota.Resource, sign int64) {
	for cur := q; cur != nil; cur = cur.parent {
		if sign > 0 {
			cur.used.AddInPlace(r)
		} else {
			cur.used.SubInPlace(r)
		}
	}
}

// load reads a leaf's applications and their requests from the snapshot,
// in scheduling order. It is lazy because a queue held at its max, or a
// cycle that ends early, need not read its backlog.
func (c *cycle) load(q *wqueue) {
	if q.loaded {
		return
	}
	q.loaded = true
	if pct := q.quota.UserLimitPercent; pct > 0 {
		c.loadUsers(q, c.snap.ApplicationsInQueue(q.path), pct)
	}
	// Only the applications with pending requests: a leaf's others would
	// be read and sorted to be dropped below, and in a busy cluster they
	// are most of its applications (test/bench/binding -running: each of
	// 5,000 pods its own application, a few dozen waiting a cycle).
	if c.asking == nil {
		c.asking = map[string][]*objects.Application{}
		for _, a := range c.snap.ApplicationsWithRequests() {
			c.asking[a.Queue] = append(c.asking[a.Queue], a)
		}
	}
	apps := c.asking[q.path]
	slices.SortFunc(apps, func(a, b *objects.Application) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.Submitted.Compare(b.Submitted), cmp.Compare(a.ID, b.ID))
	})
	for _, a := range apps {
		w := &wapp{a: a}
		for _, r := range c.snap.RequestsOfApp(a.ID) {
			if r.Tier.Gang() {
				w.gang = append(w.gang, r)
			} else {
				w.elastic = append(w.elastic, r)
			}
		}
		// Place the big pieces first within a gang, and high before
		// medium: an AM that cannot fit fails the gang fast.
		slices.SortFunc(w.gang, func(x, y *objects.Request) int {
			return cmp.Or(cmp.Compare(y.Tier, x.Tier), cmp.Compare(x.CreateIndex, y.CreateIndex), cmp.Compare(x.ID, y.ID))
		})
		slices.SortFunc(w.elastic, func(x, y *objects.Request) int {
			return cmp.Or(cmp.Compare(x.CreateIndex, y.CreateIndex), cmp.Compare(x.ID, y.ID))
		})
		running := 0
		if a.MinMembers > 0 {
			// Without a declared gang size every job counts as running
			// its gang once none of it is pending: no need to read its
			// allocations (a cycle would otherwise read every running
			// container of the cluster).
			for _, al := range c.snap.AllocationsOfApp(a.ID) {
				if al.Tier.Gang() {
					running++
				}
			}
		}
		w.gangRunning = len(w.gang) == 0 && running >= a.MinMembers
		if len(w.gang) > 0 && a.MinMembers > 0 && running+len(w.gang) < a.MinMembers {
			// The job has not submitted its whole minimum yet; placing
			// part of it would hold capacity for a job that cannot start.
			w.gang = nil
		}
		if len(w.gang) > 0 || len(w.elastic) > 0 {
			q.apps = append(q.apps, w)
		}
	}
}

// loadUsers sets a leaf's user limit, pct percent of the most the queue
// may hold (its max and its ancestors', within the cluster), and sums what
// each user's applications hold.
func (c *cycle) loadUsers(q *wqueue, apps []*objects.Application, pct int32) {
	ceiling := quota.Resource{MilliCPU: c.capacity.MilliCPU, Memory: c.capacity.Memory}
	for cur := q; cur != nil; cur = cur.parent {
		if m := cur.quota.Max; m != nil {
			ceiling = ceiling.Min(quota.Resource{MilliCPU: m.MilliCPU, Memory: m.Memory})
		}
	}
	q.userCap = &quota.Resource{MilliCPU: ceiling.MilliCPU * int64(pct) / 100, Memory: ceiling.Memory * int64(pct) / 100}
	q.users = map[string]quota.Resource{}
	for _, a := range apps {
		u := q.users[a.User]
		for _, al := range c.snap.AllocationsOfApp(a.ID) {
			u.AddInPlace(al.Resource)
		}
		q.users[a.User] = u
	}
}

// fitsUser reports whether user may take r more within the leaf's user
// limit.
func (q *wqueue) fitsUser(user string, r quota.Resource) bool {
	return q.userCap == nil || q.users[user].Add(r).FitsLimit(q.userCap)
}

// chargeUser adds a placement to its user's total, where a limit applies.
func (q *wqueue) chargeUser(user string, r quota.Resource) {
	if q.userCap != nil {
		q.users[user] = q.users[user].Add(r)
	}
}

// pickLeaf returns the leaf with the lowest deficit among those for which
// has reports remaining work, or nil.
func (c *cycle) pickLeaf(has func(*wqueue) bool) *wqueue {
	var best *wqueue
	bestD := 0.0
	for _, q := range c.leafs {
		if !has(q) {
			continue
		}
		if d := q.deficit(); best == nil || d < bestD {
			best, bestD = q, d
		}
	}
	return best
}

// checkEvery bounds how often a cycle polls its context.
const checkEvery = 256

func (c *cycle) placeGangs(ctx context.Context) error {
	has := func(q *wqueue) bool {
		c.load(q)
		for q.gangAt < len(q.apps) && len(q.apps[q.gangAt].gang) == 0 {
			q.gangAt++
		}
		return q.gangAt < len(q.apps)
	}
	for i := 0; ; i++ {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		q := c.pickLeaf(has)
		if q == nil {
			return nil
		}
		app := q.apps[q.gangAt]
		q.gangAt++
		c.tryGang(q, app)
	}
}

// tryGang places a job's whole minimum or nothing.
func (c *cycle) tryGang(q *wqueue, app *wapp) {
	var total quota.Resource
	for _, r := range app.gang {
		total.AddInPlace(r.Resource)
	}
	if !c.fitsQuotaFor(q, app.a.ID, total) || !q.fitsUser(app.a.User, total) {
		return
	}
	unit := objects.Unit{AppID: app.a.ID, Gang: true, Placements: make([]objects.Placement, 0, len(app.gang))}
	placed := make([]*wnode, 0, len(app.gang))
	for _, r := range app.gang {
		n := c.selectNode(r.Resource, r.Nodes)
		if n == nil {
			for i, pn := range placed {
				pn.free.AddInPlace(app.gang[i].Resource)
			}
			app.blockedGang = true
			return
		}
		n.free.SubInPlace(r.Resource)
		placed = append(placed, n)
		unit.Placements = append(unit.Placements, objects.Placement{RequestID: r.ID, NodeID: n.n.ID})
	}
	q.charge(total, 1)
	q.chargeUser(app.a.User, total)
	c.useReserve(q, app.a.ID, total)
	app.gangRunning = true
	app.gang = nil
	c.plan.Units = append(c.plan.Units, unit)
}

func (c *cycle) placeElastic(ctx context.Context) error {
	has := func(q *wqueue) bool {
		for q.elastAt < len(q.apps) {
			a := q.apps[q.elastAt]
			if a.gangRunning && !a.blockedElastic && a.elasticNext < len(a.elastic) {
				return true
			}
			q.elastAt++
		}
		return false
	}
	for i := 0; ; i++ {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		q := c.pickLeaf(has)
		if q == nil {
			return nil
		}
		app := q.apps[q.elastAt]
		r := app.elastic[app.elasticNext]
		if !c.fitsQuotaFor(q, app.a.ID, r.Resource) || !q.fitsUser(app.a.User, r.Resource) {
			// Later requests of this job are no smaller in the common
			// case; move on to the next job rather than retry each.
			q.elastAt++
			continue
		}
		n := c.selectNode(r.Resource, r.Nodes)
		if n == nil {
			app.blockedElastic = true
			q.elastAt++
			continue
		}
		n.free.SubInPlace(r.Resource)
		q.charge(r.Resource, 1)
		q.chargeUser(app.a.User, r.Resource)
		c.useReserve(q, app.a.ID, r.Resource)
		app.elasticNext++
		c.plan.Units = append(c.plan.Units, objects.Unit{AppID: app.a.ID,
			Placements: c.onePlacement(objects.Placement{RequestID: r.ID, NodeID: n.n.ID})})
	}
}
