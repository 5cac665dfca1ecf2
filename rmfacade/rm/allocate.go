package rm

import (
	"context"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// Allocation is what one allocate call of an AM asks of the RM's records,
// beside its asks (which go to the scheduler, not the store).
type Allocation struct {
	// Attempt is the caller's attempt, as its AMRMToken names it.
	Attempt records.AttemptID
	// Release lists the containers the AM gives back. Containers of other
	// applications are ignored, as YARN ignores them.
	Release []records.ContainerID
	// Acquire hands the AM the containers placed for it since its last
	// call. Only a cluster's scheduler places containers; without one
	// there are none to hand.
	Acquire bool
}

// Allocated is the records' answer to an Allocation, as of one
// transaction.
type Allocated struct {
	Application *records.Application
	// Acquired are the containers newly handed to the AM, marked so: they
	// are never handed again.
	Acquired []*records.Container
	// Completed are the containers that completed since the AM last
	// heard, the released ones among them, marked reported.
	Completed []*records.Container
	// Preempting are the attempt's live containers under a preemption
	// notice: every response names them until they are gone.
	Preempting []*records.Container
	// UnknownReleases are the released containers the RM has no record
	// of; YARN logs them and carries on.
	UnknownReleases []records.ContainerID
}

// ReleasedDiagnostics is what a container the AM released says when it
// is reported complete, as YARN's SchedulerUtils.RELEASED_CONTAINER.
const ReleasedDiagnostics = "Container released by application"

// Allocate is the store's half of YARN's allocate: in one transaction it
// completes the containers the AM releases, hands it its new containers
// and takes the completions it has yet to hear of, for an attempt still
// live; so a response never reports half of what one call changed.
//
// Most heartbeats change nothing: those are answered from a snapshot,
// without the store's write lock, which a thousand AMs' heartbeats would
// otherwise queue on. A container stored after that read is handed over
// by the next heartbeat, as one stored just after the write would be.
func (m *Manager) Allocate(ctx context.Context, a Allocation) (Allocated, error) {
	id := a.Attempt
	release := make([]records.ContainerID, 0, len(a.Release))
	for _, c := range a.Release {
		if c.Attempt.App == id.App {
			release = append(release, c)
		}
	}
	snap := m.store.Snapshot()
	if len(release) == 0 && (!a.Acquire || len(snap.ContainersToAcquire(id)) == 0) && len(snap.ContainersToReport(id)) == 0 {
		app, _, err := liveAttempt(snap, id)
		if err != nil {
			return Allocated{}, err
		}
		return Allocated{Application: app, Preempting: snap.PreemptingContainersOf(id)}, nil
	}
	var out Allocated
	err := m.store.Update(func(w *state.WriteTxn) error {
		out = Allocated{}
		app, _, err := liveAttempt(w, id)
		if err != nil {
			return err
		}
		out.Application = app
		now := m.opts.Now().UnixMilli()
		for _, cid := range release {
			c := w.Container(cid)
			if c == nil {
				out.UnknownReleases = append(out.UnknownReleases, cid)
				continue
			}
			if c.State == records.ContainerComplete {
				continue
			}
			cp := *c
			cp.State, cp.ExitStatus, cp.Diagnostics, cp.FinishTime = records.ContainerComplete, records.ExitAborted, ReleasedDiagnostics, now
			if err := w.PutContainer(&cp); err != nil {
				return err
			}
		}
		if a.Acquire {
			for _, c := range w.ContainersToAcquire(id) {
				cp := *c
				cp.Acquired = true
				if err := w.PutContainer(&cp); err != nil {
					return err
				}
				out.Acquired = append(out.Acquired, &cp)
			}
		}
		for _, c := range w.ContainersToReport(id) {
			cp := *c
			cp.Reported, cp.Acquired = true, true
			if err := w.PutContainer(&cp); err != nil {
				return err
			}
			out.Completed = append(out.Completed, &cp)
		}
		out.Preempting = w.PreemptingContainersOf(id)
		return nil
	})
	if err != nil {
		return Allocated{}, err
	}
	for _, cid := range out.UnknownReleases {
		m.opts.Logger.Debug("release of an unknown container", "container", cid.String())
	}
	return out, nil
}
