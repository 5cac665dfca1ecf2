// Package allocator is the ResourceManager facade's side of scheduling: it
// keeps what each ApplicationMaster asks for, and in each cycle gives the
// unified scheduler (package scheduler) a view of nodes, applications,
// running containers and pending asks, applies the plan it returns, and
// records every placement as a container granted to the AM. The RM state
// store stays the single source of truth; the scheduler's store is kept
// in step with it by its committed changes (view), and built from it
// afresh at a start, so nothing here needs to survive a restart beyond
// what the AMs resend.
package allocator

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/scheduler"
	"github.com/weft-sh/weft/scheduler/objects"
	schedstate "github.com/weft-sh/weft/scheduler/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// Options configures an Allocator.
type Options struct {
	// Interval between cycles when nothing asks for one (default 1s); a
	// changed ask starts a cycle as soon as the pause after the last one
	// ends (pauseAfter).
	Interval time.Duration
	// Tiers decides which containers are the job's minimum (medium) and
	// which are elastic (low).
	Tiers     translator.TierPolicy
	Scheduler scheduler.Options
	// PreemptionGrace is the advance notice a preemption victim's AM gets
	// (a PreemptionMessage in each allocate response) before the
	// container is killed (default 15s, as YARN's
	// …capacity.preemption.max_wait_before_kill).
	PreemptionGrace time.Duration
	Logger          *slog.Logger
	Now             func() time.Time
	// Metrics, when set, receives the allocator's Prometheus series.
	Metrics prometheus.Registerer
	// Quotas gives the queues' quotas for a cluster of the given capacity
	// at a time (the server's: absolute ones from Queue objects, time
	// windows applied). Default: the RM's queues' capacities as shares of
	// the cluster (quota.QuotasFromQueues).
	Quotas func(cluster quota.Resource, now time.Time) ([]quota.QueueQuota, error)
	// Pods, when set, are the pods that name Weft's scheduler: AM pods
	// (placed as their attempt's high-tier request in the same cycle as
	// the AMs' asks) and any other pod (placed by its labels, see
	// wellknown.LabelQueue). Without it, nothing binds pods.
	Pods PodSource
	// Profile reads pods' requests (Pods).
	Profile translator.Profile
	// ClusterID is this RM's name on its pods (wellknown.LabelRM).
	ClusterID string
	// Nodes, when set, gives the Kubernetes nodes, whose labels and taints
	// decide where pods may go; without it every node takes every pod.
	Nodes NodeSource
}

// askKey identifies one outstanding ask of an attempt, as YARN keys them:
// priority, allocation request id and capability (the resource name is
// always ResourceRequest.ANY here: placement is the scheduler's).
type askKey struct {
	Priority            int32
	AllocationRequestID int64
	Resource            records.Resource
}

// Containers is what the allocator changes in the RM's records: the
// container lifecycle's grants, preemption notices and kills, and where
// an AM container was placed; and the queues and store it reads.
type Containers interface {
	AllocateBatch(ctx context.Context, grants map[records.AttemptID][]rm.Grant) (map[records.AttemptID][]*records.Container, error)
	AMContainerPlaced(ctx context.Context, id records.ContainerID, node, nodeHTTP string, r records.Resource) error
	PreemptContainer(ctx context.Context, id records.ContainerID, deadline time.Time) (changed bool, err error)
	CompleteContainer(ctx context.Context, id records.ContainerID, exitStatus int32, diagnostics string) (bool, error)
	Queues() rm.Queues
	Snapshot() *state.Snapshot
	Subscribe(func(*state.Snapshot, []state.Change)) (cancel func())
}

// Allocator turns AM asks into granted containers.
type Allocator struct {
	mgr   Containers
	sched *scheduler.Scheduler
	opts  Options

	metrics *metrics

	mu   sync.Mutex
	asks map[records.AttemptID]map[askKey]int
	kick chan struct{}

	// cycleMu makes cycles one at a time; view is theirs.
	cycleMu sync.Mutex
	view    *view

	// refused are the waiting pods told why they cannot be scheduled.
	refusedMu sync.Mutex
	refused   map[types.UID]bool
}

