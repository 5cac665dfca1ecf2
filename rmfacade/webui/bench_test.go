package webui_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// BenchmarkPages renders each page over a store of 10,000 applications
// (a tenth of them running with an AM and a worker container, the rest
// finished, failed or accepted; of the running, one in five has had a
// third container killed by preemption in the last hour and one in five
// has its worker under a preemption notice) on 20 nodes, the size of a busy RM's
// retained list (yarn.resourcemanager.max-completed-applications defaults
// to 1,000; clusters raise it). The target is under 50 ms a page; the
// benchmark reports rather than enforces it, as a loaded machine would
// fail it spuriously.
//
//	go test ./rmfacade/webui/ -run '^$' -bench Pages -benchtime 20x
func BenchmarkPages(b *testing.B) {
	const apps, nodes = 10000, 20
	var ns []*records.Node
	for i := range nodes {
		ns = append(ns, &records.Node{ID: fmt.Sprintf("n%02d:8041", i), Host: fmt.Sprintf("n%02d", i), Port: 8041, Rack: "/default-rack",
			HTTPAddress: fmt.Sprintf("n%02d:8042", i), State: records.NodeRunning, Capability: records.Resource{MemoryMB: 262144, VCores: 64},
			Used: records.Resource{MemoryMB: 102400, VCores: 100}, NumContainers: 100, LastHealthUpdate: now.UnixMilli()})
	}
	queues := []string{"default", "etl", "adhoc"}
	states := []records.AppState{records.AppFinished, records.AppFinished, records.AppFinished, records.AppFailed, records.AppKilled,
		records.AppFinished, records.AppAccepted, records.AppFinished, records.AppFinished, records.AppRunning}
	c := newCluster(b, testQueues(b), func(w *state.WriteTxn) error {
		for i := int32(1); i <= apps; i++ {
			st := states[i%int32(len(states))]
			a := &records.Application{ID: appID(i), Name: fmt.Sprintf("job-%05d", i), User: fmt.Sprintf("user%02d", i%37),
				Queue: queues[i%3], Type: "SPARK", State: st, FinalStatus: records.FinalUndefined,
				StartTime: now.UnixMilli() - int64(apps-i)*1000, MaxAttempts: 2}
			if st.Terminal() {
				a.FinishTime, a.FinalStatus = a.StartTime+500, records.FinalSucceeded
			}
			if st == records.AppRunning {
				a.CurrentAttempt = 1
			}
			if err := w.PutApplication(a); err != nil {
				return err
			}
			if st != records.AppRunning {
				continue
			}
			if err := w.PutAttempt(&records.Attempt{ID: attemptID(i, 1), State: records.AttemptRunning,
				AMContainer: containerID(i, 1, 1).String(), StartTime: a.StartTime}); err != nil {
				return err
			}
			node := ns[int(i)%nodes]
			for id := int64(1); id <= 2; id++ {
				c := &records.Container{ID: containerID(i, 1, id), Node: node.ID, NodeHTTP: node.HTTPAddress,
					Resource: records.Resource{MemoryMB: 1024, VCores: 1}, State: records.ContainerRunning, StartTime: a.StartTime, Tier: records.TierLow}
				if id == 2 && i%50 == 19 {
					c.PreemptDeadline = now.Add(15 * time.Second).UnixMilli()
				}
				if err := w.PutContainer(c); err != nil {
					return err
				}
			}
			if i%50 == 9 {
				if err := w.PutContainer(&records.Container{ID: containerID(i, 1, 3), Node: node.ID, NodeHTTP: node.HTTPAddress,
					Resource: records.Resource{MemoryMB: 1024, VCores: 1}, State: records.ContainerComplete, StartTime: a.StartTime, Tier: records.TierLow,
					ExitStatus: records.ExitPreempted, PreemptDeadline: now.Add(-time.Duration(i%3000) * time.Second).UnixMilli(),
					FinishTime: now.Add(-time.Duration(i%3000) * time.Second).UnixMilli()}); err != nil {
					return err
				}
			}
		}
		return nil
	}, ns...)
	running := appID(apps - 1) // i%10 == 9: running
	pages := []struct{ name, path string }{
		{"apps", "/cluster/apps"},
		{"apps-last-page", "/cluster/apps?page=200"},
		{"apps-running-by-elapsed", "/cluster/apps/RUNNING?sort=elapsed&order=asc"},
		{"apps-queue-user", "/cluster/apps?queue=etl&user=user07&sort=name"},
		{"app", "/cluster/app/" + running.String()},
		{"attempt", "/cluster/appattempt/" + records.AttemptID{App: running, ID: 1}.String()},
		{"scheduler", "/cluster/scheduler"},
		{"nodes", "/cluster/nodes"},
		{"tiers", "/cluster/weft"},
		// The REST resources the pages link, on the same store.
		{"rest-apps", "/ws/v1/cluster/apps"},
		{"rest-apps-limit", "/ws/v1/cluster/apps?limit=100&states=RUNNING"},
		{"rest-app", "/ws/v1/cluster/apps/" + running.String()},
		{"rest-appattempts", "/ws/v1/cluster/apps/" + running.String() + "/appattempts"},
		{"rest-scheduler", "/ws/v1/cluster/scheduler"},
		{"rest-nodes", "/ws/v1/cluster/nodes"},
		{"rest-metrics", "/ws/v1/cluster/metrics"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			if status, body := get(b, c.handler, p.path); status != http.StatusOK {
				b.Fatalf("GET %s: %d\n%s", p.path, status, body)
			}
			req := httptest.NewRequest(http.MethodGet, p.path, nil)
			took := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				c.handler.ServeHTTP(&discardWriter{}, req)
				took = append(took, time.Since(start))
			}
			// The target is each page's and resource's p99 (≤ 50 ms):
			// the slowest 1% of the iterations, beside the mean ns/op.
			slices.Sort(took)
			b.ReportMetric(float64(took[(len(took)-1)*99/100])/1e6, "p99-ms")
		})
	}
}

// discardWriter is a ResponseWriter that drops the body, as a connection
// hands it to the kernel: what is measured is the server's own work, not
// a recorder's buffer growing to hold megabytes.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

func (w *discardWriter) WriteHeader(status int) { w.status = status }

func (w *discardWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}
