package allocator

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/scheduler/objects"
	schedstate "github.com/weft-sh/weft/scheduler/state"
)

// view is the scheduler's store kept from one cycle to the next, in step
// with the RM's store by its committed changes (state.Store.Subscribe)
// and with the AMs' asks: a cycle brings into it only the applications
// and nodes that changed since the last — rebuilding every running
// container and pending ask each cycle costs 29% of weft-rm's CPU at
// 1,000 nodes with nothing to place.
//
// An application is brought in by deriving its objects (its scheduler
// application, allocations and requests) from the RM's records afresh, so
// its state in the view never drifts from the store, and writing what
// differs from what the view holds (putAttempt); a node by upserting it. What a cycle's plan wrote into the view (placements, victims marked)
// is the scheduler's guess of what the RM will record: each application a
// plan touched is marked and derived again from what the RM did record, at
// the next cycle (its YARN placements leave the view as soon as the grants
// are built, releasePlanned). Pods that name Weft's scheduler come from an
// informer, not the RM's store: a cycle makes again only those whose
// resource version or node moved, or that a plan wrote to (podView).
//
// A cycle rebuilds the whole view (a new store) on its first run, when
// the queues changed, when the nodes a YARN container may go to changed
// (their labels and taints), and after a failed write.
type view struct {
	// mu guards the marks, which the RM store's writers (under its write
	// lock: they must not wait) and allocate calls set.
	mu    sync.Mutex
	full  bool
	apps  map[records.ApplicationID]bool
	nodes map[string]bool
	// runningStale: a node was added or removed, or changed what a cycle
	// reads of it, since running was listed.
	runningStale bool

	// The rest is the cycle's (Allocator.cycleMu).
	st *schedstate.Store
	// sched is each RM application's scheduler application in st (its
	// attempt's id), to remove when the application ends or moves on to
	// another attempt.
	sched map[records.ApplicationID]string
	// pending are the YARN asks in st, by request id; byApp their ids by
	// application.
	pending map[string]pendingRequest
	byApp   map[records.ApplicationID][]string
	// pendingPeak is the most entries pending held since it was made:
	// see shrunk.
	pendingPeak int
	// cooling are nodes cordoned by a cooldown, with its end: the view
	// uncordons them when it passes.
	cooling map[string]int64
	// allowed is where a YARN container may go, as the asks in st say,
	// and allowedBy the constraints that said so.
	allowed   map[string]bool
	allowedBy *constraints
	// pods is what the store holds of the pods that name Weft's
	// scheduler.
	pods *podView
	// running are the RUNNING nodes as of a snapshot, kept until a node
	// write that moves what a cycle reads of them (runningStale).
	running *nodeSet
	// memberships numbers the distinct node sets running has held.
	memberships uint64
	// where is where pods may go among running, kept while running and
	// the Kubernetes nodes' PlacementVersion stay.
	where *constraints
}

// nodeSet is the RUNNING nodes as of a snapshot, with the lookups each
// cycle makes of them.
type nodeSet struct {
	// list is in id order.
	list []*records.Node
	byID map[string]*records.Node
	// byHost is by the RM node's host: the Kubernetes node's name.
	byHost map[string]*records.Node
	// members is the same number in the sets of the same nodes (ids and
	// hosts): where pods may go among them is the same while the
	// Kubernetes nodes' PlacementVersion stays, though the records changed
	// (a pod bound, a cooldown).
	members uint64
}

// sameMembers tells whether a and b hold the same nodes, by id and host.
func sameMembers(a, b []*records.Node) bool {
	return slices.EqualFunc(a, b, func(x, y *records.Node) bool { return x.ID == y.ID && x.Host == y.Host })
}

