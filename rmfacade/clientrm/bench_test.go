package clientrm

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
)

// BenchmarkGetApplicationReport measures getApplicationReport over
// loopback IPC from 8 connections, as many clients polling an RM do, and
// reports the p99 latency beside the throughput. The Java comparison
// against a real ResourceManager lives in test/e2e.
func BenchmarkGetApplicationReport(b *testing.B) {
	f := start(b)
	const conns = 8
	clients := make([]*ipc.Client, conns)
	for i := range clients {
		clients[i] = f.dial(b, "alice", nil)
	}
	id, err := submit(b, clients[0], "")
	if err != nil {
		b.Fatal(err)
	}
	req := &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}

	var mu sync.Mutex
	var lat []time.Duration
	next := 0
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		c := clients[next%conns]
		next++
		mu.Unlock()
		local := make([]time.Duration, 0, 1024)
		for pb.Next() {
			start := time.Now()
			if err := c.Call(context.Background(), Protocol, "getApplicationReport", req, &yarnpb.GetApplicationReportResponseProto{}); err != nil {
				b.Error(err)
				return
			}
			local = append(local, time.Since(start))
		}
		mu.Lock()
		lat = append(lat, local...)
		mu.Unlock()
	})
	b.StopTimer()
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}
