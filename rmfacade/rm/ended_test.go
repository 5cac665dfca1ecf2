package rm

import (
	"context"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// An application that ends holds nothing in the records: its AM
// container completes with the AM's exit, its other live containers
// ABORTED as a completed application's, all at its end — so its usage
// stops growing there, as a YARN application's does — whichever way it
// ends. An attempt that fails and is retried ends its containers too,
// unless the application keeps them across attempts.
func TestEndedApplicationHoldsNothing(t *testing.T) {
	ctx := context.Background()
	gib := records.Resource{MemoryMB: 1024, VCores: 1}

	// start submits an application whose AM runs in a container on n1
	// (none when unmanaged) and holds two task containers, and returns
	// its attempt.
	start := func(t *testing.T, m *Manager, sub Submission) records.AttemptID {
		t.Helper()
		if err := m.PutNode(&records.Node{ID: "n1:8041", Host: "n1", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}}); err != nil {
			t.Fatal(err)
		}
		sub.ID, sub.User, sub.Queue = m.NewApplicationID(), "bob", "default"
		if err := m.Submit(ctx, sub); err != nil {
			t.Fatal(err)
		}
		at := records.AttemptID{App: sub.ID, ID: 1}
		if !sub.UnmanagedAM {
			am := records.ContainerID{Attempt: at, ID: 1}
			if err := m.AMLaunched(ctx, at, am); err != nil {
				t.Fatal(err)
			}
			if err := m.AMContainerPlaced(ctx, am, "n1:8041", "n1:8042", gib); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.RegisterAM(ctx, at, "h", 1, ""); err != nil {
			t.Fatal(err)
		}
		g := Grant{Node: "n1:8041", Resource: gib, Queue: "default"}
		if _, err := m.AllocateContainers(ctx, at, []Grant{g, g}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Allocate(ctx, Allocation{Attempt: at, Acquire: true}); err != nil {
			t.Fatal(err)
		}
		return at
	}
	tests := []struct {
		name string
		sub  Submission
		end  func(m *Manager, at records.AttemptID) error
		// wantAM is the AM container's exit status (none when unmanaged);
		// keep, that the tasks run on.
		wantAM     int32
		unmanaged  bool
		keep       bool
		wantActive bool
	}{
		{name: "a managed AM unregisters, then its container exits 0: FINISHED",
			end: func(m *Manager, at records.AttemptID) error {
				if err := m.FinishAM(ctx, at, records.FinalSucceeded, "", ""); err != nil {
					return err
				}
				return m.AMExited(ctx, at, 0, "")
			}, wantAM: records.ExitSuccess},
		{name: "an unmanaged AM unregisters: FINISHED", sub: Submission{UnmanagedAM: true},
			end: func(m *Manager, at records.AttemptID) error {
				return m.FinishAM(ctx, at, records.FinalSucceeded, "", "")
			}, unmanaged: true},
		{name: "the user kills it: KILLED",
			end: func(m *Manager, at records.AttemptID) error {
				_, err := m.Kill(ctx, at.App, "bob", "")
				return err
			}, wantAM: records.ExitKilledByRM},
		{name: "its last attempt's AM exits 1: FAILED", sub: Submission{MaxAttempts: 1},
			end: func(m *Manager, at records.AttemptID) error { return m.AMExited(ctx, at, 1, "crashed") }, wantAM: 1},
		{name: "its AM times out on the last attempt: FAILED, the AM container killed by the RM", sub: Submission{MaxAttempts: 1},
			end: func(m *Manager, at records.AttemptID) error { return m.AMExpired(ctx, at) }, wantAM: records.ExitKilledByRM},
		{name: "an attempt fails and another begins: its containers end with it", sub: Submission{MaxAttempts: 2},
			end: func(m *Manager, at records.AttemptID) error { return m.AMExited(ctx, at, 1, "crashed") }, wantAM: 1, wantActive: true},
		{name: "an attempt fails and another begins, the application keeping its containers: only the AM's ends",
			sub: Submission{MaxAttempts: 2, KeepContainers: true},
			end: func(m *Manager, at records.AttemptID) error { return m.AMExited(ctx, at, 1, "crashed") }, wantAM: 1, keep: true, wantActive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t, t.TempDir())
			at := start(t, m, tc.sub)
			if err := tc.end(m, at); err != nil {
				t.Fatal(err)
			}
			snap := m.Snapshot()
			app := snap.Application(at.App)
			if active := !app.State.Terminal(); active != tc.wantActive {
				t.Fatalf("application %s", app.State)
			}
			now := m.opts.Now().UnixMilli()
			cs := snap.ContainersOfAttempt(at)
			want := 3
			if tc.unmanaged {
				want = 2
			}
			if len(cs) != want {
				t.Fatalf("%d containers, want %d", len(cs), want)
			}
			for _, c := range cs {
				switch {
				case c.ID.ID == 1:
					if c.State != records.ContainerComplete || c.ExitStatus != tc.wantAM || c.FinishTime != now {
						t.Errorf("AM container %s exit %d at %d, want COMPLETE exit %d at %d", c.State, c.ExitStatus, c.FinishTime, tc.wantAM, now)
					}
				case tc.keep:
					if c.State == records.ContainerComplete {
						t.Errorf("task %s ended though the application keeps its containers", c.ID)
					}
				default:
					if c.State != records.ContainerComplete || c.ExitStatus != records.ExitAborted ||
						c.Diagnostics != CompletedApplicationDiagnostics || c.FinishTime != now {
						t.Errorf("task %s: %s %d %q at %d", c.ID, c.State, c.ExitStatus, c.Diagnostics, c.FinishTime)
					}
				}
			}
			if !tc.wantActive {
				later := records.UsageOf(cs, now+60_000)
				if at := records.UsageOf(cs, now); later != at || later.Containers != 0 {
					t.Errorf("usage after the end %+v, at it %+v: still growing or held", later, at)
				}
			}
		})
	}
}