// New returns an Allocator.
func New(mgr Containers, opts Options) *Allocator {
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PreemptionGrace <= 0 {
		opts.PreemptionGrace = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Quotas == nil {
		opts.Quotas = func(cluster quota.Resource, _ time.Time) ([]quota.QueueQuota, error) {
			return quota.QuotasFromQueues(mgr.Queues().Queues(), cluster), nil
		}
	}
	if opts.ClusterID == "" {
		opts.ClusterID = "weft"
	}
	if opts.Tiers.DefaultMinWorkers == 0 && opts.Tiers.HighPriorities == nil {
		opts.Tiers = translator.DefaultTierPolicy
	}
	a := &Allocator{mgr: mgr, sched: scheduler.New(opts.Scheduler), opts: opts, metrics: newMetrics(opts.Metrics),
		asks: map[records.AttemptID]map[askKey]int{}, kick: make(chan struct{}, 1), refused: map[types.UID]bool{}, view: newView()}
	if mgr != nil {
		// For the manager's life: the feed only marks what changed.
		mgr.Subscribe(a.view.observe)
	}
	return a
}

// Update replaces an attempt's outstanding asks with those of an allocate
// call: each ANY request's numContainers is the new total for its key, as
// in YARN (AMRMClient sends totals, and the RM lowers them as it grants).
// Capabilities must have been normalized (rm.Manager.NormalizeRequest).
func (a *Allocator) Update(attempt records.AttemptID, asks []*yarnpb.ResourceRequestProto) {
	if len(asks) == 0 {
		return
	}
	a.mu.Lock()
	m := a.asks[attempt]
	if m == nil {
		m = map[askKey]int{}
		a.asks[attempt] = m
	}
	before := maps.Clone(m)
	for _, r := range asks {
		a.opts.Logger.Debug("ask", "attempt", attempt.String(), "resourceName", r.GetResourceName(), "priority", r.GetPriority().GetPriority(),
			"numContainers", r.GetNumContainers(), "capability", r.GetCapability().String())
		if r.GetResourceName() != "*" {
			continue
		}
		k := askKey{Priority: r.GetPriority().GetPriority(), AllocationRequestID: r.GetAllocationRequestId(),
			Resource: records.Resource{MemoryMB: r.GetCapability().GetMemory(), VCores: r.GetCapability().GetVirtualCores()}}
		if n := int(r.GetNumContainers()); n > 0 {
			m[k] = n
		} else {
			delete(m, k)
		}
	}
	changed := !maps.Equal(before, m)
	a.mu.Unlock()
	if changed {
		a.view.markApp(attempt.App)
		a.Kick()
	}
}

// Forget drops an attempt's asks (it finished).
func (a *Allocator) Forget(attempt records.AttemptID) {
	a.mu.Lock()
	delete(a.asks, attempt)
	a.mu.Unlock()
	a.view.markApp(attempt.App)
}

// Outstanding is what an attempt still waits for: its asks' containers and
// their resources summed, as YARN's AppSchedulingInfo counts an
// application's pending resources for the queue (REST pendingResources).
func (a *Allocator) Outstanding(attempt records.AttemptID) (containers int, resources records.Resource) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, n := range a.asks[attempt] {
		containers += n
		resources = resources.Add(records.Resource{MemoryMB: k.Resource.MemoryMB * int64(n), VCores: k.Resource.VCores * int32(n)})
	}
	return containers, resources
}

// Kick asks for a cycle soon.
func (a *Allocator) Kick() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Run cycles until ctx ends.
func (a *Allocator) Run(ctx context.Context) {
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
		}
		began := time.Now()
		if _, err := a.Cycle(ctx); err != nil {
			a.opts.Logger.Warn("allocation cycle failed", "err", err)
		}
		if pause := pauseAfter(time.Since(began), a.opts.Interval); pause > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pause):
			}
		}
	}
}

