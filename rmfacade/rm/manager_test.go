package rm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

func newManager(t *testing.T, dir string) (*Manager, *state.Store) {
	t.Helper()
	st, err := state.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return newManagerOn(t, st), st
}

// newManagerOn is newManager over a given store.
func newManagerOn(t *testing.T, st *state.Store) *Manager {
	t.Helper()
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree([]quota.QueueConfig{
		{Path: "root", Capacity: 100, AdminACL: "admin"},
		{Path: "root.default", Capacity: 50, SubmitACL: "*"},
		{Path: "root.prod", Capacity: 50, SubmitACL: "alice"},
		{Path: "root.prod.etl", Capacity: 100},
		{Path: "root.prod.stopped", Capacity: 0, State: "STOPPED"},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000)
	return New(st, tree, Options{ClusterTimestamp: 1_700_000_000_000, MaxPriority: 10, Now: func() time.Time { return now }})
}

func wantClass(t *testing.T, err error, class string) {
	t.Helper()
	var ye *yarnerr.Error
	if class == "" {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if !errors.As(err, &ye) || ye.Class != class {
		t.Fatalf("got %v, want %s", err, class)
	}
}

func TestSubmit(t *testing.T) {
	m, _ := newManager(t, t.TempDir())
	ctx := context.Background()
	tests := []struct {
		name    string
		sub     Submission
		class   string
		wantAM  records.Resource
		wantQ   string
		wantTag []string
	}{
		{name: "default queue", sub: Submission{User: "bob", AMResource: records.Resource{MemoryMB: 1500, VCores: 1}, Tags: []string{"ETL", " etl", "Nightly"}},
			wantAM: records.Resource{MemoryMB: 2048, VCores: 1}, wantQ: "default", wantTag: []string{"etl", "nightly"}},
		{name: "leaf by path", sub: Submission{User: "alice", Queue: "root.prod.etl"}, wantAM: records.Resource{MemoryMB: 1024, VCores: 1}, wantQ: "etl"},
		{name: "unknown queue", sub: Submission{User: "bob", Queue: "nope"}, class: yarnerr.ClassYarnException},
		{name: "parent queue", sub: Submission{User: "alice", Queue: "prod"}, class: yarnerr.ClassYarnException},
		{name: "stopped queue", sub: Submission{User: "alice", Queue: "stopped"}, class: yarnerr.ClassYarnException},
		{name: "no submit ACL", sub: Submission{User: "bob", Queue: "etl"}, class: yarnerr.ClassAccessControl},
		{name: "admin may submit", sub: Submission{User: "admin", Queue: "etl"}, wantAM: records.Resource{MemoryMB: 1024, VCores: 1}, wantQ: "etl"},
		{name: "AM over maximum", sub: Submission{User: "bob", AMResource: records.Resource{MemoryMB: 9000, VCores: 1}}, class: yarnerr.ClassInvalidResourceRequest},
		{name: "no id", sub: Submission{User: "bob"}, class: yarnerr.ClassApplicationIDNotProvided},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "no id" {
				tc.sub.ID = m.NewApplicationID()
			}
			err := m.Submit(ctx, tc.sub)
			wantClass(t, err, tc.class)
			if tc.class != "" {
				if tc.sub.ID.ID > 0 {
					if _, err := m.Application(tc.sub.ID); err == nil {
						t.Fatal("rejected application was stored")
					}
				}
				return
			}
			a, err := m.Application(tc.sub.ID)
			if err != nil {
				t.Fatal(err)
			}
			if a.State != records.AppAccepted || a.Queue != tc.wantQ || a.AMResource != tc.wantAM || a.Type != "YARN" || a.MaxAttempts != 2 {
				t.Fatalf("stored %+v", a)
			}
			if tc.wantTag != nil && !equal(a.Tags, tc.wantTag) {
				t.Fatalf("tags %v, want %v", a.Tags, tc.wantTag)
			}
			atts := m.Snapshot().AttemptsOf(a.ID)
			if len(atts) != 1 || atts[0].State != records.AttemptScheduled {
				t.Fatalf("attempts %+v", atts)
			}
			// A retried submission is accepted and changes nothing.
			again := tc.sub
			again.Name = "changed"
			if err := m.Submit(ctx, again); err != nil {
				t.Fatal(err)
			}
			if b, _ := m.Application(a.ID); b.Name != a.Name {
				t.Fatal("resubmission changed the application")
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestKillMovePriorityAndRestart(t *testing.T) {
	dir := t.TempDir()
	m, st := newManager(t, dir)
	ctx := context.Background()
	id := m.NewApplicationID()
	if err := m.Submit(ctx, Submission{ID: id, User: "alice", Queue: "etl", Name: "job"}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		do    func() error
		class string
	}{
		{"priority capped", func() error {
			p, err := m.UpdatePriority(ctx, id, "alice", 99)
			if err == nil && p != 10 {
				t.Errorf("effective priority %d", p)
			}
			return err
		}, ""},
		{"move by stranger", func() error { return m.Move(ctx, id, "mallory", "default") }, yarnerr.ClassAccessControl},
		{"move to parent", func() error { return m.Move(ctx, id, "alice", "prod") }, yarnerr.ClassYarnException},
		{"move", func() error { return m.Move(ctx, id, "alice", "default") }, ""},
		{"kill by stranger", func() error { _, err := m.Kill(ctx, id, "mallory", ""); return err }, yarnerr.ClassAccessControl},
		{"kill unknown", func() error {
			_, err := m.Kill(ctx, records.ApplicationID{ClusterTimestamp: 1, ID: 1}, "alice", "")
			return err
		}, yarnerr.ClassApplicationNotFound},
		{"kill by admin", func() error { _, err := m.Kill(ctx, id, "admin", ""); return err }, ""},
		{"kill again", func() error { _, err := m.Kill(ctx, id, "alice", ""); return err }, ""},
		{"move killed", func() error { return m.Move(ctx, id, "alice", "etl") }, yarnerr.ClassYarnException},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { wantClass(t, s.do(), s.class) })
	}
	a, _ := m.Application(id)
	if a.State != records.AppKilled || a.FinalStatus != records.FinalKilled || a.Queue != "default" || a.Priority != 10 || a.FinishTime == 0 {
		t.Fatalf("final record %+v", a)
	}

	st.Close()
	m2, _ := newManager(t, dir)
	b, err := m2.Application(id)
	if err != nil || b.State != records.AppKilled || b.Queue != "default" || b.Name != "job" {
		t.Fatalf("after restart: %+v, %v", b, err)
	}
	if atts := m2.Snapshot().AttemptsOf(id); len(atts) != 1 || atts[0].State != records.AttemptKilled {
		t.Fatalf("attempts after restart: %+v", atts)
	}
}

func TestAMExitRetriesThenFails(t *testing.T) {
	m, _ := newManager(t, t.TempDir())
	ctx := context.Background()
	id := m.NewApplicationID()
	if err := m.Submit(ctx, Submission{ID: id, User: "alice", MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	first := records.AttemptID{App: id, ID: 1}
	if err := m.AMExited(ctx, first, 1, "boom"); err != nil {
		t.Fatal(err)
	}
	a, _ := m.Application(id)
	if a.State != records.AppAccepted || a.CurrentAttempt != 2 || !strings.Contains(a.Diagnostics, "Will retry, attempt 2 of 2") {
		t.Fatalf("after the first exit: %+v", a)
	}
	if att := m.Snapshot().Attempt(first); att.State != records.AttemptFailed || !strings.Contains(att.Diagnostics, "exitCode: 1") {
		t.Fatalf("first attempt %+v", att)
	}
	// A late report about the superseded attempt changes nothing.
	if err := m.AMExited(ctx, first, 1, "again"); err != nil {
		t.Fatal(err)
	}
	if err := m.AMExited(ctx, records.AttemptID{App: id, ID: 2}, 137, "killed"); err != nil {
		t.Fatal(err)
	}
	a, _ = m.Application(id)
	if a.State != records.AppFailed || a.FinalStatus != records.FinalFailed || a.CurrentAttempt != 2 ||
		!strings.Contains(a.Diagnostics, "failed 2 times") || !strings.Contains(a.Diagnostics, "exitCode: 137") {
		t.Fatalf("after the last exit: %+v", a)
	}
}

// An AM in a container is FINISHING after it unregisters, seen RUNNING
// with its final status, until its container exits.
func TestFinishingUntilAMExits(t *testing.T) {
	mgr, _ := newManager(t, t.TempDir())
	ctx := context.Background()
	id := mgr.NewApplicationID()
	if err := mgr.Submit(ctx, Submission{ID: id, User: "alice", AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	att := records.AttemptID{App: id, ID: 1}
	if err := mgr.AMLaunched(ctx, att, records.ContainerID{Attempt: att, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.RegisterAM(ctx, att, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := mgr.FinishAM(ctx, att, records.FinalSucceeded, "done", ""); err != nil {
		t.Fatal(err)
	}
	app, _ := mgr.Application(id)
	if app.State != records.AppRunning || app.FinalStatus != records.FinalSucceeded || mgr.Snapshot().Attempt(att).State != records.AttemptFinishing {
		t.Fatalf("after unregister: %s/%s, attempt %s", app.State, app.FinalStatus, mgr.Snapshot().Attempt(att).State)
	}
	if err := mgr.AMExited(ctx, att, 0, ""); err != nil {
		t.Fatal(err)
	}
	app, _ = mgr.Application(id)
	if app.State != records.AppFinished || app.FinalStatus != records.FinalSucceeded || app.FinishTime == 0 {
		t.Fatalf("after exit: %s/%s", app.State, app.FinalStatus)
	}
}

// An AM the cluster took away (preempted, its pod deleted) does not use
// up an attempt, as in YARN: after two such exits an application allowed
// two attempts still gets a third, and fails only after two exits of its
// own.
func TestAMPreemptedDoesNotCountTowardsMaxAttempts(t *testing.T) {
	m, _ := newManager(t, t.TempDir())
	ctx := context.Background()
	id := m.NewApplicationID()
	if err := m.Submit(ctx, Submission{ID: id, User: "alice", MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	for i, exit := range []int32{records.ExitPreempted, records.ExitAborted, 1} {
		if err := m.AMExited(ctx, records.AttemptID{App: id, ID: int32(i + 1)}, exit, "gone"); err != nil {
			t.Fatal(err)
		}
		a, _ := m.Application(id)
		if a.State != records.AppAccepted || a.CurrentAttempt != int32(i+2) {
			t.Fatalf("after exit %d of attempt %d: %+v", exit, i+1, a)
		}
		if exit == records.ExitPreempted && !strings.Contains(a.Diagnostics, "does not count") {
			t.Errorf("diagnostics %q", a.Diagnostics)
		}
	}
	if err := m.AMExited(ctx, records.AttemptID{App: id, ID: 4}, 1, "boom"); err != nil {
		t.Fatal(err)
	}
	if a, _ := m.Application(id); a.State != records.AppFailed || !strings.Contains(a.Diagnostics, "failed 2 times") {
		t.Fatalf("after two failures of its own: %+v", a)
	}
}

// TestNoAMLaunchSaysWhy: an RM that cannot launch AMs admits a managed
// application with the reason as its diagnostics; an unmanaged one, whose
// owner runs the AM, is told what every RM tells it.
func TestNoAMLaunchSaysWhy(t *testing.T) {
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tree, _ := quota.NewTree(quota.DefaultQueues)
	m := New(st, tree, Options{NoAMLaunch: "no cluster to run AMs on"})
	ctx := context.Background()
	managed, unmanaged := m.NewApplicationID(), m.NewApplicationID()
	if err := m.Submit(ctx, Submission{ID: managed, User: "alice"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Submit(ctx, Submission{ID: unmanaged, User: "alice", UnmanagedAM: true}); err != nil {
		t.Fatal(err)
	}
	if a, _ := m.Application(managed); a.Diagnostics != "no cluster to run AMs on" {
		t.Errorf("managed: %q", a.Diagnostics)
	}
	if a, _ := m.Application(unmanaged); !strings.Contains(a.Diagnostics, "waiting for resources to be assigned for AM") {
		t.Errorf("unmanaged: %q", a.Diagnostics)
	}
}