// runningNodes returns snap's RUNNING nodes, listing them only when stale
// (snapshotNodes) says a node moved since the last list: several cycles a
// second over 10,000 nodes otherwise list, sort and index them all for
// nothing (a tenth of weft-rm's allocations while heartbeating,
// test/bench/scale). Only the writes that move what a cycle reads of a node
// count (schedulingMoved): while Weft binds, each node is written again and
// again with what Weft's own pods hold there (its Used and NumContainers,
// which no cycle reads from the set), and listing on every write would be
// a quarter of the cycles' CPU in test/bench/binding -running.
// The set's records then may be older than snap's for those fields alone;
// for every field a cycle reads, the set is snap's.
func (v *view) runningNodes(snap *state.Snapshot, stale bool) *nodeSet {
	if v.running != nil && !stale {
		return v.running
	}
	list := snap.Nodes(records.NodeRunning)
	ns := &nodeSet{list: list, byID: make(map[string]*records.Node, len(list)), byHost: make(map[string]*records.Node, len(list))}
	if v.running != nil && sameMembers(v.running.list, list) {
		ns.members = v.running.members
	} else {
		v.memberships++
		ns.members = v.memberships
	}
	for _, n := range list {
		ns.byID[n.ID] = n
		ns.byHost[n.Host] = n
	}
	v.running = ns
	return ns
}

// snapshotNodes takes a snapshot (by take) and the RUNNING nodes in it,
// listed again when a write since the last list moved them. The mark is
// cleared before the snapshot, which then holds every write before it; a
// write that marks the nodes again meanwhile may or may not be in the
// snapshot, so they are listed from it and stay marked for the next.
func (v *view) snapshotNodes(take func() *state.Snapshot) (*state.Snapshot, *nodeSet) {
	v.mu.Lock()
	stale := v.runningStale
	v.runningStale = false
	v.mu.Unlock()
	snap := take()
	v.mu.Lock()
	stale = stale || v.runningStale
	v.mu.Unlock()
	return snap, v.runningNodes(snap, stale)
}

// constraints returns where pods may go among nodes, as kube's nodes say:
// the last cycle's, with what it evaluated, while neither the nodes'
// members nor kube's PlacementVersion moved. While binding, each pod bound
// writes its node's record (what Weft holds there), and evaluating again
// made every waiting pod's request again each cycle (test/bench/binding).
func (v *view) constraints(nodes *nodeSet, kube NodeSource) *constraints {
	if w := v.where; w != nil && w.nodes.members == nodes.members && (kube == nil || kube.PlacementVersion() == w.version) {
		return w
	}
	v.where = newConstraints(nodes, kube)
	return v.where
}

// marks are what changed since the last cycle.
type marks struct {
	full  bool
	apps  map[records.ApplicationID]bool
	nodes map[string]bool
}

func newView() *view {
	return &view{full: true, apps: map[records.ApplicationID]bool{}, nodes: map[string]bool{}, pods: newPodView()}
}

// observe is the RM store's change feed: it marks what changed.
func (v *view) observe(_ *state.Snapshot, changes []state.Change) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, c := range changes {
		rec := c.After
		if rec == nil {
			rec = c.Before
		}
		switch r := rec.(type) {
		case *records.Application:
			v.apps[r.ID] = true
		case *records.Container:
			v.apps[r.ID.Attempt.App] = true
		case *records.Node:
			before, _ := c.Before.(*records.Node)
			after, _ := c.After.(*records.Node)
			if before == nil || after == nil || schedulingMoved(before, after) {
				v.nodes[r.ID] = true
				v.runningStale = true
			}
		}
	}
}

// schedulingMoved tells whether a node record's new version changes what
// a cycle reads of it: its state, capacity, what others hold there, its
// cooldown, where its containers are reached. What Weft's own pods hold
// there (Used, NumContainers), which the cycle takes from the pods, and
// the report's time do not: while Weft binds, most node writes are those.
func schedulingMoved(before, after *records.Node) bool {
	return before.State != after.State || before.Capability != after.Capability || before.Occupied != after.Occupied ||
		before.CooldownUntil != after.CooldownUntil || before.Host != after.Host || before.HTTPAddress != after.HTTPAddress
}

// markApp marks an application whose asks changed, or whose objects a
// plan wrote.
func (v *view) markApp(id records.ApplicationID) {
	v.mu.Lock()
	v.apps[id] = true
	v.mu.Unlock()
}

// markAll asks the next cycle for a whole new view.
func (v *view) markAll() {
	v.mu.Lock()
	v.full, v.runningStale = true, true
	v.mu.Unlock()
}

// take returns the marks and clears them. A cycle takes them before it
// takes the snapshot it reads them in, so that the snapshot holds every
// change marked.
func (v *view) take() marks {
	v.mu.Lock()
	defer v.mu.Unlock()
	m := marks{full: v.full, apps: v.apps, nodes: v.nodes}
	v.full, v.apps, v.nodes = false, map[records.ApplicationID]bool{}, map[string]bool{}
	return m
}