// A store written before ended applications' containers were completed
// with them shows them live: a start ends them at the application's end.
func TestRecoverEndsContainersOfEndedApplications(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, st := newManager(t, dir)
	at := submitRegistered(t, m, 1)[0]
	if err := m.PutNode(&records.Node{ID: "n1:8041", Host: "n1", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	granted, err := m.AllocateContainers(ctx, at, []Grant{{Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Queue: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	// As an older RM left it: FINISHED an hour ago, its container live.
	ended := int64(1_700_000_000_000 - 3_600_000)
	if err := st.Update(func(w *state.WriteTxn) error {
		a := *w.Application(at.App)
		a.State, a.FinalStatus, a.FinishTime = records.AppFinished, records.FinalSucceeded, ended
		return w.PutApplication(&a)
	}); err != nil {
		t.Fatal(err)
	}
	if c := m.Snapshot().Container(granted[0].ID); c.State == records.ContainerComplete {
		t.Fatal("the setup completed the container")
	}
	if _, err := m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	c := m.Snapshot().Container(granted[0].ID)
	if c.State != records.ContainerComplete || c.FinishTime != ended {
		t.Errorf("after a start: %s, finished at %d; want COMPLETE at the application's end %d", c.State, c.FinishTime, ended)
	}
}

// Containers an application kept across a failed attempt end when the
// application does, with its last attempt.
func TestKeptContainersEndWithTheApplication(t *testing.T) {
	ctx := context.Background()
	m, _ := newManager(t, t.TempDir())
	if err := m.PutNode(&records.Node{ID: "n1:8041", Host: "n1", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}}); err != nil {
		t.Fatal(err)
	}
	id := m.NewApplicationID()
	if err := m.Submit(ctx, Submission{ID: id, User: "bob", Queue: "default", MaxAttempts: 2, KeepContainers: true}); err != nil {
		t.Fatal(err)
	}
	first, second := records.AttemptID{App: id, ID: 1}, records.AttemptID{App: id, ID: 2}
	if err := m.AMLaunched(ctx, first, records.ContainerID{Attempt: first, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegisterAM(ctx, first, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	kept, err := m.AllocateContainers(ctx, first, []Grant{{Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Queue: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AMExited(ctx, first, 1, "crashed"); err != nil {
		t.Fatal(err)
	}
	if c := m.Snapshot().Container(kept[0].ID); c.State == records.ContainerComplete {
		t.Fatal("the kept container ended with the first attempt")
	}
	if err := m.AMLaunched(ctx, second, records.ContainerID{Attempt: second, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.AMExited(ctx, second, 1, "crashed again"); err != nil {
		t.Fatal(err)
	}
	snap := m.Snapshot()
	if a := snap.Application(id); a.State != records.AppFailed {
		t.Fatalf("application %s", a.State)
	}
	if c := snap.Container(kept[0].ID); c.State != records.ContainerComplete || c.Diagnostics != CompletedApplicationDiagnostics {
		t.Errorf("the kept container: %s %q, want it ended with the application", c.State, c.Diagnostics)
	}
}
