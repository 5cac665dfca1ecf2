package state

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
)

func ids[T any](objs []*T, id func(*T) string) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, id(o))
	}
	return out
}

func allocID(a *objects.Allocation) string { return a.ID }

// TestTable checks a table's rows and secondary index through inserts,
// replacements that move an object between index keys, and deletes.
func TestTable(t *testing.T) {
	type op struct {
		del             bool
		id, app, node   string
		wantErr         error // errors.Is target; errAny for any error
		wantByApp       map[string][]string
		wantByNode      map[string][]string
		wantAll         []string
		wantNodeOfFirst string
	}
	errAny := errors.New("any")
	cases := []struct {
		name string
		ops  []op
	}{
		{"inserts in id order, per key", []op{
			{id: "b", app: "x", node: "n1"},
			{id: "a", app: "x", node: "n2"},
			{id: "c", app: "y", node: "n1", wantAll: []string{"a", "b", "c"},
				wantByApp:  map[string][]string{"x": {"a", "b"}, "y": {"c"}, "": {}, "xy": {}},
				wantByNode: map[string][]string{"n1": {"b", "c"}, "n2": {"a"}}},
		}},
		{"a replacement moves the object between keys", []op{
			{id: "a", app: "x", node: "n1"},
			{id: "a", app: "x", node: "n2", wantAll: []string{"a"},
				wantByNode: map[string][]string{"n1": {}, "n2": {"a"}}, wantNodeOfFirst: "n2"},
		}},
		{"delete takes every index entry", []op{
			{id: "a", app: "x", node: "n1"},
			{id: "b", app: "x", node: "n1"},
			{del: true, id: "a", wantAll: []string{"b"},
				wantByApp: map[string][]string{"x": {"b"}}, wantByNode: map[string][]string{"n1": {"b"}}},
		}},
		{"deleting a missing object", []op{{del: true, id: "a", wantErr: ErrNotFound}}},
		{"an object without id or index key is refused", []op{
			{id: "", app: "x", node: "n1", wantErr: errAny},
			{id: "a", app: "x", node: "", wantErr: errAny, wantAll: []string{}},
		}},
		{"keys that are prefixes of others stay apart", []op{
			{id: "a", app: "app-1", node: "n"},
			{id: "b", app: "app-10", node: "n"},
			{id: "c", app: "app-", node: "n", wantByApp: map[string][]string{"app-1": {"a"}, "app-10": {"b"}, "app-": {"c"}}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := newDB().allocations
			for i, o := range c.ops {
				al := &objects.Allocation{ID: o.id, AppID: o.app, NodeID: o.node}
				var err error
				if o.del {
					err = tb.delete(al)
				} else {
					err = tb.insert(al)
				}
				switch {
				case o.wantErr == nil && err != nil:
					t.Fatalf("op %d: %v", i, err)
				case o.wantErr == errAny && err == nil, o.wantErr != nil && o.wantErr != errAny && !errors.Is(err, o.wantErr):
					t.Fatalf("op %d: error %v, want %v", i, err, o.wantErr)
				}
				if o.wantAll != nil {
					if got := ids(tb.all(), allocID); !slices.Equal(got, o.wantAll) {
						t.Errorf("op %d: all %v, want %v", i, got, o.wantAll)
					}
				}
				for key, want := range o.wantByApp {
					if got := ids(tb.allBy(allocationsByApp, key), allocID); !slices.Equal(got, want) {
						t.Errorf("op %d: by app %q %v, want %v", i, key, got, want)
					}
				}
				for key, want := range o.wantByNode {
					if got := ids(tb.allBy(allocationsByNode, key), allocID); !slices.Equal(got, want) {
						t.Errorf("op %d: by node %q %v, want %v", i, key, got, want)
					}
				}
				if o.wantNodeOfFirst != "" {
					if got := tb.get(o.id); got == nil || got.NodeID != o.wantNodeOfFirst {
						t.Errorf("op %d: get(%s) = %+v, want node %s", i, o.id, got, o.wantNodeOfFirst)
					}
				}
			}
		})
	}
}

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