// reset starts a new store for h.
func (v *view) reset(h *quota.Hierarchy) error {
	st, err := schedstate.New(h)
	if err != nil {
		return err
	}
	v.st, v.sched, v.pending, v.byApp, v.cooling, v.pods = st, map[records.ApplicationID]string{}, map[string]pendingRequest{},
		map[records.ApplicationID][]string{}, map[string]int64{}, newPodView()
	v.pendingPeak = 0
	return nil
}

// sync brings the view up to snap and the asks: the marked nodes and
// applications (all of them on a full rebuild), cooldowns that ended,
// and the pods that changed. It returns what the view holds of the pods.
func (a *Allocator) sync(snap *state.Snapshot, nodes *nodeSet, h *quota.Hierarchy, now time.Time, where *constraints,
	m marks) (*podView, error) {
	v := a.view
	allowed := where.forPod(containerPod)
	// Kept constraints answer as they did: compared again only when
	// evaluated again.
	if !m.full && (v.st == nil || (where != v.allowedBy && !maps.Equal(allowed, v.allowed))) {
		m.full = true
	}
	if !m.full {
		if err := v.st.SetHierarchy(h); errors.Is(err, schedstate.ErrQueuesChanged) {
			m.full = true
		} else if err != nil {
			return nil, err
		}
	}
	if m.full {
		if err := v.reset(h); err != nil {
			return nil, err
		}
	}
	// The waiting pods' requests were made with the last allowedBy.
	whereMoved := where != v.allowedBy
	v.allowed, v.allowedBy = allowed, where
	err := v.st.Update(func(w *schedstate.Txn) error {
		if !m.full {
			if err := v.pods.undoEveryCycle(w); err != nil {
				return err
			}
		}
		moved, err := a.syncNodes(w, snap, nodes, now, m)
		if err != nil {
			return err
		}
		if err := a.syncApps(w, snap, where, m); err != nil {
			return err
		}
		return a.syncPods(w, snap, nodes, where, moved, whereMoved)
	})
	if err != nil {
		// The store is as it was, the bookkeeping beside it is not.
		v.markAll()
		return nil, err
	}
	return v.pods, nil
}

