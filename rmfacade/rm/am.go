package rm

import (
	"context"
	"fmt"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// liveAttempt returns the application and attempt if id is the
// application's current, unfinished attempt.
func liveAttempt(w interface {
	Application(records.ApplicationID) *records.Application
	Attempt(records.AttemptID) *records.Attempt
}, id records.AttemptID) (*records.Application, *records.Attempt, error) {
	app := w.Application(id.App)
	if app == nil {
		return nil, nil, yarnerr.ApplicationNotFound(id.App.String())
	}
	att := w.Attempt(id)
	// A FINISHING attempt (unregistered, its AM still running) is still live.
	if att == nil || app.CurrentAttempt != id.ID || (att.FinishTime != 0 && att.State != records.AttemptFinishing) || app.State.Terminal() {
		return nil, nil, yarnerr.AttemptNotFound(id.String())
	}
	return app, att, nil
}

// LiveAttempt checks that id is its application's current, unfinished
// attempt: what an AM's token must still name on every call.
func (m *Manager) LiveAttempt(id records.AttemptID) (*records.Application, *records.Attempt, error) {
	return liveAttempt(m.store.Snapshot(), id)
}

// Registered is what an AM is told when it registers.
type Registered struct {
	Application *records.Application
	// QueuePath is the full path of the application's queue.
	QueuePath string
	// MaximumAllocation is the largest container it may ask for.
	MaximumAllocation records.Resource
}

// RegisterAM records that the attempt's ApplicationMaster registered:
// attempt and application become RUNNING, with the AM's address.
//
// An attempt that is RUNNING already registers again: that is an AM
// resyncing after this RM restarted (AMRMClient and MapReduce's
// RMCommunicator re-register when allocate answers
// ApplicationMasterNotRegisteredException), and, as in YARN's
// work-preserving recovery, it keeps its attempt, containers and launch
// time. Refusing a second registration within one RM incarnation is the
// protocol service's, which alone knows what this incarnation has seen.
// An attempt that unregistered (FINISHING) cannot register again.
func (m *Manager) RegisterAM(ctx context.Context, id records.AttemptID, host string, rpcPort int32, trackingURL string) (Registered, error) {
	var registered *records.Application
	var resync bool
	err := m.store.Update(func(w *state.WriteTxn) error {
		cur, att, err := liveAttempt(w, id)
		if err != nil {
			return err
		}
		if att.State == records.AttemptFinishing {
			return yarnerr.InvalidAMRequest("Application Master is already registered : %s", id.App)
		}
		resync = att.State == records.AttemptRunning
		now := m.opts.Now().UnixMilli()
		a, t := *cur, *att
		t.State, t.Host, t.RPCPort, t.OriginalTrackingURL = records.AttemptRunning, host, rpcPort, trackingURL
		a.State, a.Host, a.RPCPort, a.OriginalTrackingURL, a.TrackingURL = records.AppRunning, host, rpcPort, trackingURL, trackingURL
		a.Diagnostics = ""
		if a.LaunchTime == 0 {
			a.LaunchTime = now
		}
		registered = &a
		if err := w.PutAttempt(&t); err != nil {
			return err
		}
		return w.PutApplication(&a)
	})
	if err != nil {
		return Registered{}, err
	}
	m.opts.Logger.Info("application master registered", "attempt", id.String(), "host", host, "resync", resync)
	return Registered{Application: registered, QueuePath: m.QueuePath(registered.Queue), MaximumAllocation: m.opts.MaximumAllocation}, nil
}

// FinishAM records the AM's unregistration with the final status it
// reports. As in YARN, an AM that runs in a container is FINISHING until
// that container exits — clients still see the application RUNNING (with
// its final status) and keep asking the AM for the job's last state — and
// FINISHED after; an unmanaged AM finishes at once.
func (m *Manager) FinishAM(ctx context.Context, id records.AttemptID, final records.FinalStatus, diagnostics, trackingURL string) error {
	err := m.updateCompleting(func(w *state.WriteTxn) error {
		cur, att, err := liveAttempt(w, id)
		if err != nil {
			return err
		}
		if att.State != records.AttemptRunning {
			return yarnerr.New(yarnerr.KindBadRequest, yarnerr.ClassAMNotRegistered,
				"Application Master is trying to unregister before registering for: %s", id)
		}
		now := m.opts.Now().UnixMilli()
		a, t := *cur, *att
		t.State, t.FinalStatus, t.FinishTime, t.Diagnostics, t.TrackingURL = records.AttemptFinished, final, now, diagnostics, trackingURL
		a.State, a.FinalStatus, a.FinishTime, a.Diagnostics, a.Progress = records.AppFinished, final, now, diagnostics, 1
		if !a.UnmanagedAM {
			t.State, a.State, a.FinishTime = records.AttemptFinishing, records.AppRunning, 0
		} else if err := endApplicationContainers(w, &a, records.ExitSuccess, ""); err != nil {
			return err
		}
		if trackingURL != "" {
			a.TrackingURL = trackingURL
		}
		if err := w.PutAttempt(&t); err != nil {
			return err
		}
		return w.PutApplication(&a)
	})
	if err == nil {
		m.opts.Logger.Info("application finished", "attempt", id.String(), "finalStatus", string(final))
	}
	return err
}

// AMLaunched records that the attempt's AM container was created: the
// attempt is LAUNCHED and waits for its AM to register.
func (m *Manager) AMLaunched(ctx context.Context, id records.AttemptID, container records.ContainerID) error {
	return m.store.Update(func(w *state.WriteTxn) error {
		cur, att, err := liveAttempt(w, id)
		if err != nil {
			return err
		}
		if att.State != records.AttemptScheduled {
			return nil // launched already: reconciling again is a no-op
		}
		a, t := *cur, *att
		t.State, t.AMContainer = records.AttemptLaunched, container.String()
		a.Diagnostics = "AM container is launched, waiting for AM container to Register with RM"
		if err := w.PutAttempt(&t); err != nil {
			return err
		}
		return w.PutApplication(&a)
	})
}

// countsTowardsMaxAttempts reports whether an AM container that ended
// with exitCode uses up one of the application's attempts. As in YARN
// (RMAppAttemptImpl.shouldCountTowardsMaxAttemptRetry), an AM the
// cluster took away — preempted (a queue's reclaim, a node the tide took
// back), aborted (its pod deleted), its disks failed, killed by the RM —
// does not: the application did nothing wrong.
func countsTowardsMaxAttempts(exitCode int32) bool {
	switch exitCode {
	case records.ExitPreempted, records.ExitAborted, records.ExitDisksFailed, records.ExitKilledByRM:
		return false
	}
	return true
}

// AMExited records that the attempt's AM container ended before
// unregistering: the attempt FAILED with diagnostics, then a new attempt
// if the application has attempts left, else the application FAILED — as
// YARN does when an AM container exits.
func (m *Manager) AMExited(ctx context.Context, id records.AttemptID, exitCode int32, diagnostics string) error {
	return m.failAttempt(id, amExitedDiagnostics(id, exitCode, diagnostics), exitCode, countsTowardsMaxAttempts(exitCode), false)
}

// amExit is the exit status an ended attempt's AM container completes
// with: its process's, or KILLED_BY_RESOURCEMANAGER when the RM ended it
// (its AM timed out) and no process told one.
func amExit(exitCode int32) int32 {
	if exitCode == records.ExitInvalid {
		return records.ExitKilledByRM
	}
	return exitCode
}

// amExitedDiagnostics is an attempt's diagnostics when its AM container
// exited, as YARN's RMAppAttemptImpl words them.
func amExitedDiagnostics(id records.AttemptID, exitCode int32, diagnostics string) string {
	return fmt.Sprintf("AM Container for %s exited with  exitCode: %d\n%s", id, exitCode, diagnostics)
}

// AMExpired fails a registered attempt whose AM stopped heartbeating, as
// YARN's AMLivelinessMonitor does after
// yarn.am.liveness-monitor.expiry-interval-ms: the attempt FAILED with
// "ApplicationMaster for attempt … timed out" (it counts towards the
// application's max attempts), then a retry or the application FAILED.
// The AM container of the failed attempt is stopped by the launcher. An
// attempt that is no longer RUNNING is left alone.
func (m *Manager) AMExpired(ctx context.Context, id records.AttemptID) error {
	return m.failAttempt(id, fmt.Sprintf("ApplicationMaster for attempt %s timed out", id), records.ExitInvalid, true, true)
}

// failAttempt ends an attempt that did not unregister, in a transaction
// of its own (failAttemptIn).
func (m *Manager) failAttempt(id records.AttemptID, diag string, exitCode int32, counts, onlyRunning bool) error {
	var f attemptFailure
	err := m.updateCompleting(func(w *state.WriteTxn) error {
		var err error
		f, _, err = failAttemptIn(w, m.opts.Now().UnixMilli(), id, diag, exitCode, counts, onlyRunning)
		return err
	})
	if err == nil {
		m.logFailure(f)
	}
	return err
}

// attemptFailure is what failAttemptIn did, for the log once committed.
type attemptFailure struct {
	id       records.AttemptID
	diag     string
	exitCode int32
	retried  bool
}

func (m *Manager) logFailure(f attemptFailure) {
	m.opts.Logger.Info("attempt failed", "attempt", f.id.String(), "exitCode", f.exitCode, "retried", f.retried, "diagnostics", f.diag)
}

// failAttemptIn ends, within w, an attempt that did not unregister:
// FAILED with diag, then a new attempt if the application has attempts
// left, else the application FAILED. An attempt that unregistered first
// (FINISHING) ends the application with the status its AM reported
// instead — unless onlyRunning, which leaves any attempt that is not
// RUNNING, decided in the same transaction (an AM that unregistered an
// instant after the liveness monitor looked has not timed out). The
// caller's transaction may complete an application: it must remove the
// completed ones beyond the limit (updateCompleting). ended tells
// whether it ended the attempt.
func failAttemptIn(w *state.WriteTxn, now int64, id records.AttemptID, diag string, exitCode int32, counts, onlyRunning bool) (f attemptFailure, ended bool, err error) {
	f = attemptFailure{id: id, diag: diag, exitCode: exitCode}
	cur, att, err := liveAttempt(w, id)
	if err != nil || onlyRunning && att.State != records.AttemptRunning {
		return f, false, nil // finished or superseded already: nothing to do
	}
	a, t := *cur, *att
	if t.State == records.AttemptFinishing {
		// Unregistered, then exited: the application is done, with the
		// status its AM reported.
		t.State, a.State, a.FinishTime = records.AttemptFinished, records.AppFinished, now
		if err := w.PutAttempt(&t); err != nil {
			return f, true, err
		}
		if err := endApplicationContainers(w, &a, amExit(exitCode), diag); err != nil {
			return f, true, err
		}
		return f, true, w.PutApplication(&a)
	}
	t.State, t.FinalStatus, t.FinishTime, t.Diagnostics = records.AttemptFailed, records.FinalFailed, now, diag
	if err := w.PutAttempt(&t); err != nil {
		return f, true, err
	}
	if counts {
		a.FailedAttempts++
	}
	if a.FailedAttempts < a.MaxAttempts {
		if err := endContainers(w, id, now, amExit(exitCode), diag, a.KeepContainers); err != nil {
			return f, true, err
		}
		f.retried = true
		next := &records.Attempt{ID: records.AttemptID{App: a.ID, ID: id.ID + 1}, State: records.AttemptScheduled,
			FinalStatus: records.FinalUndefined, StartTime: now}
		a.CurrentAttempt, a.State = next.ID.ID, records.AppAccepted
		a.Host, a.RPCPort, a.OriginalTrackingURL, a.TrackingURL = "", 0, "", ""
		a.Diagnostics = diag + "\nFailing this attempt. Will retry, attempt " + fmt.Sprint(next.ID.ID) + " of " + fmt.Sprint(a.MaxAttempts) + "."
		if !counts {
			a.Diagnostics = fmt.Sprintf("%s\nThe AM container was taken away (exit status %d): the attempt does not count towards the %d allowed. Will retry, attempt %d.",
				diag, exitCode, a.MaxAttempts, next.ID.ID)
		}
		if err := w.PutAttempt(next); err != nil {
			return f, true, err
		}
		return f, true, w.PutApplication(&a)
	}
	a.State, a.FinalStatus, a.FinishTime = records.AppFailed, records.FinalFailed, now
	a.Diagnostics = fmt.Sprintf("Application %s failed %d times due to %s\nFailing the application.", a.ID, a.MaxAttempts, diag)
	// Earlier attempts' containers kept across attempts end with it too.
	if err := endApplicationContainers(w, &a, amExit(exitCode), diag); err != nil {
		return f, true, err
	}
	return f, true, w.PutApplication(&a)
}
