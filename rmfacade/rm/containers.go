package rm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// Grant is a container the scheduler placed for an attempt, before it has
// an id.
type Grant struct {
	Node, NodeHTTP      string
	Resource            records.Resource
	Priority            int32
	AllocationRequestID int64
	Tier                records.Tier
	// Queue is the application's queue the grant was decided for; empty,
	// the queue is not checked.
	Queue string
}

// nextContainerID is one past the highest container id of the attempt
// (the AM container is 1).
func nextContainerID(w *state.WriteTxn, id records.AttemptID) int64 {
	next := int64(2)
	for _, c := range w.ContainersOfAttempt(id) {
		if c.ID.ID >= next {
			next = c.ID.ID + 1
		}
	}
	return next
}

// AllocateContainers stores grants as NEW containers of a live attempt,
// to be handed to its AM by the next allocate call, and returns those it
// stored. A finished attempt gets nothing: the grants are dropped and nil
// returned. It is AllocateBatch for one attempt.
func (m *Manager) AllocateContainers(ctx context.Context, id records.AttemptID, grants []Grant) ([]*records.Container, error) {
	made, err := m.AllocateBatch(ctx, map[records.AttemptID][]Grant{id: grants})
	return made[id], err
}

// AllocateBatch stores a scheduling cycle's grants, of any number of
// attempts, in few transactions — one durable commit for up to
// maxGrantsPerWrite grants (an attempt's grants always in one) rather than
// one per application — and returns the containers stored, by attempt. A
// finished attempt gets nothing: its grants are dropped. On an error, the
// containers returned are those stored before it.
//
// The scheduler decided the grants over a snapshot, and the store may
// have moved since (a node cooling down or lost, online pods taking room,
// an AM container placed, the application moved to another queue). Each
// grant is checked here against the store it changes, as Nomad's plan
// applier checks a plan against the state it writes: one whose node is
// gone, not RUNNING, cooling down or without room for it any more (its
// capacity, less what other pods occupy and what live containers there
// hold, those stored before it in this call included), or whose
// application is no longer in the queue it was decided for, is refused:
// left out of the result, its ask still outstanding for the next cycle to
// decide again. A refusal never over-commits a node.
func (m *Manager) AllocateBatch(ctx context.Context, grants map[records.AttemptID][]Grant) (map[records.AttemptID][]*records.Container, error) {
	out := map[records.AttemptID][]*records.Container{}
	refused := map[records.AttemptID]int{}
	// Attempts in a stable order: which of two attempts' grants a node
	// refuses when it has room for one must not depend on map order.
	ids := slices.SortedFunc(maps.Keys(grants), records.AttemptID.Compare)
	for len(ids) > 0 {
		n, size := 1, len(grants[ids[0]])
		for ; n < len(ids) && size+len(grants[ids[n]]) <= maxGrantsPerWrite; n++ {
			size += len(grants[ids[n]])
		}
		if err := m.storeGrants(ids[:n], grants, out, refused); err != nil {
			return out, err // what the transactions before stored stays stored
		}
		ids = ids[n:]
	}
	for _, id := range slices.SortedFunc(maps.Keys(refused), records.AttemptID.Compare) {
		if refused[id] > 0 {
			m.opts.Logger.Info("grants refused: their node or queue changed since the cycle decided them", "attempt", id.String(),
				"refused", refused[id], "stored", len(out[id]))
		}
	}
	return out, nil
}

// maxGrantsPerWrite bounds the grants AllocateBatch stores in one
// transaction. A transaction holds until it commits every record it
// writes twice more — its durable encoding, and its dirty pages in bbolt
// (which copies them again when its file grows) — so one write of a large
// cluster's fill, 100,000 grants of a single cycle, would set weft-rm's
// peak heap (at 30,000 grants, writes of 5,000 keep the largest live heap
// about a quarter lower than one write). Each grant is checked against
// the store as the transaction that stores it has it, so the
// transactions after the first see the grants before them.
const maxGrantsPerWrite = 5000