// pauseAfter is how long Run waits after a cycle of the given length
// before the next, kicked or not: three times as long as the cycle, at most
// interval. Pods created one by one kick a cycle each; back to back, each
// cycle reading every pod of the cluster, they would take a core of their
// own (test/bench/binding -running: 5,000 pods placed as they arrive cost
// weft-rm three to four times the CPU of placing them in one cycle) — the
// API server's, on a small control plane. Waiting only as long as the
// last cycle took still leaves the cycles most of weft-rm's CPU in such a
// stream, most of each the part that reads every pod and application
// whatever changed. Waiting three times as long keeps scheduling under a
// quarter of a core and lets the next cycle take the arrivals in between
// together. But a quarter of a core is what cycles take whatever each
// costs while arrivals never stop: a cheaper cycle only comes sooner. So
// the pause is also at least minPause, which bounds the cycles' number (at
// most 25 a second) and so their CPU by what each costs; a cycle of a
// millisecond (an AM's ask among a few changes) waits 40. 5,000 pods
// streaming in then take about 390 cycles, where a 20 ms floor takes
// about 630 of some 8 pods each (test/bench/binding -running). YARN's
// asynchronous CapacityScheduler waits between passes too
// (schedule-asynchronously.scheduling-interval-ms, 5 ms, each pass placing
// on one node), and an AM hears of its grant only at its next heartbeat
// (1 s by default) in any case.
func pauseAfter(took, interval time.Duration) time.Duration {
	return min(max(pauseFactor*took, minPause), interval)
}

// pauseFactor is how many times a cycle's length Run waits after it.
const pauseFactor = 3

// minPause is the least Run waits after a cycle.
const minPause = 40 * time.Millisecond

// request ids carry the attempt and ask they came from.
type pendingRequest struct {
	attempt records.AttemptID
	key     askKey
	tier    records.Tier
	queue   string
}

