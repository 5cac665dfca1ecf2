package rm

import (
	"context"
	"strings"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// launchedOn submits a managed application of bob's whose AM container runs
// on node (its attempt registered, or unregistered when finishing) and
// returns its attempt.
func launchedOn(t *testing.T, m *Manager, node string, finishing bool) records.AttemptID {
	t.Helper()
	ctx := context.Background()
	id := m.NewApplicationID()
	if err := m.Submit(ctx, Submission{ID: id, User: "bob", MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	at := records.AttemptID{App: id, ID: 1}
	am := records.ContainerID{Attempt: at, ID: 1}
	if err := m.AMLaunched(ctx, at, am); err != nil {
		t.Fatal(err)
	}
	if err := m.AMContainerPlaced(ctx, am, node, node, records.Resource{MemoryMB: 1024, VCores: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegisterAM(ctx, at, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	if finishing {
		if err := m.FinishAM(ctx, at, records.FinalSucceeded, "done", ""); err != nil {
			t.Fatal(err)
		}
	}
	return at
}

// A node whose record becomes LOST takes its containers with it, in the
// transaction that records it, as YARN's scheduler removes a lost node:
// what was live there completes ABORTED with YARN's own diagnostics, its
// AM hears of it in its next allocate response, and an AM container's
// loss fails its attempt as an AM's exit does (retried, not counted);
// nothing else moves, and a node LOST already ends nothing again.
func TestLostNodeEndsItsContainers(t *testing.T) {
	ctx := context.Background()
	m, _ := newManager(t, t.TempDir())
	for _, id := range []string{"lost:8041", "other:8041"} {
		if err := m.PutNode(&records.Node{ID: id, Host: strings.TrimSuffix(id, ":8041"), State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}}); err != nil {
			t.Fatal(err)
		}
	}
	// The AM of app is on the lost node, with three of its tasks (one
	// running, one complete already, one granted and not yet acquired)
	// and a fourth elsewhere; the AM of survivor is elsewhere with a task
	// on the lost node; the AM of finishing unregistered before the loss.
	app := launchedOn(t, m, "lost:8041", false)
	survivor := launchedOn(t, m, "other:8041", false)
	finishing := launchedOn(t, m, "lost:8041", true)
	gib := Grant{Node: "lost:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}}
	elsewhere := gib
	elsewhere.Node = "other:8041"
	granted, err := m.AllocateContainers(ctx, app, []Grant{gib, gib, elsewhere})
	if err != nil || len(granted) != 3 {
		t.Fatalf("grants: %v %v", granted, err)
	}
	running, done, away := granted[0].ID, granted[1].ID, granted[2].ID
	if _, err := m.Allocate(ctx, Allocation{Attempt: app, Acquire: true}); err != nil {
		t.Fatal(err)
	}
	if err := m.ContainerRunning(ctx, running); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CompleteContainer(ctx, done, records.ExitSuccess, "finished"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Allocate(ctx, Allocation{Attempt: app}); err != nil {
		t.Fatal(err)
	}
	more, err := m.AllocateContainers(ctx, app, []Grant{gib})
	if err != nil || len(more) != 1 {
		t.Fatalf("grant: %v %v", more, err)
	}
	unacquired := more[0].ID
	theirs, err := m.AllocateContainers(ctx, survivor, []Grant{gib})
	if err != nil || len(theirs) != 1 {
		t.Fatalf("grant: %v %v", theirs, err)
	}
	before := m.Snapshot()

	commits := 0
	defer m.Subscribe(func(*state.Snapshot, []state.Change) { commits++ })()
	lost := *before.Node("lost:8041")
	lost.State, lost.HealthReport = records.NodeLost, "gone"
	if err := m.PutNode(&lost); err != nil {
		t.Fatal(err)
	}
	if commits != 1 {
		t.Errorf("the loss was %d transactions, want 1", commits)
	}
	after := m.Snapshot()
	now := m.opts.Now().UnixMilli()
	ended := func(id records.ContainerID) string {
		c := after.Container(id)
		if c.State != records.ContainerComplete || c.ExitStatus != records.ExitAborted || c.Diagnostics != LostContainerDiagnostics || c.FinishTime != now {
			return "not ended ABORTED, lost, now: " + string(c.State) + " " + c.Diagnostics
		}
		return ""
	}
	untouched := func(id records.ContainerID) string {
		if *after.Container(id) != *before.Container(id) {
			return "changed"
		}
		return ""
	}
	tests := []struct {
		name  string
		check func() string
	}{
		{"the diagnostics are YARN's SchedulerUtils.LOST_CONTAINER, word for word", func() string {
			if LostContainerDiagnostics != "Container released on a *lost* node" {
				return LostContainerDiagnostics
			}
			return ""
		}},
		{"a running task container completes ABORTED with YARN's diagnostics for a lost node", func() string { return ended(running) }},
		{"one granted and not yet acquired completes the same way", func() string { return ended(unacquired) }},
		{"another application's task on the node completes too", func() string { return ended(theirs[0].ID) }},
		{"the AM container completes too", func() string { return ended(records.ContainerID{Attempt: app, ID: 1}) }},
		{"a container already complete is untouched", func() string { return untouched(done) }},
		{"the failed attempt's container on another node completes with it, as a completed application's", func() string {
			c := after.Container(away)
			if c.State != records.ContainerComplete || c.ExitStatus != records.ExitAborted || c.Diagnostics != CompletedApplicationDiagnostics || c.FinishTime != now {
				return "not ended with the attempt: " + string(c.State) + " " + c.Diagnostics
			}
			return ""
		}},
		{"another application's AM on another node is untouched", func() string {
			return untouched(records.ContainerID{Attempt: survivor, ID: 1})
		}},
		{"an AM elsewhere hears of its task lost there in its next allocate response, once", func() string {
			got, err := m.Allocate(ctx, Allocation{Attempt: survivor})
			if err != nil {
				return err.Error()
			}
			told := got.Completed
			if len(told) != 1 || told[0].ID != theirs[0].ID || told[0].ExitStatus != records.ExitAborted || told[0].Diagnostics != LostContainerDiagnostics {
				return "told of the wrong containers"
			}
			if again, _ := m.Allocate(ctx, Allocation{Attempt: survivor}); len(again.Completed) != 0 {
				return "told twice"
			}
			return ""
		}},
		{"the AM lost with the node is not told: its attempt is over", func() string {
			if _, err := m.Allocate(ctx, Allocation{Attempt: app}); err == nil {
				return "an allocate of the failed attempt was answered"
			}
			return ""
		}},
		{"the AM's attempt fails as an AM container's exit does, and a retry that does not count begins", func() string {
			att, a := after.Attempt(app), after.Application(app.App)
			if att.State != records.AttemptFailed || !strings.Contains(att.Diagnostics, "exitCode: -100") ||
				!strings.Contains(att.Diagnostics, LostContainerDiagnostics) {
				return "attempt " + string(att.State) + ": " + att.Diagnostics
			}
			if a.State != records.AppAccepted || a.CurrentAttempt != 2 || a.FailedAttempts != 0 || !strings.Contains(a.Diagnostics, "does not count") {
				return "application " + string(a.State) + ": " + a.Diagnostics
			}
			return ""
		}},
		{"an application whose AM was elsewhere keeps its attempt", func() string {
			if att := after.Attempt(survivor); att.State != records.AttemptRunning {
				return "attempt " + string(att.State)
			}
			return ""
		}},
		{"an AM that unregistered before the loss ends its application with the status it reported", func() string {
			if a := after.Application(finishing.App); a.State != records.AppFinished || a.FinalStatus != records.FinalSucceeded {
				return "application " + string(a.State) + "/" + string(a.FinalStatus)
			}
			return ""
		}},
		{"a node LOST already, written again, ends nothing again", func() string {
			// Only a move to LOST ends what is there: a container placed
			// on the node since is the launcher's to end.
			next := records.ContainerID{Attempt: records.AttemptID{App: app.App, ID: 2}, ID: 1}
			if err := m.AMContainerPlaced(ctx, next, "lost:8041", "lost:8042", records.Resource{MemoryMB: 1024, VCores: 1}); err != nil {
				return err.Error()
			}
			again := lost
			again.LastHealthUpdate++
			if err := m.PutNode(&again); err != nil {
				return err.Error()
			}
			if c := m.Snapshot().Container(next); c.State == records.ContainerComplete {
				return "ended again"
			}
			return ""
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if msg := tc.check(); msg != "" {
				t.Error(msg)
			}
		})
	}
}
