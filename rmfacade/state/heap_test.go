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

// BenchmarkHeld measures the heap the store holds per running container
// at the scale benchmark's full size (issue 18: 10,000 nodes, 1,000
// applications of 100 containers), written as weft-rm writes them, an
// application's containers per transaction: the records, their ids and
// every index entry over them. Run it with -benchtime 1x.
func BenchmarkHeld(b *testing.B) {
	const nodes, apps, perApp = 10_000, 1000, 100
	nodeIDs := make([]string, nodes)
	for i := range nodeIDs {
		nodeIDs[i] = fmt.Sprintf("node-%05d.example.com:8041", i)
	}
	for range b.N {
		s, err := Open(discard{})
		if err != nil {
			b.Fatal(err)
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
			b.Fatal(err)
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
				b.Fatal(err)
			}
		}
		held := heapInUse() - before
		b.ReportMetric(float64(held)/(apps*perApp), "B/container")
		runtime.KeepAlive(s)
	}
}