// Cycle runs one scheduling cycle and returns how many containers it
// granted.
func (a *Allocator) Cycle(ctx context.Context) (int, error) {
	a.cycleMu.Lock()
	defer a.cycleMu.Unlock()
	began := time.Now()
	defer a.metrics.observeCycle(began)
	now := a.opts.Now() // the cycle's one instant: quotas' time windows, cooldowns
	snap, nodes := a.snapshot()
	h, err := a.hierarchy(nodes.list, now)
	if err != nil {
		return 0, err
	}

	// Containers on nodes the tidal controller takes back get its notice;
	// victims whose notice ran out are killed first: what they free is
	// this cycle's to place.
	if err := a.tideNotices(ctx, snap, nodes); err != nil {
		return 0, err
	}
	if err := a.killDuePreemptions(ctx, snap); err != nil {
		return 0, err
	}
	// The marks are taken before the snapshot they are read in, which
	// then holds every change marked.
	changed := a.view.take()
	snap, nodes = a.snapshot()
	where := a.view.constraints(nodes, a.opts.Nodes)
	pods, err := a.sync(snap, nodes, h, now, where, changed)
	if err != nil {
		return 0, err
	}
	st, pending := a.view.st, a.view.pending
	a.tellRefused(pods)
	waiting := map[string]int{}
	for _, p := range pending {
		waiting[p.queue]++
	}
	for _, pp := range pods.pending {
		waiting[pp.queue]++
	}
	a.metrics.observeQueues(st, h, waiting)
	if len(pending) == 0 && len(pods.pending) == 0 {
		return 0, nil
	}
	built, asked := time.Now(), len(pending)+len(pods.pending)
	plan, err := a.sched.Schedule(ctx, st.Snapshot())
	if err != nil {
		return 0, err
	}
	result, err := st.ApplyPlan(plan)
	if err != nil {
		a.view.markAll()
		return 0, err
	}
	a.markPlanned(result, pending, pods)
	if err := a.notifyVictims(ctx, result.Preempted, pods); err != nil {
		return 0, err
	}
	grants := map[records.AttemptID][]rm.Grant{}
	var podPlacements []objects.Placement
	for _, u := range result.Applied {
		for _, pl := range u.Placements {
			p, ok := pending[pl.RequestID]
			if !ok {
				podPlacements = append(podPlacements, pl)
				continue
			}
			n, app := snap.Node(pl.NodeID), snap.Application(p.attempt.App)
			if n == nil || app == nil {
				continue
			}
			// Checked against the store when stored (rm.AllocateContainers):
			// a grant whose node or queue moved since this snapshot is
			// refused and its ask decided again next cycle.
			grants[p.attempt] = append(grants[p.attempt], rm.Grant{Node: n.ID, NodeHTTP: n.HTTPAddress, Resource: p.key.Resource,
				Priority: p.key.Priority, AllocationRequestID: p.key.AllocationRequestID, Tier: p.tier, Queue: app.Queue})
		}
	}
	// The grants carry what the RM needs of the plan; the view's copy of
	// it goes before they are stored, which at a large cluster's fill
	// takes seconds, AMs acquiring all the while.
	if err := a.view.releasePlanned(result); err != nil {
		a.view.markAll()
		return 0, err
	}
	decided := time.Now()
	a.metrics.decision.Observe(decided.Sub(began).Seconds())
	// AMs wait on their allocate calls for these: grants before bindings.
	granted := 0
	// On an error, what was stored before it is still taken off the asks.
	stored, storeErr := a.mgr.AllocateBatch(ctx, grants)
	for attempt, made := range stored {
		granted += len(made)
		for _, c := range made {
			a.metrics.granted.WithLabelValues(c.Tier.String()).Inc()
		}
		a.mu.Lock()
		for _, c := range made {
			k := askKey{Priority: c.Priority, AllocationRequestID: c.AllocationRequestID, Resource: c.Resource}
			if m := a.asks[attempt]; m != nil && m[k] > 0 {
				if m[k]--; m[k] == 0 {
					delete(m, k)
				}
			}
		}
		a.mu.Unlock()
	}
	if storeErr != nil {
		return granted, storeErr
	}
	granted += a.bindPods(ctx, snap, pods, podPlacements)
	if granted > 0 {
		a.opts.Logger.Info("granted containers", "count", granted, "pending", asked,
			"rebuilt", changed.full, "appsChanged", len(changed.apps), "nodesChanged", len(changed.nodes),
			"build", built.Sub(began).Round(time.Millisecond), "decide", decided.Sub(built).Round(time.Millisecond),
			"grant", time.Since(decided).Round(time.Millisecond))
	} else {
		a.opts.Logger.Debug("cycle granted nothing", "pending", asked, "applied", len(result.Applied), "rejected", len(result.Rejected))
	}
	return granted, nil
}

// snapshot takes a snapshot of the RM's store and the RUNNING nodes in it
// (view.snapshotNodes).
func (a *Allocator) snapshot() (*state.Snapshot, *nodeSet) {
	return a.view.snapshotNodes(a.mgr.Snapshot)
}

// hierarchy is the queues' quotas for a cluster of the given running
// nodes at now (time windows applied).
func (a *Allocator) hierarchy(nodes []*records.Node, now time.Time) (*quota.Hierarchy, error) {
	var cluster quota.Resource
	for _, n := range nodes {
		cluster.AddInPlace(toQuota(n.Capability))
	}
	quotas, err := a.opts.Quotas(cluster, now)
	if err != nil {
		return nil, fmt.Errorf("allocator: queue quotas: %w", err)
	}
	h, err := quota.NewHierarchy(quotas)
	if err != nil {
		return nil, fmt.Errorf("allocator: queue hierarchy: %w", err)
	}
	return h, nil
}

// markPlanned marks the applications and pods a plan wrote to: its
// placements and victims in the view are the scheduler's guess of what the
// RM will record and the API server will show, so they are made again from
// what they did record and show, whatever happens to the grants and
// bindings.
func (a *Allocator) markPlanned(result *objects.PlanResult, pending map[string]pendingRequest, pods *podView) {
	for _, u := range result.Applied {
		for _, pl := range u.Placements {
			if p, ok := pending[pl.RequestID]; ok {
				a.view.markApp(p.attempt.App)
			} else {
				pods.touched(pl.RequestID)
			}
		}
	}
	for _, v := range result.Preempted {
		if id, err := records.ParseContainerID(v.AllocationID); err == nil {
			a.view.markApp(id.Attempt.App)
		} else {
			pods.touched(v.AllocationID)
		}
	}
}

