package rm

import (
	"fmt"
	"sync/atomic"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// Retention of completed applications, as YARN's RMAppManager does it:
// every application that completes joins the completed ones, in the order
// they completed (finishApplication), and those beyond
// yarn.resourcemanager.max-completed-applications, the oldest first, are
// removed from the state store and from memory (checkAppNumCompletedLimit).
// Without it an RM's memory and store grow with every application it ever
// ran.

// recoverBatchRecords bounds the records one retention transaction of
// Recover removes (always at least one application's): a limit lowered
// across a restart can leave thousands of applications to remove, and one
// transaction of them all could exceed what the durable backend takes at
// once (kubestore's MaxObjectBytes, as ZooKeeper's znode size bounds
// YARN's), while one transaction per application would cost a sync each.
const recoverBatchRecords = 4096

// updateCompleting runs fn, a write transaction that may complete an
// application, and in the same transaction removes the completed
// applications beyond the limit — normally the one oldest — so that what
// is stored never exceeds it, even for an instant a crash could catch.
// YARN does the same in two steps on each APP_COMPLETED event.
func (m *Manager) updateCompleting(fn func(*state.WriteTxn) error) error {
	return m.updateMaybeCompleting(func(w *state.WriteTxn) (bool, error) { return true, fn(w) })
}

// updateMaybeCompleting is updateCompleting for a transaction that says
// whether it may have completed an application: only then does the limit
// apply, which reads every completed application — not worth it for the
// node syncs that write most transactions and complete nothing.
func (m *Manager) updateMaybeCompleting(fn func(*state.WriteTxn) (bool, error)) error {
	var removed []*records.Application
	err := m.store.Update(func(w *state.WriteTxn) error {
		removed = nil
		completing, err := fn(w)
		if err != nil || !completing {
			return err
		}
		removed, _, err = m.removeCompleted(w, 0)
		return err
	})
	if err == nil {
		m.noteRemoved(removed)
	}
	return err
}

// noteRemoved counts and logs the completed applications a committed
// transaction removed.
func (m *Manager) noteRemoved(removed []*records.Application) {
	for _, a := range removed {
		m.removed.count(a.State)
		// YARN's RMAppManager logs each removal at INFO as well.
		m.opts.Logger.Info("completed application removed: the RM keeps the most recent only", "app", a.ID.String(),
			"maxCompletedApplications", m.maxCompleted)
	}
}

// removeCompleted removes within w the oldest completed applications
// beyond the limit, each with its attempts and containers. A budget
// above 0 stops it once it has removed that many records (after at least
// one application); more then tells that applications beyond the limit
// remain.
func (m *Manager) removeCompleted(w *state.WriteTxn, budget int) (removed []*records.Application, more bool, err error) {
	completed := w.CompletedApplications()
	excess := len(completed) - m.maxCompleted
	n := 0
	for i := 0; i < excess; i++ {
		if budget > 0 && n >= budget {
			return removed, true, nil
		}
		a := completed[i]
		id := a.ID
		if budget > 0 {
			n += 1 + len(w.AttemptsOf(id)) + len(w.ContainersOfApp(id))
		}
		if err := w.DeleteApplication(id); err != nil {
			return nil, false, fmt.Errorf("remove completed application %s: %w", id, err)
		}
		removed = append(removed, a)
	}
	return removed, false, nil
}

// recoverRetention applies the limit to what a previous incarnation
// stored, as YARN's recovery does (each recovered completed application
// completes again, and checkAppNumCompletedLimit follows): the limit may
// have been lowered, or the store may predate it. It returns how many
// applications it removed.
func (m *Manager) recoverRetention() (int, error) {
	total := 0
	for {
		var removed []*records.Application
		var more bool
		err := m.store.Update(func(w *state.WriteTxn) error {
			var err error
			removed, more, err = m.removeCompleted(w, recoverBatchRecords)
			return err
		})
		if err != nil {
			return total, err
		}
		total += len(removed)
		if !more {
			return total, nil
		}
	}
}

// removedCounts are the completed applications this Manager removed since
// it started, by final state.
type removedCounts struct{ finished, failed, killed atomic.Int64 }

func (c *removedCounts) count(s records.AppState) {
	switch s {
	case records.AppFinished:
		c.finished.Add(1)
	case records.AppFailed:
		c.failed.Add(1)
	case records.AppKilled:
		c.killed.Add(1)
	}
}

// RemovedSinceStart is how many completed applications, by final state,
// retention removed since this Manager started. YARN's cluster metrics
// (appsSubmitted, appsCompleted, appsFailed, appsKilled: its root queue's
// QueueMetrics) count since the RM started, removed applications
// included; REST adds these to what the store still holds. Those removed
// at recovery were counted by the previous incarnation, as in YARN.
func (m *Manager) RemovedSinceStart() (finished, failed, killed int64) {
	return m.removed.finished.Load(), m.removed.failed.Load(), m.removed.killed.Load()
}
