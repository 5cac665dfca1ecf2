package state

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
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

// TestCompletedApplicationsInCompletionOrder: the applications in a final
// state, by finish time and then id — not by submission — and only those;
// the order is the same after a restart.
func TestCompletedApplicationsInCompletionOrder(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	finished := func(seq int32, state records.AppState, finish int64) *records.Application {
		a := app(seq, state, "default", "alice", "YARN")
		a.FinishTime = finish
		return a
	}
	err := s.Update(func(w *WriteTxn) error {
		for _, a := range []*records.Application{
			finished(1, records.AppRunning, 0),
			finished(2, records.AppKilled, 5000),
			finished(3, records.AppFinished, 3000),
			finished(4, records.AppAccepted, 0),
			finished(5, records.AppFailed, 1000),
			finished(6, records.AppFinished, 3000), // the same millisecond as 3: by id
			// A finish time beyond 10^13 ms sorts after the shorter ones.
			finished(7, records.AppKilled, 10_000_000_000_000),
		} {
			if err := w.PutApplication(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{5, 3, 6, 2, 7}
	if got := ids(s.Snapshot().CompletedApplications()); !slices.Equal(got, want) {
		t.Fatalf("completed %v, want %v", got, want)
	}
	// An application that completes joins the end.
	if err := s.Update(func(w *WriteTxn) error { return w.PutApplication(finished(1, records.AppFinished, 20_000_000_000_000)) }); err != nil {
		t.Fatal(err)
	}
	want = append(want, 1)
	if got := ids(s.Snapshot().CompletedApplications()); !slices.Equal(got, want) {
		t.Fatalf("after 1 completes: %v, want %v", got, want)
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if got := ids(s.Snapshot().CompletedApplications()); !slices.Equal(got, want) {
		t.Fatalf("after a restart: %v, want %v", got, want)
	}
}

// commitCounter counts the durable commits and the ops of the last.
type commitCounter struct {
	Durable
	commits int
	last    []Op
}

func (c *commitCounter) Commit(ops []Op) error {
	c.commits, c.last = c.commits+1, ops
	return c.Durable.Commit(ops)
}

// TestDeleteApplication removes an application with all its attempts and
// containers in one durable commit, and nothing of another.
func TestDeleteApplication(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	counter := &commitCounter{Durable: b}
	s, err := Open(counter)
	if err != nil {
		t.Fatal(err)
	}
	appID := func(seq int32) records.ApplicationID {
		return records.ApplicationID{ClusterTimestamp: 1700000000000, ID: seq}
	}
	err = s.Update(func(w *WriteTxn) error {
		for seq := int32(1); seq <= 2; seq++ {
			if err := w.PutApplication(app(seq, records.AppFinished, "default", "alice", "YARN")); err != nil {
				return err
			}
			for n := int32(1); n <= 2; n++ {
				att := records.AttemptID{App: appID(seq), ID: n}
				if err := w.PutAttempt(&records.Attempt{ID: att}); err != nil {
					return err
				}
				for c := int64(1); c <= 3; c++ {
					if err := w.PutContainer(&records.Container{ID: records.ContainerID{Attempt: att, ID: c}}); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(func(w *WriteTxn) error { return w.DeleteApplication(appID(1)) }); err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, op := range counter.last {
		if op.Value == nil && strings.Contains(op.Key, "1700000000000_0001") {
			deleted++
		}
	}
	if deleted != 9 || len(counter.last) != 9 {
		t.Fatalf("one commit of %d ops, %d of them deleting the application's 9 records", len(counter.last), deleted)
	}
	// Deleting it again, or an application never stored, writes nothing.
	before := counter.commits
	for _, id := range []records.ApplicationID{appID(1), appID(42)} {
		if err := s.Update(func(w *WriteTxn) error { return w.DeleteApplication(id) }); err != nil {
			t.Fatal(err)
		}
	}
	if counter.commits != before {
		t.Fatalf("%d commits for deleting nothing", counter.commits-before)
	}
	check := func(when string) {
		snap := s.Snapshot()
		if snap.Application(appID(1)) != nil || len(snap.AttemptsOf(appID(1))) != 0 || len(snap.ContainersOfApp(appID(1))) != 0 {
			t.Fatalf("%s: records of the removed application remain", when)
		}
		if snap.Application(appID(2)) == nil || len(snap.AttemptsOf(appID(2))) != 2 || len(snap.ContainersOfApp(appID(2))) != 6 {
			t.Fatalf("%s: the other application lost records", when)
		}
	}
	check("before the restart")
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	check("after the restart")
}

// Subscribers see each committed write once, after it is visible, with
// what it changed; a failed write and a cancelled subscription tell them
// nothing.
func TestSubscribe(t *testing.T) {
	s := openStore(t, t.TempDir())
	defer s.Close()
	type seen struct {
		tables []string
		state  records.AppState // of application 1 in the snapshot handed over
	}
	var got []seen
	cancel := s.Subscribe(func(snap *Snapshot, changes []Change) {
		var tables []string
		for _, c := range changes {
			tables = append(tables, c.Table)
		}
		slices.Sort(tables)
		var st records.AppState
		if a := snap.Application(app(1, "", "", "", "").ID); a != nil {
			st = a.State
		}
		got = append(got, seen{tables, st})
	})
	write := func(fn func(*WriteTxn) error) {
		t.Helper()
		if err := s.Update(fn); err != nil && err.Error() != "refused" {
			t.Fatal(err)
		}
	}
	write(func(w *WriteTxn) error {
		if err := w.PutApplication(app(1, records.AppAccepted, "default", "alice", "YARN")); err != nil {
			return err
		}
		// Two writes of one record are one change.
		if err := w.PutApplication(app(1, records.AppRunning, "default", "alice", "YARN")); err != nil {
			return err
		}
		return w.PutNode(&records.Node{ID: "n:8041", State: records.NodeRunning})
	})
	write(func(w *WriteTxn) error {
		w.PutApplication(app(1, records.AppKilled, "default", "alice", "YARN"))
		return errors.New("refused")
	})
	write(func(*WriteTxn) error { return nil }) // changes nothing
	write(func(w *WriteTxn) error { return w.DeleteNode("n:8041") })
	cancel()
	write(func(w *WriteTxn) error { return w.DeleteApplication(app(1, "", "", "", "").ID) })
	want := []seen{{[]string{TableApplications, TableNodes}, records.AppRunning}, {[]string{TableNodes}, records.AppRunning}}
	if !slices.EqualFunc(got, want, func(a, b seen) bool { return slices.Equal(a.tables, b.tables) && a.state == b.state }) {
		t.Fatalf("subscriber saw %+v, want %+v", got, want)
	}
}

// PreemptingContainers lists exactly the live containers under a notice,
// PreemptingContainersOf those of one attempt: one gains it when notified
// and leaves it when it completes.
func TestPreemptingContainers(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	app := records.ApplicationID{ClusterTimestamp: 1700000000000, ID: 1}
	a1, a2 := records.AttemptID{App: app, ID: 1}, records.AttemptID{App: app, ID: 2}
	c := func(attempt records.AttemptID, id int64, deadline int64, st records.ContainerState) *records.Container {
		return &records.Container{ID: records.ContainerID{Attempt: attempt, ID: id}, State: st, PreemptDeadline: deadline}
	}
	put := func(cs ...*records.Container) { t.Helper(); putContainers(t, s, cs...) }
	ids := func(cs []*records.Container) (out []string) {
		for _, c := range cs {
			out = append(out, c.ID.String())
		}
		return out
	}
	check := func(when string, all, ofA1 []*records.Container) {
		t.Helper()
		snap := s.Snapshot()
		got := ids(snap.PreemptingContainers())
		slices.Sort(got)
		want := ids(all)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: preempting %v, want %v", when, got, want)
		}
		// In id order: 10 after 9.
		if got, want := ids(snap.PreemptingContainersOf(a1)), ids(ofA1); !slices.Equal(got, want) {
			t.Errorf("%s: preempting of %s %v, want %v", when, a1, got, want)
		}
	}
	put(c(a1, 2, 0, records.ContainerRunning), c(a1, 3, 5, records.ContainerRunning), c(a1, 4, 5, records.ContainerComplete),
		c(a2, 3, 5, records.ContainerRunning))
	check("first", []*records.Container{c(a1, 3, 0, ""), c(a2, 3, 0, "")}, []*records.Container{c(a1, 3, 0, "")})
	put(c(a1, 2, 9, records.ContainerRunning), c(a1, 3, 5, records.ContainerComplete), c(a1, 10, 9, records.ContainerRunning),
		c(a1, 9, 9, records.ContainerRunning))
	check("after 2, 9 and 10 are notified and 3 completes", []*records.Container{c(a1, 2, 0, ""), c(a1, 9, 0, ""), c(a1, 10, 0, ""), c(a2, 3, 0, "")},
		[]*records.Container{c(a1, 2, 0, ""), c(a1, 9, 0, ""), c(a1, 10, 0, "")})
}

// ContainersToAcquire and ContainersToReport list exactly an attempt's
// containers its AM has yet to be given or told completed, and no other
// attempt's: a container moves from one to the other and out as YARN's
// newlyAllocated and justFinished lists move it.
func TestUndeliveredContainers(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	app := records.ApplicationID{ClusterTimestamp: 1700000000000, ID: 1}
	mine, other := records.AttemptID{App: app, ID: 1}, records.AttemptID{App: app, ID: 2}
	type c = records.Container
	put := func(cs ...*c) { t.Helper(); putContainers(t, s, cs...) }
	id := func(at records.AttemptID, n int64) records.ContainerID {
		return records.ContainerID{Attempt: at, ID: n}
	}
	check := func(step string, acquire, report []int64) {
		t.Helper()
		ids := func(cs []*c) (out []int64) {
			for _, c := range cs {
				out = append(out, c.ID.ID)
			}
			return out
		}
		snap := s.Snapshot()
		if got := ids(snap.ContainersToAcquire(mine)); !slices.Equal(got, acquire) {
			t.Errorf("%s: to acquire %v, want %v", step, got, acquire)
		}
		if got := ids(snap.ContainersToReport(mine)); !slices.Equal(got, report) {
			t.Errorf("%s: to report %v, want %v", step, got, report)
		}
	}
	put(&c{ID: id(mine, 1), State: records.ContainerRunning, Acquired: true}, // the AM's
		&c{ID: id(mine, 3), State: records.ContainerNew}, &c{ID: id(mine, 2), State: records.ContainerNew},
		&c{ID: id(other, 2), State: records.ContainerNew}, &c{ID: id(other, 3), State: records.ContainerComplete})
	check("allocated", []int64{2, 3}, nil)
	put(&c{ID: id(mine, 2), State: records.ContainerNew, Acquired: true},
		&c{ID: id(mine, 3), State: records.ContainerComplete}) // ended before its AM heard of it
	check("2 acquired, 3 completed unacquired", nil, []int64{3})
	put(&c{ID: id(mine, 2), State: records.ContainerComplete, Acquired: true},
		&c{ID: id(mine, 3), State: records.ContainerComplete, Acquired: true, Reported: true},
		&c{ID: id(mine, 1), State: records.ContainerComplete, Acquired: true})
	check("2 completed, 3 reported, the AM's completed", nil, []int64{2})
}

// putContainers stores containers in one write, failing the test if it
// is refused.
func putContainers(t *testing.T, s *Store, cs ...*records.Container) {
	t.Helper()
	if err := s.Update(func(w *WriteTxn) error {
		for _, c := range cs {
			if err := w.PutContainer(c); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// NodesChanged is closed by the first committed write that changes a
// node after the snapshot, and only by such a write.
func TestNodesChanged(t *testing.T) {
	node := &records.Node{ID: "n:8041", State: records.NodeRunning}
	cases := []struct {
		name   string
		before func(*WriteTxn) error // sets up the state the snapshot sees
		write  func(*WriteTxn) error
		closed bool
	}{
		{"an application write", nil, func(w *WriteTxn) error {
			return w.PutApplication(app(1, records.AppRunning, "default", "alice", "YARN"))
		}, false},
		{"a node put", nil, func(w *WriteTxn) error { return w.PutNode(node) }, true},
		{"a node deleted", func(w *WriteTxn) error { return w.PutNode(node) },
			func(w *WriteTxn) error { return w.DeleteNode(node.ID) }, true},
		{"a missing node deleted", nil, func(w *WriteTxn) error { return w.DeleteNode(node.ID) }, false},
		{"a failed node put", nil, func(w *WriteTxn) error {
			if err := w.PutNode(node); err != nil {
				return err
			}
			return errors.New("refused")
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := OpenMemory()
			if err != nil {
				t.Fatal(err)
			}
			if c.before != nil {
				if err := s.Update(c.before); err != nil {
					t.Fatal(err)
				}
			}
			ch := s.Snapshot().NodesChanged()
			_ = s.Update(c.write)
			if got := isClosed(ch); got != c.closed {
				t.Errorf("closed %v, want %v", got, c.closed)
			}
			if isClosed(s.Snapshot().NodesChanged()) {
				t.Errorf("the latest snapshot's channel is closed")
			}
		})
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A subscriber's changes hold a record's value before the transaction and
// after its last write; a record inserted and deleted in one transaction
// is no change.
func TestSubscribeChangeValues(t *testing.T) {
	s, err := OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	var got []Change
	s.Subscribe(func(_ *Snapshot, changes []Change) { got = changes })
	a1 := app(1, records.AppAccepted, "default", "alice", "YARN")
	a2 := app(1, records.AppRunning, "default", "alice", "YARN")
	a3 := app(1, records.AppFinished, "default", "alice", "YARN")
	if err := s.Update(func(w *WriteTxn) error { return w.PutApplication(a1) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Before != nil || got[0].After != a1 {
		t.Fatalf("insert: %+v", got)
	}
	err = s.Update(func(w *WriteTxn) error {
		if err := w.PutApplication(a2); err != nil {
			return err
		}
		if err := w.PutNode(&records.Node{ID: "n:8041", State: records.NodeRunning}); err != nil {
			return err
		}
		if err := w.DeleteNode("n:8041"); err != nil {
			return err
		}
		return w.PutApplication(a3)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Table != TableApplications || got[0].Before != a1 || got[0].After != a3 {
		t.Fatalf("two writes and a node come and gone: %+v", got)
	}
	if err := s.Update(func(w *WriteTxn) error { return w.DeleteApplication(a3.ID) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Before != a3 || got[0].After != nil {
		t.Fatalf("delete: %+v", got)
	}
}