// derived is what the scheduler's store holds of one attempt, derived
// from the RM's records and the AM's asks: its application, the
// allocations of its live containers on nodes the store has, and a request
// per container asked for, each with its pendingRequest.
type derived struct {
	app      *objects.Application
	allocs   []*objects.Allocation
	requests []*objects.Request
	pending  []pendingRequest
}

// deriveAttempt derives one attempt's objects for the scheduler's store
// w; it writes nothing.
func (a *Allocator) deriveAttempt(w *schedstate.Txn, snap *state.Snapshot, attempt records.AttemptID, asks map[askKey]int,
	where *constraints) (*derived, error) {
	app := snap.Application(attempt.App)
	if app == nil || (app.State != records.AppRunning && app.State != records.AppAccepted) || app.CurrentAttempt != attempt.ID {
		return nil, fmt.Errorf("not running")
	}
	appID := attempt.String()
	q, ok := a.mgr.Queues().Queue(app.Queue)
	if !ok {
		return nil, fmt.Errorf("queue %q is gone", app.Queue)
	}
	d := &derived{app: &objects.Application{ID: appID, Queue: q.Path, User: app.User, Priority: app.Priority,
		Submitted: time.UnixMilli(app.SubmitTime)}}
	// The AM's container counts in its queue, high tier: never a victim.
	if am := amContainer(snap, app); am != nil && w.Node(am.Node) != nil {
		d.allocs = append(d.allocs, &objects.Allocation{ID: snap.ContainerKey(am.ID), AppID: appID, NodeID: am.Node,
			Tier: records.TierHigh, Resource: toQuota(am.Resource)})
	}
	workers := 0
	var largest records.Resource // of the job's workers, running or asked for
	for _, c := range snap.ContainersOfAttempt(attempt) {
		if c.ID.ID == 1 || c.State == records.ContainerComplete {
			continue // the AM's, above
		}
		workers++
		largest = largest.Max(c.Resource)
		if w.Node(c.Node) == nil {
			continue
		}
		// The RM store's copy of the id: 100,000 allocations otherwise
		// hold 100,000 copies of what the store holds.
		d.allocs = append(d.allocs, &objects.Allocation{ID: snap.ContainerKey(c.ID), AppID: appID, NodeID: c.Node,
			Tier: cmp.Or(c.Tier, records.TierLow), Resource: toQuota(c.Resource), Preempting: c.PreemptDeadline != 0})
	}
	// Asks in a stable order (priority, then request id), so the job's
	// minimum goes to its most important requests.
	keys := make([]askKey, 0, len(asks))
	for k := range asks {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Priority != keys[j].Priority {
			return keys[i].Priority < keys[j].Priority
		}
		return keys[i].AllocationRequestID < keys[j].AllocationRequestID
	})
	// A declared maximum holds quota for the workers the job may still
	// run, each as large as its largest, so that jobs scaling at once do
	// not take each other's headroom.
	if most, ok := translator.MaxWorkers(app.Tags); ok && most > workers {
		for _, k := range keys {
			largest = largest.Max(k.Resource)
		}
		per := toQuota(largest)
		for range most - workers {
			d.app.Reserve.AddInPlace(per)
		}
	}
	for _, k := range keys {
		for i := 0; i < asks[k]; i++ {
			tier := a.opts.Tiers.Tier(translator.Container{RequestPriority: k.Priority, WorkersBefore: workers}, app.Tags)
			workers++
			d.requests = append(d.requests, &objects.Request{ID: fmt.Sprintf("%s/%d/%d/%d", appID, k.Priority, k.AllocationRequestID, i),
				AppID: appID, Tier: tier, Resource: toQuota(k.Resource), Nodes: where.forPod(containerPod)})
			d.pending = append(d.pending, pendingRequest{attempt: attempt, key: k, tier: tier, queue: q.Path})
		}
	}
	return d, nil
}