// storeGrants stores the grants of attempts ids in one transaction, adding
// what it stored to out and the number it refused to refused.
func (m *Manager) storeGrants(ids []records.AttemptID, grants map[records.AttemptID][]Grant,
	out map[records.AttemptID][]*records.Container, refused map[records.AttemptID]int) error {
	var made map[records.AttemptID][]*records.Container
	var no map[records.AttemptID]int
	err := m.store.Update(func(w *state.WriteTxn) error {
		made, no = map[records.AttemptID][]*records.Container{}, map[records.AttemptID]int{}
		now := m.opts.Now().UnixMilli()
		free := map[string]records.Resource{} // per node, as of this transaction
		for _, id := range ids {
			app, att, err := liveAttempt(w, id)
			if err != nil || att.State != records.AttemptRunning {
				continue
			}
			next := nextContainerID(w, id)
			for _, g := range grants[id] {
				room, seen := free[g.Node]
				if !seen {
					room = roomOn(w, g.Node, now)
				}
				if (g.Queue != "" && g.Queue != app.Queue) || !g.Resource.Fits(room) {
					no[id]++
					free[g.Node] = room
					continue
				}
				free[g.Node] = room.Sub(g.Resource)
				c := &records.Container{
					ID: records.ContainerID{Attempt: id, ID: next}, Node: g.Node, NodeHTTP: g.NodeHTTP,
					Resource: g.Resource, Priority: g.Priority, AllocationRequestID: g.AllocationRequestID, Tier: g.Tier,
					State: records.ContainerNew, ExitStatus: records.ExitInvalid, StartTime: now,
				}
				next++
				if err := w.PutContainer(c); err != nil {
					return err
				}
				made[id] = append(made[id], c)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	maps.Copy(out, made)
	maps.Copy(refused, no)
	return nil
}

// roomOn is what a node can still take as w has it: nothing unless it is
// RUNNING and not cooling down; else its capacity less what other pods
// occupy and what its live containers hold. A live container is one the
// scheduler counts too (allocator.addAttempt): not complete, of the
// current attempt of an ACCEPTED or RUNNING application; counting others
// would refuse, cycle after cycle, grants the scheduler keeps deciding.
func roomOn(w *state.WriteTxn, node string, nowMs int64) records.Resource {
	n := w.Node(node)
	if n == nil || n.State != records.NodeRunning || n.CooldownUntil > nowMs {
		return records.Resource{}
	}
	room := n.Capability.Sub(n.Occupied)
	apps := map[records.ApplicationID]*records.Application{}
	for _, c := range w.ContainersOnNode(node) {
		if c.State == records.ContainerComplete {
			continue
		}
		app, seen := apps[c.ID.Attempt.App]
		if !seen {
			app = w.Application(c.ID.Attempt.App)
			apps[c.ID.Attempt.App] = app
		}
		if app != nil && (app.State == records.AppAccepted || app.State == records.AppRunning) && app.CurrentAttempt == c.ID.Attempt.ID {
			room = room.Sub(c.Resource)
		}
	}
	return room
}

// ContainerRunning records that a container's process started.
func (m *Manager) ContainerRunning(ctx context.Context, id records.ContainerID) error {
	return m.store.Update(func(w *state.WriteTxn) error {
		c := w.Container(id)
		if c == nil || c.State != records.ContainerNew {
			return nil
		}
		cp := *c
		cp.State = records.ContainerRunning
		return w.PutContainer(&cp)
	})
}

// CompleteContainer records a container's end with YARN's exit status and
// diagnostics. The first completion wins; later ones are no-ops.
func (m *Manager) CompleteContainer(ctx context.Context, id records.ContainerID, exitStatus int32, diagnostics string) (bool, error) {
	var changed bool
	err := m.store.Update(func(w *state.WriteTxn) error {
		changed = false
		c := w.Container(id)
		if c == nil {
			return fmt.Errorf("container %s is unknown", id)
		}
		if c.State == records.ContainerComplete {
			return nil
		}
		cp := *c
		cp.State, cp.ExitStatus, cp.Diagnostics, cp.FinishTime = records.ContainerComplete, exitStatus, diagnostics, m.opts.Now().UnixMilli()
		changed = true
		return w.PutContainer(&cp)
	})
	return changed, err
}

// PreemptContainer marks a running container as a preemption victim with
// a deadline, durably: the notice the AM gets and the kill that follows
// survive an RM restart. A container already marked, or complete, keeps
// its state; changed tells whether this call marked it.
func (m *Manager) PreemptContainer(ctx context.Context, id records.ContainerID, deadline time.Time) (changed bool, err error) {
	err = m.store.Update(func(w *state.WriteTxn) error {
		changed = false
		c := w.Container(id)
		if c == nil || c.State == records.ContainerComplete || c.PreemptDeadline != 0 {
			return nil
		}
		cp := *c
		cp.PreemptDeadline = deadline.UnixMilli()
		changed = true
		return w.PutContainer(&cp)
	})
	return changed, err
}

// AMContainerPlaced records where the cluster's scheduler put an attempt's
// AM container (container 1), so its node and logs can be shown.
func (m *Manager) AMContainerPlaced(ctx context.Context, id records.ContainerID, node, nodeHTTP string, r records.Resource) error {
	return m.store.Update(func(w *state.WriteTxn) error {
		if c := w.Container(id); c != nil && c.Node == node {
			return nil
		}
		return w.PutContainer(&records.Container{ID: id, Node: node, NodeHTTP: nodeHTTP, Resource: r, State: records.ContainerRunning,
			ExitStatus: records.ExitInvalid, StartTime: m.opts.Now().UnixMilli(), Tier: records.TierHigh, Acquired: true})
	})
}

// Recovered is what Recover found in the store.
type Recovered struct {
	// Applications and Containers are the live applications and their
	// containers that were NEW or RUNNING: they carry on.
	Applications, Containers int
	// Dropped are containers granted to an attempt but never handed to
	// its AM.
	Dropped int
	// Removed are completed applications beyond MaxCompletedApplications,
	// removed with their attempts and containers: the limit was lowered
	// since they were stored, or the store predates it.
	Removed int
}

// droppedDiagnostics is what a grant never handed to its AM ends with.
const droppedDiagnostics = "Container allocated before the ResourceManager restarted and never acquired by its AM; the AM asks for it again when it resyncs"

// Recover settles what the previous RM incarnation left in the store,
// before this one serves (YARN's work-preserving recovery): applications,
// attempts and the containers their AMs hold carry on as they were — the
// AMs re-register and resend their outstanding asks. Containers granted
// but never handed to their AM are dropped: a resyncing AM asks for them
// again, so keeping them would grant the same ask twice (YARN's RM does
// not recover them either: only what NodeManagers report running).
// Containers still live in ended applications end at their application's
// end. The completed applications beyond MaxCompletedApplications are
// removed.
func (m *Manager) Recover(ctx context.Context) (Recovered, error) {
	var r Recovered
	err := m.store.Update(func(w *state.WriteTxn) error {
		r = Recovered{}
		now := m.opts.Now().UnixMilli()
		for _, a := range w.Applications(state.ApplicationFilter{States: []records.AppState{records.AppAccepted, records.AppRunning}}) {
			r.Applications++
			for _, c := range w.ContainersOfApp(a.ID) {
				if c.State == records.ContainerComplete {
					continue
				}
				if c.Acquired || c.ID.ID == 1 {
					r.Containers++
					continue
				}
				cp := *c
				cp.State, cp.ExitStatus, cp.Diagnostics, cp.FinishTime = records.ContainerComplete, records.ExitAborted, droppedDiagnostics, now
				cp.Acquired, cp.Reported = true, true // never the AM's: nothing to tell it
				if err := w.PutContainer(&cp); err != nil {
					return err
				}
				r.Dropped++
			}
		}
		// An ended application holds nothing; a store written before ended
		// applications' containers were completed with them still shows
		// them live, their usage growing: they end at the application's
		// end.
		for _, a := range w.Applications(state.ApplicationFilter{States: []records.AppState{records.AppFinished, records.AppFailed, records.AppKilled}}) {
			if err := endApplicationContainers(w, a, records.ExitKilledByRM, CompletedApplicationDiagnostics); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	r.Removed, err = m.recoverRetention()
	if err != nil {
		return r, fmt.Errorf("retention of completed applications: %w", err)
	}
	return r, nil
}
