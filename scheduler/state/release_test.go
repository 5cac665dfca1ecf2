package state

import (
	"errors"
	"fmt"
	"testing"

	"github.com/weft-sh/weft/protos/cowtable"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

// TestReleaseAllocations checks that releasing allocations together
// leaves the store as releasing them one by one does — nodes, queues (a
// victim's Releasing too) and indexes — in batches below and above the
// size cowtable writes on several goroutines, and that an unknown or
// repeated id fails the transaction.
func TestReleaseAllocations(t *testing.T) {
	one := quota.Resource{MilliCPU: 1000, Memory: 1 << 30}
	build := func(t *testing.T, n int) *Store {
		s := newStore(t, "root.a", "root.b")
		err := s.Update(func(w *Txn) error {
			for i := range 4 {
				if err := w.UpsertNode(&objects.Node{ID: fmt.Sprintf("n%d", i), Allocatable: quota.Resource{MilliCPU: 1 << 40, Memory: 1 << 50}}); err != nil {
					return err
				}
			}
			for _, app := range []*objects.Application{{ID: "a", Queue: "root.a"}, {ID: "b", Queue: "root.b"}} {
				if err := w.UpsertApplication(app); err != nil {
					return err
				}
			}
			for i := range n {
				al := &objects.Allocation{ID: fmt.Sprintf("al-%04d", i), AppID: []string{"a", "b"}[i%2], NodeID: fmt.Sprintf("n%d", i%4),
					Tier: 1, Resource: one, Preempting: i%5 == 0}
				if err := w.AddAllocation(al); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// state lists what the releases change.
	state := func(s *Store) []string {
		snap := s.Snapshot()
		var out []string
		for _, n := range snap.Nodes() {
			out = append(out, fmt.Sprintf("%s %v %v %d", n.ID, n.Allocated, n.Releasing, len(snap.AllocationsOnNode(n.ID))))
		}
		for _, q := range []string{"root", "root.a", "root.b"} {
			row := snap.QueueUsage(q)
			out = append(out, fmt.Sprintf("%s %v %v", q, row.Used, row.Releasing))
		}
		return append(out, fmt.Sprint(len(snap.Allocations()), len(snap.AllocationsOfApp("a")), len(snap.AllocationsOfApp("b"))))
	}
	for _, n := range []int{40, 2000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var ids []string
			for i := 0; i < n; i += 3 {
				ids = append(ids, fmt.Sprintf("al-%04d", i))
			}
			batch, each := build(t, n), build(t, n)
			if err := batch.Update(func(w *Txn) error { return w.ReleaseAllocations(ids...) }); err != nil {
				t.Fatal(err)
			}
			err := each.Update(func(w *Txn) error {
				for _, id := range ids {
					if err := w.ReleaseAllocation(id); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got, want := state(batch), state(each)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("released together:\n%v\none by one:\n%v", got, want)
			}
			if len(batch.Snapshot().Allocations()) != n-len(ids) {
				t.Errorf("%d allocations left, want %d", len(batch.Snapshot().Allocations()), n-len(ids))
			}

			// Releasing every allocation leaves nothing charged anywhere.
			all := build(t, n)
			err = all.Update(func(w *Txn) error {
				var every []string
				for _, al := range w.Allocations() {
					every = append(every, al.ID)
				}
				return w.ReleaseAllocations(every...)
			})
			if err != nil {
				t.Fatal(err)
			}
			snap := all.Snapshot()
			for _, nd := range snap.Nodes() {
				if !nd.Allocated.IsZero() || !nd.Releasing.IsZero() {
					t.Errorf("all released: node %s allocated %v releasing %v", nd.ID, nd.Allocated, nd.Releasing)
				}
			}
			for _, q := range []string{"root", "root.a", "root.b"} {
				if row := snap.QueueUsage(q); !row.Used.IsZero() || !row.Releasing.IsZero() {
					t.Errorf("all released: queue %s used %v releasing %v", q, row.Used, row.Releasing)
				}
			}

			before := state(batch)
			for _, c := range []struct {
				name string
				ids  []string
				want error
			}{
				{"unknown", []string{"al-0001", "nope"}, ErrNotFound},
				{"repeated", []string{"al-0001", "al-0002", "al-0001"}, cowtable.ErrBatch},
			} {
				err := batch.Update(func(w *Txn) error { return w.ReleaseAllocations(c.ids...) })
				if !errors.Is(err, c.want) {
					t.Errorf("%s: error %v, want %v", c.name, err, c.want)
				}
				if after := state(batch); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("%s: the failed transaction changed the store", c.name)
				}
			}
		})
	}
}
