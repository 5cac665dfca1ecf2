package state

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// TestSnapshotIsolation checks that snapshots see the version they were
// taken at while later transactions write, that a failed transaction
// changes nothing, and (under -race) that readers and the writer share
// the trees safely.
func TestSnapshotIsolation(t *testing.T) {
	s := newStore(t, "root.a")
	node := func(i int) string { return fmt.Sprintf("node-%04d", i) }
	one := quota.Resource{MilliCPU: 1000, Memory: 1 << 30}
	err := s.Update(func(w *Txn) error {
		if err := w.UpsertApplication(&objects.Application{ID: "app", Queue: "root.a"}); err != nil {
			return err
		}
		for i := range 200 {
			if err := w.UpsertNode(&objects.Node{ID: node(i), Allocatable: quota.Resource{MilliCPU: 64_000, Memory: 64 << 30}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := s.Snapshot()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := s.Snapshot()
				var sum int64
				for _, n := range snap.Nodes() {
					sum += n.Allocated.MilliCPU
				}
				if got := int64(len(snap.Allocations())) * one.MilliCPU; got != sum {
					t.Errorf("snapshot at %d: %d allocations but nodes hold %d millicores", snap.Index(), got/one.MilliCPU, sum)
					return
				}
			}
		}()
	}
	for i := range 2000 {
		err := s.Update(func(w *Txn) error {
			return w.AddAllocation(&objects.Allocation{ID: fmt.Sprintf("al-%05d", i), AppID: "app", NodeID: node(i * 7 % 200),
				Tier: 1, Resource: one})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if n := len(before.Allocations()); n != 0 || before.Node(node(0)).Allocated.MilliCPU != 0 {
		t.Errorf("the first snapshot sees %d allocations and node-0000 holding %v", n, before.Node(node(0)).Allocated)
	}
	idx := s.Snapshot().Index()
	boom := errors.New("boom")
	err = s.Update(func(w *Txn) error {
		if err := w.ReleaseAllocation("al-00000"); err != nil {
			return err
		}
		return boom
	})
	after := s.Snapshot()
	if !errors.Is(err, boom) || after.Index() != idx || after.Allocation("al-00000") == nil || len(after.Allocations()) != 2000 {
		t.Errorf("a failed transaction: err %v, index %d (was %d), %d allocations", err, after.Index(), idx, len(after.Allocations()))
	}
	if q := after.QueueUsage("root"); q.Used.MilliCPU != 2000*one.MilliCPU {
		t.Errorf("root uses %v after 2,000 allocations of %v", q.Used, one)
	}
}

// TestCycleQueries checks the two queries a cycle reads instead of every
// application of a leaf: the applications with pending requests, and
// those holding quota for a declared maximum, as requests come and go and
// a hold is set and dropped.
func TestCycleQueries(t *testing.T) {
	s := newStore(t, "root.a", "root.b")
	one := quota.Resource{MilliCPU: 1000, Memory: 1 << 30}
	ids := func(apps []*objects.Application) string {
		var out []string
		for _, a := range apps {
			out = append(out, a.ID)
		}
		return fmt.Sprint(out)
	}
	steps := []struct {
		name              string
		write             func(w *Txn) error
		asking, reserving string // reserving: root.a's
	}{
		{"applications, none asking", func(w *Txn) error {
			for _, a := range []*objects.Application{{ID: "a1", Queue: "root.a"}, {ID: "a2", Queue: "root.a", Reserve: one},
				{ID: "b1", Queue: "root.b", Reserve: one}} {
				if err := w.UpsertApplication(a); err != nil {
					return err
				}
			}
			return nil
		}, "[]", "[a2]"},
		{"two requests of one, one of another", func(w *Txn) error {
			for _, r := range []*objects.Request{{ID: "r1", AppID: "b1", Tier: records.TierLow, Resource: one}, {ID: "r2", AppID: "b1", Tier: records.TierLow, Resource: one},
				{ID: "r3", AppID: "a1", Tier: records.TierLow, Resource: one}} {
				if err := w.AddRequest(r); err != nil {
					return err
				}
			}
			return nil
		}, "[a1 b1]", "[a2]"},
		{"a hold set, another dropped", func(w *Txn) error {
			if err := w.UpsertApplication(&objects.Application{ID: "a1", Queue: "root.a", Reserve: one}); err != nil {
				return err
			}
			return w.UpsertApplication(&objects.Application{ID: "a2", Queue: "root.a"})
		}, "[a1 b1]", "[a1]"},
		{"one request of two gone", func(w *Txn) error { return w.RemoveRequest("r1") }, "[a1 b1]", "[a1]"},
		{"the last requests gone", func(w *Txn) error {
			if err := w.RemoveRequest("r2"); err != nil {
				return err
			}
			return w.RemoveRequest("r3")
		}, "[]", "[a1]"},
	}
	for _, st := range steps {
		if err := s.Update(st.write); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		snap := s.Snapshot()
		if got := ids(snap.ApplicationsWithRequests()); got != st.asking {
			t.Errorf("%s: applications with requests %s, want %s", st.name, got, st.asking)
		}
		if got := ids(snap.ReservingApplicationsInQueue("root.a")); got != st.reserving {
			t.Errorf("%s: root.a's holding applications %s, want %s", st.name, got, st.reserving)
		}
	}
}
