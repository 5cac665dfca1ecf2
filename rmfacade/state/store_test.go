package state

import (
	"errors"
	"slices"
	"testing"

	"github.com/weft-sh/weft/rmfacade/records"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func app(seq int32, state records.AppState, queue, user, typ string, tags ...string) *records.Application {
	return &records.Application{ID: records.ApplicationID{ClusterTimestamp: 1700000000000, ID: seq}, State: state,
		Queue: queue, User: user, Type: typ, Tags: tags, StartTime: int64(seq) * 1000}
}

func ids(apps []*records.Application) []int32 {
	var out []int32
	for _, a := range apps {
		out = append(out, a.ID.ID)
	}
	return out
}

func TestApplicationsFilterAndRestart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	err := s.Update(func(w *WriteTxn) error {
		for _, a := range []*records.Application{
			app(3, records.AppAccepted, "default", "alice", "MAPREDUCE", "etl"),
			app(1, records.AppRunning, "default", "bob", "SPARK", "etl", "nightly"),
			app(2, records.AppFinished, "prod", "alice", "YARN"),
			app(10, records.AppKilled, "prod", "carol", "SPARK", "adhoc"),
		} {
			if err := w.PutApplication(a); err != nil {
				return err
			}
		}
		return w.PutAttempt(&records.Attempt{ID: records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 1700000000000, ID: 1}, ID: 1}})
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		f    ApplicationFilter
		want []int32
	}{
		{name: "all in id order", want: []int32{1, 2, 3, 10}},
		{name: "states", f: ApplicationFilter{States: []records.AppState{records.AppRunning, records.AppKilled}}, want: []int32{1, 10}},
		{name: "queue and user", f: ApplicationFilter{Queues: []string{"prod"}, Users: []string{"alice"}}, want: []int32{2}},
		{name: "type case-insensitive", f: ApplicationFilter{Types: []string{"spark"}}, want: []int32{1, 10}},
		{name: "tags any", f: ApplicationFilter{Tags: []string{"NIGHTLY", "adhoc"}}, want: []int32{1, 10}},
		{name: "limit", f: ApplicationFilter{Limit: 2}, want: []int32{1, 2}},
		{name: "started window", f: ApplicationFilter{StartedBegin: 2000, StartedEnd: 3000}, want: []int32{2, 3}},
		{name: "no match", f: ApplicationFilter{Users: []string{"nobody"}}},
	}
	check := func(s *Store) {
		snap := s.Snapshot()
		for _, tc := range tests {
			if got := ids(snap.Applications(tc.f)); !slices.Equal(got, tc.want) {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	}
	check(s)
	s.Close()

	// Everything acknowledged comes back after a restart.
	s = openStore(t, dir)
	defer s.Close()
	check(s)
	if got := s.Snapshot().AttemptsOf(records.ApplicationID{ClusterTimestamp: 1700000000000, ID: 1}); len(got) != 1 {
		t.Fatalf("attempts after restart: %v", got)
	}
}

func TestFailedUpdateChangesNothing(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	boom := errors.New("boom")
	err := s.Update(func(w *WriteTxn) error {
		if err := w.PutApplication(app(1, records.AppAccepted, "default", "u", "YARN")); err != nil {
			return err
		}
		if w.Application(records.ApplicationID{ClusterTimestamp: 1700000000000, ID: 1}) == nil {
			t.Error("write transaction does not read its own write")
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got := s.Snapshot().Applications(ApplicationFilter{}); len(got) != 0 {
		t.Fatalf("aborted write is visible: %v", got)
	}
}

func TestSnapshotIsolation(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	before := s.Snapshot()
	if err := s.Update(func(w *WriteTxn) error { return w.PutApplication(app(1, records.AppAccepted, "q", "u", "YARN")) }); err != nil {
		t.Fatal(err)
	}
	if len(before.Applications(ApplicationFilter{})) != 0 || len(s.Snapshot().Applications(ApplicationFilter{})) != 1 {
		t.Fatal("snapshots are not point-in-time")
	}
}
