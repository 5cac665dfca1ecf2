package state

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// discard is a Durable that keeps nothing, so that BenchmarkHeld measures
// the tables and not a copy of every record's encoding.
type discard struct{}

func (discard) Load(func(table, key string, value []byte) error) error { return nil }
func (discard) Commit([]Op) error                                      { return nil }
func (discard) Close() error                                           { return nil }

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// heldPerContainer returns the heap the store holds per running
// container once apps applications of perApp containers each are written
// as weft-rm writes them, an application's containers per transaction,
// over 10,000 nodes: the records, their ids and every index entry over
// them.
func heldPerContainer(tb testing.TB, apps, perApp int) float64 {
	const nodes = 10_000
	nodeIDs := make([]string, nodes)
	for i := range nodeIDs {
		nodeIDs[i] = fmt.Sprintf("node-%05d.example.com:8041", i)
	}
	s, err := Open(discard{})
	if err != nil {
		tb.Fatal(err)
	}
	err = s.Update(func(w *WriteTxn) error {
		for _, id := range nodeIDs {
			if err := w.PutNode(&records.Node{ID: id, State: records.NodeRunning}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	before := heapInUse()
	for j := range apps {
		a := app(int32(j+1), records.AppRunning, "root.default", "alice", "SPARK")
		at := &records.Attempt{ID: records.AttemptID{App: a.ID, ID: 1}}
		err := s.Update(func(w *WriteTxn) error {
			if err := w.PutApplication(a); err != nil {
				return err
			}
			if err := w.PutAttempt(at); err != nil {
				return err
			}
			for k := range perApp {
				c := &records.Container{ID: records.ContainerID{Attempt: at.ID, ID: int64(k + 1)},
					Node: nodeIDs[(j*perApp+k)%nodes], State: records.ContainerRunning, Acquired: true,
					Resource: records.Resource{MemoryMB: 4096, VCores: 1}, StartTime: 1700000000000}
				if err := w.PutContainer(c); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	held := heapInUse() - before
	runtime.KeepAlive(s)
	return float64(held) / float64(apps*perApp)
}

// BenchmarkHeld measures the heap the store holds per running container
// at the scale benchmark's full size (10,000 nodes, 1,000 applications of
// 100 containers). Run it with -benchtime 1x.
func BenchmarkHeld(b *testing.B) {
	for range b.N {
		b.ReportMetric(heldPerContainer(b, 1000, 100), "B/container")
	}
}

// TestHeld bounds what the store holds per container, at a tenth of the
// full size: 504 bytes at the full size (BenchmarkHeld), where unshared
// attempt index keys (attemptKeys) would make it 550, and go-memdb's
// trees 1,624.
func TestHeld(t *testing.T) {
	const most = 525
	if testing.Short() {
		t.Skip("writes 10,000 containers")
	}
	if got := heldPerContainer(t, 100, 100); got > most {
		t.Errorf("the store holds %.0f bytes per container, want at most %d", got, most)
	} else {
		t.Logf("%.0f bytes per container", got)
	}
}

// TestAttemptKeysGoWithTheAttempt: an attempt's shared index key is
// dropped when its application is removed, and made again, equal, for a
// container written after.
func TestAttemptKeysGoWithTheAttempt(t *testing.T) {
	s, err := Open(discard{})
	if err != nil {
		t.Fatal(err)
	}
	a := app(1, records.AppFinished, "root.default", "alice", "SPARK")
	at := records.AttemptID{App: a.ID, ID: 1}
	put := func(w *WriteTxn) error {
		if err := w.PutApplication(a); err != nil {
			return err
		}
		if err := w.PutAttempt(&records.Attempt{ID: at}); err != nil {
			return err
		}
		return w.PutContainer(&records.Container{ID: records.ContainerID{Attempt: at, ID: 2}, State: records.ContainerComplete})
	}
	if err := s.Update(put); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.attemptKeys[at]; !ok {
		t.Fatal("no key kept for the attempt of a stored container")
	}
	if err := s.Update(func(w *WriteTxn) error { return w.DeleteApplication(a.ID) }); err != nil {
		t.Fatal(err)
	}
	if n := len(s.attemptKeys); n != 0 {
		t.Errorf("%d attempt keys kept after the application was removed", n)
	}
	if err := s.Update(put); err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().ContainersOfAttempt(at); len(got) != 1 {
		t.Errorf("%d containers of the attempt written again, want 1", len(got))
	}
}
