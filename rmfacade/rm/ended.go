package rm

import (
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// CompletedApplicationDiagnostics is what the live containers of an
// attempt that ended say when the RM completes them, as YARN's
// SchedulerUtils.COMPLETED_APPLICATION.
const CompletedApplicationDiagnostics = "Container of a completed application"

// endContainers completes, within w and at now, the containers of an
// attempt that ended which are still live, as YARN's scheduler does in
// doneApplicationAttempt: the AM container with the AM's own exit (amExit,
// amDiag), the others ABORTED as a completed application's — unless
// keepTasks (the application keeps its containers across attempts and a
// new attempt begins). So an ended application holds nothing in the
// records: its resources are free in every view and its usage stops at
// its end, as a YARN application's does.
func endContainers(w *state.WriteTxn, id records.AttemptID, now int64, amExit int32, amDiag string, keepTasks bool) error {
	for _, c := range w.ContainersOfAttempt(id) {
		if c.State == records.ContainerComplete || (keepTasks && c.ID.ID != 1) {
			continue
		}
		cp := *c
		cp.State, cp.FinishTime = records.ContainerComplete, now
		cp.ExitStatus, cp.Diagnostics = records.ExitAborted, CompletedApplicationDiagnostics
		if c.ID.ID == 1 {
			cp.ExitStatus, cp.Diagnostics = amExit, amDiag
		}
		// Nobody is left to tell: the attempt is over.
		cp.Acquired, cp.Reported = true, true
		if err := w.PutContainer(&cp); err != nil {
			return err
		}
	}
	return nil
}

// endApplicationContainers completes the live containers of every
// attempt of an application that ended, at its finish time, the AM
// containers with amExit and amDiag.
func endApplicationContainers(w *state.WriteTxn, a *records.Application, amExit int32, amDiag string) error {
	for _, att := range w.AttemptsOf(a.ID) {
		if err := endContainers(w, att.ID, a.FinishTime, amExit, amDiag, false); err != nil {
			return err
		}
	}
	return nil
}
