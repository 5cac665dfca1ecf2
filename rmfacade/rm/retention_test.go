package rm

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// recordingDurable remembers the ops of every commit it passes on.
type recordingDurable struct {
	state.Durable
	commits [][]state.Op
}

func (d *recordingDurable) Commit(ops []state.Op) error {
	if err := d.Durable.Commit(ops); err != nil {
		return err
	}
	d.commits = append(d.commits, ops)
	return nil
}

// mapDurable keeps the durable tables in maps a test reads, and survives
// a "restart" (another state.Open over it) without a disk's syncs.
type mapDurable struct{ tables map[string]map[string][]byte }

func (d *mapDurable) Load(fn func(table, key string, value []byte) error) error {
	for table, rows := range d.tables {
		for key, value := range rows {
			if err := fn(table, key, value); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *mapDurable) Commit(ops []state.Op) error {
	for _, op := range ops {
		if d.tables[op.Table] == nil {
			d.tables[op.Table] = map[string][]byte{}
		}
		if op.Value == nil {
			delete(d.tables[op.Table], op.Key)
		} else {
			d.tables[op.Table][op.Key] = op.Value
		}
	}
	return nil
}

func (d *mapDurable) Close() error { return nil }

// clock is a test's clock; tick moves it on.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }
func (c *clock) tick()          { c.now = c.now.Add(time.Second) }

// retaining returns a Manager over durable keeping limit completed
// applications, after its recovery.
func retaining(t testing.TB, durable state.Durable, limit *int, c *clock) (*Manager, *state.Store, Recovered) {
	t.Helper()
	st, err := state.Open(durable)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree(quota.DefaultQueues)
	if err != nil {
		t.Fatal(err)
	}
	m := New(st, tree, Options{ClusterTimestamp: 1_700_000_000_000, MaxCompletedApplications: limit, Now: c.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r, err := m.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The node the applications' containers are granted on: grants are
	// checked against the room it has.
	if err := m.PutNode(&records.Node{ID: "n1:8041", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 1 << 30, VCores: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	return m, st, r
}

// An application ends in each of the ways one can; all but killed hold
// containers (the AM's, and two it was granted) when they do.
type ending int

const (
	killed            ending = iota
	unmanagedFinished        // an unmanaged AM unregisters
	amFailed                 // its only attempt's AM exits
	finishedAfterExit        // its AM unregisters, then its container exits
)

func submitRunning(t testing.TB, m *Manager, id records.ApplicationID, how ending) {
	t.Helper()
	ctx := context.Background()
	// The submission context is most of what an application costs at rest.
	sub := Submission{ID: id, User: "alice", MaxAttempts: 1, UnmanagedAM: how == unmanagedFinished, Raw: make([]byte, 2048)}
	if err := m.Submit(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if how == killed {
		return
	}
	att := records.AttemptID{App: id, ID: 1}
	if how != unmanagedFinished {
		am := records.ContainerID{Attempt: att, ID: 1}
		if err := m.AMLaunched(ctx, att, am); err != nil {
			t.Fatal(err)
		}
		if err := m.AMContainerPlaced(ctx, am, "n1:8041", "n1:8042", records.Resource{MemoryMB: 1024, VCores: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.RegisterAM(ctx, att, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	grants := []Grant{{Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}}, {Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}}}
	if cs, err := m.AllocateContainers(ctx, att, grants); err != nil || len(cs) != 2 {
		t.Fatalf("grants of %s: %v, %v", id, cs, err)
	}
}

func complete(t testing.TB, m *Manager, id records.ApplicationID, how ending) {
	t.Helper()
	ctx := context.Background()
	att := records.AttemptID{App: id, ID: 1}
	var err error
	switch how {
	case killed:
		_, err = m.Kill(ctx, id, "alice", "")
	case unmanagedFinished:
		err = m.FinishAM(ctx, att, records.FinalSucceeded, "", "")
	case amFailed:
		err = m.AMExited(ctx, att, 1, "boom")
	case finishedAfterExit:
		if err = m.FinishAM(ctx, att, records.FinalSucceeded, "", ""); err == nil {
			err = m.AMExited(ctx, att, 0, "")
		}
	}
	if err != nil {
		t.Fatalf("completing %s: %v", id, err)
	}
}

func appIDs(apps []*records.Application) []int32 {
	var out []int32
	for _, a := range apps {
		out = append(out, a.ID.ID)
	}
	return out
}

// TestRetainCompletedApplications follows YARN's RMAppManager: completed
// applications are kept in the order they completed, and beyond the limit
// the oldest completed is removed with its attempts and containers, in the
// transaction that completes the next one. Running applications stay,
// however old; a restart recovers exactly what was kept.
func TestRetainCompletedApplications(t *testing.T) {
	// Applications 1 and 2, the oldest, keep running; the others complete
	// in an order that is not the order they were submitted in.
	order := []int32{8, 3, 7, 4, 6, 5}
	endings := map[int32]ending{3: killed, 4: unmanagedFinished, 5: amFailed, 6: finishedAfterExit, 7: killed, 8: finishedAfterExit}
	tests := []struct {
		name  string
		limit *int
		// kept are the completed applications kept, oldest first.
		kept []int32
	}{
		{name: "limit 3 keeps the last three to complete", limit: new(3), kept: []int32{4, 6, 5}},
		{name: "limit 1", limit: new(1), kept: []int32{5}},
		{name: "limit 0 keeps none", limit: new(0)},
		{name: "negative reads as 0", limit: new(-1)},
		{name: "default keeps these all", kept: order},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bolt, err := state.OpenBolt(dir)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recordingDurable{Durable: bolt}
			c := &clock{now: time.UnixMilli(1_700_000_000_000)}
			m, st, _ := retaining(t, rec, tc.limit, c)
			id := func(n int32) records.ApplicationID {
				return records.ApplicationID{ClusterTimestamp: 1_700_000_000_000, ID: n}
			}
			for n := int32(1); n <= 8; n++ {
				submitRunning(t, m, id(n), endings[n])
			}
			var completed []int32
			for _, n := range order {
				c.tick()
				completed = append(completed, n)
				// The application this completion pushes out, if any, and
				// the records it has.
				var gone []string
				if i := len(completed) - 1 - len(tc.kept); i >= 0 {
					g := id(completed[i])
					gone = append(gone, state.TableApplications+"/"+g.String())
					for _, a := range m.Snapshot().AttemptsOf(g) {
						gone = append(gone, state.TableAttempts+"/"+a.Key())
					}
					for _, ct := range m.Snapshot().ContainersOfApp(g) {
						gone = append(gone, state.TableContainers+"/"+ct.Key())
					}
				}
				complete(t, m, id(n), endings[n])
				// Removing is part of the completing transaction: its
				// commit holds the completion and every record removed.
				if gone != nil {
					last := rec.commits[len(rec.commits)-1]
					if deleted := deletes(last); !slices.Equal(deleted, slices.Sorted(slices.Values(gone))) {
						t.Fatalf("completing %d: the last commit deletes %v, want %v", n, deleted, gone)
					}
				}
			}
			check := func(m *Manager, when string) {
				t.Helper()
				snap := m.Snapshot()
				if got := appIDs(snap.CompletedApplications()); !slices.Equal(got, tc.kept) {
					t.Fatalf("%s: completed applications %v, want %v", when, got, tc.kept)
				}
				for _, n := range []int32{1, 2} {
					if a, err := m.Application(id(n)); err != nil || a.State.Terminal() {
						t.Fatalf("%s: running application %d: %+v, %v", when, n, a, err)
					}
				}
				for _, n := range order {
					if slices.Contains(tc.kept, n) {
						if a, err := m.Application(id(n)); err != nil || len(snap.AttemptsOf(id(n))) != 1 {
							t.Fatalf("%s: kept application %d: %+v, %v", when, n, a, err)
						}
						continue
					}
					_, err := m.Application(id(n))
					wantClass(t, err, yarnerr.ClassApplicationNotFound)
					_, err = m.Kill(context.Background(), id(n), "alice", "")
					wantClass(t, err, yarnerr.ClassApplicationNotFound)
					if len(snap.AttemptsOf(id(n))) != 0 || len(snap.ContainersOfApp(id(n))) != 0 {
						t.Fatalf("%s: application %d removed, but not its attempts and containers", when, n)
					}
				}
			}
			check(m, "before the restart")
			// Cluster metrics still count what was removed (YARN's count
			// since the RM started).
			var removed [3]int64 // finished, failed, killed
			for _, n := range order {
				if !slices.Contains(tc.kept, n) {
					switch endings[n] {
					case amFailed:
						removed[1]++
					case killed:
						removed[2]++
					default:
						removed[0]++
					}
				}
			}
			if f, fl, k := m.RemovedSinceStart(); [3]int64{f, fl, k} != removed {
				t.Fatalf("removed since start: finished %d, failed %d, killed %d; want %v", f, fl, k, removed)
			}
			st.Close()

			// What the store holds on disk: no attempt or container of an
			// application that is not there.
			b, err := state.OpenBolt(dir)
			if err != nil {
				t.Fatal(err)
			}
			apps := map[string]bool{}
			var children []string
			err = b.Load(func(table, key string, _ []byte) error {
				switch table {
				case state.TableApplications:
					apps[strings.TrimPrefix(key, "application_")] = true
				case state.TableAttempts, state.TableContainers:
					children = append(children, key)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(apps) != 2+len(tc.kept) {
				t.Fatalf("stored applications %v, want %d", apps, 2+len(tc.kept))
			}
			for _, k := range children {
				// appattempt_<ts>_<seq>_<n>, container_<ts>_<seq>_<n>_<n>
				f := strings.Split(k, "_")
				if !apps[f[1]+"_"+f[2]] {
					t.Fatalf("%s is left behind by its application", k)
				}
			}

			m2, _, r := retaining(t, b, tc.limit, c)
			if r.Removed != 0 {
				t.Fatalf("the restart removed %d applications", r.Removed)
			}
			check(m2, "after the restart")

			// The retained order holds across the restart: the next
			// completion removes the oldest of those kept.
			c.tick()
			complete(t, m2, id(1), killed)
			want := append(slices.Clone(tc.kept), 1)
			if tc.limit != nil {
				want = want[1:] // the oldest kept makes room
			}
			if got := appIDs(m2.Snapshot().CompletedApplications()); !slices.Equal(got, want) {
				t.Fatalf("after one more completes: %v, want %v", got, want)
			}
		})
	}
}

// deletes returns the records ops delete, as table/key, sorted.
func deletes(ops []state.Op) []string {
	var out []string
	for _, op := range ops {
		if op.Value == nil {
			out = append(out, op.Table+"/"+op.Key)
		}
	}
	slices.Sort(out)
	return out
}

// TestRecoverRemovesBeyondALoweredLimit: what a previous incarnation kept
// under a higher limit is cut down to the new one at recovery, as YARN's
// recovery completes each recovered application again and checks the
// limit; the removal is batched so that no transaction grows with the
// backlog.
func TestRecoverRemovesBeyondALoweredLimit(t *testing.T) {
	d := &mapDurable{tables: map[string]map[string][]byte{}}
	c := &clock{now: time.UnixMilli(1_700_000_000_000)}
	m, st, _ := retaining(t, d, nil, c)
	const n = 1100 // 5 records each: those beyond 10 are more than one batch
	var ids []records.ApplicationID
	for range n {
		id := m.NewApplicationID()
		ids = append(ids, id)
		submitRunning(t, m, id, finishedAfterExit)
	}
	// Completed newest-submitted first.
	for i := n - 1; i >= 0; i-- {
		c.tick()
		complete(t, m, ids[i], killed)
	}
	if got := len(m.Snapshot().CompletedApplications()); got != DefaultMaxCompletedApplications {
		t.Fatalf("%d completed under the default limit", got)
	}
	st.Close()

	rec := &recordingDurable{Durable: d}
	m2, _, r := retaining(t, rec, new(10), c)
	if r.Removed != DefaultMaxCompletedApplications-10 {
		t.Fatalf("recovery removed %d", r.Removed)
	}
	if len(rec.commits) < 2 {
		t.Fatalf("recovery removed them in %d transactions", len(rec.commits))
	}
	for _, ops := range rec.commits {
		if len(ops) > recoverBatchRecords+4 {
			t.Fatalf("a recovery transaction of %d records", len(ops))
		}
	}
	var want []int32
	for i := 9; i >= 0; i-- {
		want = append(want, ids[i].ID)
	}
	if got := appIDs(m2.Snapshot().CompletedApplications()); !slices.Equal(got, want) {
		t.Fatalf("kept %v, want %v", got, want)
	}
}

// TestRetentionBoundsTheStore runs many applications through an RM that
// keeps 100 completed: the store — what is in memory, and what a restart
// reads — holds the 100 and the running ones, however many came before,
// and the heap stops growing with them.
func TestRetentionBoundsTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 applications")
	}
	const total, limit, running = 5000, 100, 10
	d := &mapDurable{tables: map[string]map[string][]byte{}}
	c := &clock{now: time.UnixMilli(1_700_000_000_000)}
	m, _, _ := retaining(t, d, new(limit), c)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	var atWarm uint64
	for i := range total {
		id := m.NewApplicationID()
		how := ending(i % 4)
		submitRunning(t, m, id, how)
		if i < running {
			continue // never completes
		}
		c.tick()
		complete(t, m, id, how)
		if i == 1000 {
			atWarm = heap()
		}
	}
	grew := int64(heap()) - int64(atWarm)

	snap := m.Snapshot()
	if got := len(snap.CompletedApplications()); got != limit {
		t.Fatalf("%d completed applications kept, want %d", got, limit)
	}
	if got := len(snap.Applications(state.ApplicationFilter{})); got != limit+running {
		t.Fatalf("%d applications in memory, want %d", got, limit+running)
	}
	stored := func(table string) int { return len(d.tables[table]) }
	if stored(state.TableApplications) != limit+running || stored(state.TableAttempts) != limit+running || stored(state.TableContainers) > 3*(limit+running) {
		t.Fatalf("stored: %d applications, %d attempts, %d containers", stored(state.TableApplications), stored(state.TableAttempts), stored(state.TableContainers))
	}
	// Without retention the 4,000 applications after the warm-up hold
	// about 60 MiB here (this test's durable maps included).
	if grew > 2<<20 {
		t.Fatalf("the heap grew by %d bytes over 4,000 applications", grew)
	}
	t.Logf("heap growth over the last %d applications: %d bytes", total-1001, grew)
}

// BenchmarkCompleteAtTheLimit submits and kills applications into an RM
// that already keeps the default 1,000 completed, so each kill also
// removes the oldest. heap-MiB, the live heap at the end, stays flat
// whatever -benchtime: compare -benchtime=1000x with 20000x.
func BenchmarkCompleteAtTheLimit(b *testing.B) {
	d := &mapDurable{tables: map[string]map[string][]byte{}}
	c := &clock{now: time.UnixMilli(1_700_000_000_000)}
	m, _, _ := retaining(b, d, nil, c)
	ctx := context.Background()
	run := func() {
		id := m.NewApplicationID()
		if err := m.Submit(ctx, Submission{ID: id, User: "alice", Raw: make([]byte, 2048)}); err != nil {
			b.Fatal(err)
		}
		c.tick()
		if _, err := m.Kill(ctx, id, "alice", ""); err != nil {
			b.Fatal(err)
		}
	}
	for range DefaultMaxCompletedApplications {
		run()
	}
	for b.Loop() {
		run()
	}
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
}