// syncNodes upserts the marked nodes (every running node on a full
// rebuild) and those whose cooldown ended, and removes the marked nodes
// no longer running. An application with containers on a node the view
// did not have is marked: its allocations there were left out. It
// reports whether a node entered or left the view.
func (a *Allocator) syncNodes(w *schedstate.Txn, snap *state.Snapshot, nodes *nodeSet, now time.Time, m marks) (moved bool, err error) {
	v := a.view
	running := nodes.byID
	ids := m.nodes
	if m.full {
		ids = make(map[string]bool, len(running))
		for id := range running {
			ids[id] = true
		}
	}
	for id, until := range v.cooling {
		if until <= now.UnixMilli() {
			ids[id] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		n := running[id]
		if n == nil {
			delete(v.cooling, id)
			if w.Node(id) != nil {
				if err := w.DeleteNode(id); err != nil {
					return false, err
				}
				moved = true
			}
			continue
		}
		known := w.Node(id) != nil
		// What a node's other pods hold (Occupied) excludes Weft's own:
		// AM and task containers, and the pods Weft's scheduler binds.
		cordoned := n.CooldownUntil > now.UnixMilli()
		if err := w.UpsertNode(&objects.Node{ID: n.ID, Allocatable: toQuota(n.Capability), NonWeftUsed: toQuota(n.Occupied),
			Cordoned: cordoned}); err != nil {
			return false, err
		}
		moved = moved || !known
		if cordoned {
			v.cooling[id] = n.CooldownUntil
		} else {
			delete(v.cooling, id)
		}
		if !known && !m.full {
			for _, c := range snap.ContainersOnNode(id) {
				m.apps[c.ID.Attempt.App] = true
			}
		}
	}
	return moved, nil
}

// syncApps derives the marked applications (every live one on a full
// rebuild) again: their old objects out, their attempt's application,
// live containers and asks in.
func (a *Allocator) syncApps(w *schedstate.Txn, snap *state.Snapshot, where *constraints, m marks) error {
	v := a.view
	ids := m.apps
	if m.full {
		// Every application past admission, asking or not: queues' usage,
		// and the allocations preemption may take back, are all of them;
		// an accepted application's AM pod may be waiting for a node.
		ids = map[records.ApplicationID]bool{}
		live := snap.Applications(state.ApplicationFilter{States: []records.AppState{records.AppAccepted, records.AppRunning}})
		for _, app := range live {
			ids[app.ID] = true
		}
	}
	for _, id := range slices.SortedFunc(maps.Keys(ids), records.ApplicationID.Compare) {
		for _, rid := range v.byApp[id] {
			delete(v.pending, rid)
		}
		delete(v.byApp, id)
		var d *derived
		if app := snap.Application(id); app != nil && (app.State == records.AppAccepted || app.State == records.AppRunning) && app.CurrentAttempt != 0 {
			attempt := records.AttemptID{App: app.ID, ID: app.CurrentAttempt}
			var err error
			if d, err = a.deriveAttempt(w, snap, attempt, a.asksOf(attempt), where); err != nil {
				a.opts.Logger.Warn("allocator: skipping attempt", "attempt", attempt.String(), "err", err)
			}
		}
		// An application gone, ended or on a new attempt leaves the view.
		if sid, ok := v.sched[id]; ok && (d == nil || d.app.ID != sid) {
			if w.Application(sid) != nil {
				if err := w.DeleteApplication(sid); err != nil {
					return fmt.Errorf("allocator: view: %w", err)
				}
			}
			delete(v.sched, id)
		}
		if d == nil {
			continue
		}
		if err := putAttempt(w, d); err != nil {
			// Left out whole, as an attempt that could not be derived.
			a.opts.Logger.Warn("allocator: skipping attempt", "attempt", d.app.ID, "err", err)
			if w.Application(d.app.ID) != nil {
				if err := w.DeleteApplication(d.app.ID); err != nil {
					return fmt.Errorf("allocator: view: %w", err)
				}
			}
			delete(v.sched, id)
			continue
		}
		v.sched[id] = d.app.ID
		for i, r := range d.requests {
			v.pending[r.ID] = d.pending[i]
			v.byApp[id] = append(v.byApp[id], r.ID)
		}
	}
	v.pending, v.pendingPeak = shrunk(v.pending, v.pendingPeak)
	return nil
}

// releasePlanned takes out of the view what a plan made of YARN asks (the
// allocations it applied, the asks' entries in pending) once the cycle has
// built the grants from them: the next cycle derives those applications
// again (markPlanned) from what the RM recorded, under its container ids.
// Kept until then, a large cluster's fill would hold its 100,000 planned
// allocations while the grants are stored and then beside their derived
// copies: the peak of weft-rm's heap.
func (v *view) releasePlanned(result *objects.PlanResult) error {
	return v.st.Update(func(w *schedstate.Txn) error {
		var ids []string
		for _, u := range result.Applied {
			for _, pl := range u.Placements {
				if _, ok := v.pending[pl.RequestID]; !ok {
					continue // a pod's: undone with the pods' cycle
				}
				delete(v.pending, pl.RequestID)
				if w.Allocation(pl.RequestID) != nil {
					ids = append(ids, pl.RequestID)
				}
			}
		}
		if err := w.ReleaseAllocations(ids...); err != nil {
			return fmt.Errorf("allocator: view: %w", err)
		}
		v.pending, v.pendingPeak = shrunk(v.pending, v.pendingPeak)
		return nil
	})
}

// shrinkFrom is the fewest entries a map must once have held for shrunk
// to copy it.
const shrinkFrom = 1024

// shrunk returns m and the most entries it held (peak, updated), or, once
// m holds a quarter of that or less, a copy of m sized to what it holds
// and that size as the new peak. A Go map keeps the room of the most it
// ever held: a large cluster's 100,000 pending asks, once granted, would
// keep 11 MB in a map then empty.
func shrunk[K comparable, V any](m map[K]V, peak int) (map[K]V, int) {
	peak = max(peak, len(m))
	if peak < shrinkFrom || len(m) > peak/4 {
		return m, peak
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c, len(m)
}

// asksOf copies an attempt's outstanding asks.
func (a *Allocator) asksOf(attempt records.AttemptID) map[askKey]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.asks[attempt])
}