// putAttempt makes w hold d for its application, writing only what
// differs from what w holds: an application derived again because one of
// its containers changed state (acquired, say) or its AM asked for one
// more keeps its hundred other allocations untouched — deleting and
// re-adding them all would make every such change cost the application's
// size in store writes (test/bench/scale: 100,000 containers acquired,
// one application re-derived per acquisition).
//
// Requests are kept only when every one is unchanged, else all are put
// again: requests of an application are ordered by when the store got
// them, and one write for all keeps that order the derivation's.
func putAttempt(w *schedstate.Txn, d *derived) error {
	id := d.app.ID
	old := w.Application(id)
	if old != nil && old.Queue != d.app.Queue {
		// A move: the store cannot move usage between queues.
		if err := w.DeleteApplication(id); err != nil {
			return err
		}
		old = nil
	}
	if old == nil || old.User != d.app.User || old.Priority != d.app.Priority || !old.Submitted.Equal(d.app.Submitted) ||
		old.MinMembers != d.app.MinMembers || !old.Reserve.Equal(d.app.Reserve) {
		if err := w.UpsertApplication(d.app); err != nil {
			return err
		}
	}
	want := make(map[string]*objects.Allocation, len(d.allocs))
	for _, al := range d.allocs {
		want[al.ID] = al
	}
	for _, al := range w.AllocationsOfApp(id) {
		if as := want[al.ID]; as != nil && sameAllocation(al, as) {
			delete(want, al.ID) // held as derived
			continue
		}
		if err := w.ReleaseAllocation(al.ID); err != nil {
			return err
		}
	}
	if held := w.RequestsOfApp(id); !sameRequests(held, d.requests) {
		for _, r := range held {
			if err := w.RemoveRequest(r.ID); err != nil {
				return err
			}
		}
		for _, r := range d.requests {
			if err := w.AddRequest(r); err != nil {
				return err
			}
		}
	}
	for _, al := range d.allocs {
		if _, missing := want[al.ID]; missing {
			if err := w.AddAllocation(al); err != nil {
				return err
			}
		}
	}
	return nil
}

// sameAllocation says whether the store's allocation held is the one
// derived (the fields a derivation sets; the queue is the application's).
func sameAllocation(held, derived *objects.Allocation) bool {
	return held.AppID == derived.AppID && held.NodeID == derived.NodeID && held.Tier == derived.Tier &&
		held.Preempting == derived.Preempting && held.Resource.Equal(derived.Resource)
}

// sameRequests says whether the store's requests of an application are
// the ones derived, in any order.
func sameRequests(held, derived []*objects.Request) bool {
	if len(held) != len(derived) {
		return false
	}
	byID := make(map[string]*objects.Request, len(held))
	for _, r := range held {
		byID[r.ID] = r
	}
	for _, r := range derived {
		h := byID[r.ID]
		if h == nil || h.Tier != r.Tier || !h.Resource.Equal(r.Resource) || !maps.Equal(h.Nodes, r.Nodes) {
			return false
		}
	}
	return true
}

// amContainer is an application's live AM container, once placed (nil
// for unmanaged AMs and AMs not yet placed).
func amContainer(snap *state.Snapshot, app *records.Application) *records.Container {
	c := snap.Container(records.ContainerID{Attempt: records.AttemptID{App: app.ID, ID: app.CurrentAttempt}, ID: 1})
	if c == nil || c.Node == "" || c.State == records.ContainerComplete {
		return nil
	}
	return c
}

// notifyVictims marks the plan's preemption victims, whose AMs are then
// told in their allocate responses until the grace period ends.
func (a *Allocator) notifyVictims(ctx context.Context, victims []objects.Preemption, pods *podView) error {
	deadline := a.opts.Now().Add(a.opts.PreemptionGrace)
	for _, v := range victims {
		if p := pods.bound[v.AllocationID]; p != nil {
			if err := a.opts.Pods.Preempt(ctx, p, a.opts.PreemptionGrace); err != nil {
				a.opts.Logger.Warn("preempting pod", "pod", p.Namespace+"/"+p.Name, "err", err)
				continue
			}
			a.metrics.preempted.WithLabelValues(v.Tier.String(), v.VictimQueue).Inc()
			a.opts.Logger.Info("preempting pod", "pod", p.Namespace+"/"+p.Name, "for", v.ForQueue, "from", v.VictimQueue)
			continue
		}
		id, err := records.ParseContainerID(v.AllocationID)
		if err != nil {
			return fmt.Errorf("allocator: victim %q: %w", v.AllocationID, err)
		}
		marked, err := a.mgr.PreemptContainer(ctx, id, deadline)
		if err != nil {
			return err
		}
		if marked {
			a.metrics.preempted.WithLabelValues(v.Tier.String(), v.VictimQueue).Inc()
			a.opts.Logger.Info("preempting container", "container", id.String(), "for", v.ForQueue, "from", v.VictimQueue,
				"deadline", deadline.Format(time.RFC3339))
		}
	}
	return nil
}

// tideNotices announces every task container on a node the tidal
// controller is taking back from batch work (scheduler/tide: state
// OfflineToOnline) to its AM, in the PreemptionMessage of each allocate,
// with the tide's deadline: a container that finishes within the notice
// is never killed; one still running at the deadline is killed
// PREEMPTED, as any preemption victim. The AM's own container goes with
// its pod at the deadline (the tide evicts it; its next attempt runs
// elsewhere).
func (a *Allocator) tideNotices(ctx context.Context, snap *state.Snapshot, nodes *nodeSet) error {
	if a.opts.Nodes == nil {
		return nil
	}
	takenBack := a.opts.Nodes.KubeNodesInTideState(wellknown.TideOfflineToOnline)
	if len(takenBack) == 0 {
		return nil
	}
	// A node being taken back is DECOMMISSIONING to the RM (nodesync),
	// RUNNING until its record says so.
	decommissioning := map[string]*records.Node{}
	for _, n := range snap.Nodes(records.NodeDecommissioning) {
		decommissioning[n.Host] = n
	}
	deadlines := map[string]time.Time{}
	for _, kn := range takenBack {
		n := nodes.byHost[kn.Name]
		if n == nil {
			n = decommissioning[kn.Name]
		}
		if n == nil {
			continue
		}
		if t, err := wellknown.ParseTime(kn.Annotations[wellknown.AnnotationTideNoticeDeadline]); err == nil {
			deadlines[n.ID] = t
		}
	}
	for node, deadline := range deadlines {
		for _, c := range snap.ContainersOnNode(node) {
			if c.ID.ID == 1 || c.State == records.ContainerComplete || c.PreemptDeadline != 0 {
				continue
			}
			if app := snap.Application(c.ID.Attempt.App); app == nil || app.State != records.AppRunning {
				continue
			}
			marked, err := a.mgr.PreemptContainer(ctx, c.ID, deadline)
			if err != nil {
				return err
			}
			if marked {
				a.opts.Logger.Info("container on a node taken back from batch: notice given", "container", c.ID.String(), "node", c.Node, "deadline", deadline)
			}
		}
	}
	return nil
}

// killDuePreemptions ends the victims whose notice is over, as YARN kills
// them: PREEMPTED, which AMs do not count as the task's failure. The
// launcher then deletes their pods.
func (a *Allocator) killDuePreemptions(ctx context.Context, snap *state.Snapshot) error {
	now := a.opts.Now().UnixMilli()
	for _, c := range snap.PreemptingContainers() {
		if c.PreemptDeadline > now {
			continue
		}
		if app := snap.Application(c.ID.Attempt.App); app == nil || app.State != records.AppRunning {
			continue
		}
		if _, err := a.mgr.CompleteContainer(ctx, c.ID, records.ExitPreempted, "Container preempted by scheduler"); err != nil {
			return err
		}
		a.opts.Logger.Info("killed preempted container", "container", c.ID.String())
	}
	return nil
}

func toQuota(r records.Resource) quota.Resource {
	return quota.Resource{MilliCPU: int64(r.VCores) * 1000, Memory: r.MemoryMB << 20}
}
