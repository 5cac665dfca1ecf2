package webui_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rest"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// The tests render the pages through the REST handler, which registers
// the UI and implements its Source: what they check is what a browser on
// port 8088 gets.

const ts = int64(1700000000000) // the cluster timestamp of every id below

var now = time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)

func appID(seq int32) records.ApplicationID {
	return records.ApplicationID{ClusterTimestamp: ts, ID: seq}
}

func attemptID(seq, n int32) records.AttemptID { return records.AttemptID{App: appID(seq), ID: n} }

func containerID(seq, n int32, id int64) records.ContainerID {
	return records.ContainerID{Attempt: attemptID(seq, n), ID: id}
}

// noQueues is a scheduler without a queue tree, for the empty cluster.
type noQueues struct{}

func (noQueues) Queue(string) (*records.Queue, bool)                  { return nil, false }
func (noQueues) Queues() []*records.Queue                             { return nil }
func (noQueues) Allowed(*records.Queue, string, quota.Operation) bool { return false }

// cluster is a handler over a store that fill populates.
type cluster struct {
	handler http.Handler
	store   *state.Store
}

func newCluster(t testing.TB, queues rm.Queues, fill func(w *state.WriteTxn) error, nodes ...*records.Node) *cluster {
	t.Helper()
	st, err := state.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := func() time.Time { return now }
	mgr := rm.New(st, queues, rm.Options{ClusterTimestamp: ts, Now: clock, Logger: quiet})
	for _, n := range nodes {
		if err := mgr.PutNode(n); err != nil {
			t.Fatal(err)
		}
	}
	if fill != nil {
		if err := st.Update(fill); err != nil {
			t.Fatal(err)
		}
	}
	return &cluster{handler: rest.NewHandler(mgr, rest.Options{Logger: quiet, Now: clock, WebAddr: "rm.example:8088"}), store: st}
}

// testQueues: root.default (40%) and root.eng (20%, max 50%) with two
// leaves of half of it each, so root.eng.etl is guaranteed 10% of the
// cluster.
func testQueues(t testing.TB) rm.Queues {
	t.Helper()
	tree, err := quota.NewTree([]quota.QueueConfig{
		{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
		{Path: "root.default", Capacity: 80},
		{Path: "root.eng", Capacity: 20, MaxCapacity: 50},
		{Path: "root.eng.etl", Capacity: 50},
		{Path: "root.eng.adhoc", Capacity: 50},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

var (
	// n1 runs with 16 GB, 4 GB of it held by the AM and one container of
	// application 1, 4 GB by pods that are not Weft's.
	n1 = &records.Node{ID: "n1:8041", Host: "n1", Port: 8041, Rack: "/rack-a", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 16384, VCores: 16}, Used: records.Resource{MemoryMB: 4096, VCores: 2},
		Occupied: records.Resource{MemoryMB: 4096, VCores: 4}, NumContainers: 2, HealthReport: "Healthy",
		LastHealthUpdate: now.Add(-5 * time.Second).UnixMilli(),
		Utilization:      &records.NodeUtilization{PhysicalMemoryMB: 6144, CPU: 3.25, ContainersPhysicalMemoryMB: 3000, ContainersVCores: 1.5}}
	n2 = &records.Node{ID: "n2:8041", Host: "n2", Port: 8041, Rack: "/rack-b", State: records.NodeLost,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}, LastHealthUpdate: now.Add(-time.Hour).UnixMilli()}
)

// populate stores five applications in different states and queues;
// application 1 runs in root.eng.etl with its AM and a preempted
// container on n1.
func populate(w *state.WriteTxn) error {
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	apps := []*records.Application{
		{ID: appID(1), Name: "etl-nightly", User: "alice", Queue: "etl", Type: "SPARK", Priority: 2, State: records.AppRunning,
			FinalStatus: records.FinalUndefined, SubmitTime: ms(90 * time.Second), StartTime: ms(83 * time.Second), LaunchTime: ms(80 * time.Second),
			AMResource: records.Resource{MemoryMB: 2048, VCores: 1}, MaxAttempts: 2, CurrentAttempt: 1, Progress: 0.5,
			Host: "n1", RPCPort: 4040, OriginalTrackingURL: "http://n1:4040/", TrackingURL: "http://n1:4040/"},
		{ID: appID(2), Name: "adhoc-query", User: "bob", Queue: "adhoc", Type: "MAPREDUCE", State: records.AppAccepted,
			FinalStatus: records.FinalUndefined, StartTime: ms(60 * time.Second), MaxAttempts: 2},
		{ID: appID(3), Name: "report", User: "alice", Queue: "default", Type: "MAPREDUCE", State: records.AppFinished,
			FinalStatus: records.FinalSucceeded, StartTime: ms(2 * time.Hour), LaunchTime: ms(2 * time.Hour), FinishTime: ms(time.Hour), Progress: 1},
		{ID: appID(4), Name: "broken", User: "carol", Queue: "default", Type: "SPARK", State: records.AppFailed,
			FinalStatus: records.FinalFailed, StartTime: ms(3 * time.Hour), FinishTime: ms(3*time.Hour - 10*time.Second),
			Diagnostics: "AM container exited with code 1"},
		{ID: appID(5), Name: "<script>alert(1)</script>", User: "bob", Queue: "etl", Type: "SPARK", State: records.AppKilled,
			FinalStatus: records.FinalKilled, StartTime: ms(30 * time.Minute), FinishTime: ms(20 * time.Minute),
			TrackingURL: "javascript:alert(1)"},
	}
	for _, a := range apps {
		if err := w.PutApplication(a); err != nil {
			return err
		}
	}
	am := containerID(1, 1, 1)
	if err := w.PutAttempt(&records.Attempt{ID: attemptID(1, 1), State: records.AttemptRunning, AMContainer: am.String(),
		Host: "n1", RPCPort: 4040, OriginalTrackingURL: "http://n1:4040/", FinalStatus: records.FinalUndefined,
		StartTime: ms(83 * time.Second)}); err != nil {
		return err
	}
	for _, c := range []*records.Container{
		{ID: am, Node: "n1:8041", NodeHTTP: "n1:8042", Resource: records.Resource{MemoryMB: 2048, VCores: 1}, State: records.ContainerRunning,
			StartTime: ms(80 * time.Second), Tier: records.TierHigh},
		{ID: containerID(1, 1, 2), Node: "n1:8041", NodeHTTP: "n1:8042", Resource: records.Resource{MemoryMB: 2048, VCores: 1},
			State: records.ContainerRunning, StartTime: ms(70 * time.Second), Tier: records.TierLow, PreemptDeadline: now.Add(time.Minute).UnixMilli()},
	} {
		if err := w.PutContainer(c); err != nil {
			return err
		}
	}
	return nil
}

type want struct {
	name, path string
	status     int
	has        []string
	lacks      []string
	// order lists strings that must appear in this order.
	order []string
}

func get(t testing.TB, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func check(t *testing.T, h http.Handler, tests []want) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, h, tt.path)
			if status != tt.status {
				t.Fatalf("GET %s: status %d, want %d:\n%s", tt.path, status, tt.status, body)
			}
			for _, s := range tt.has {
				if !strings.Contains(body, s) {
					t.Errorf("GET %s lacks %q:\n%s", tt.path, s, body)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(body, s) {
					t.Errorf("GET %s has %q", tt.path, s)
				}
			}
			at := 0
			for _, s := range tt.order {
				i := strings.Index(body[at:], s)
				if i < 0 {
					t.Errorf("GET %s: %q missing or out of order %v", tt.path, s, tt.order)
					break
				}
				at += i + len(s)
			}
		})
	}
}

// row is how the apps table marks an application's row.
func row(seq int32) string { return `data-id="` + appID(seq).String() + `"` }

const backLink = `<a href="/cluster">Back to the cluster</a>`

func TestPages(t *testing.T) {
	c := newCluster(t, testQueues(t), populate, n1, n2)
	app1, att1 := appID(1).String(), attemptID(1, 1).String()
	c2 := containerID(1, 1, 2).String()
	check(t, c.handler, []want{
		// The layout: nav, metrics bar from /ws/v1/cluster/metrics.
		{name: "cluster", path: "/cluster", status: 200,
			has: []string{"<title>All Applications", `href="/cluster/scheduler"`, `href="/cluster/nodes"`, `href="/cluster/apps/ACCEPTED"`,
				"Apps Submitted", `<a href="/cluster/apps">5</a>`, `<a href="/cluster/apps/RUNNING">1</a>`, `<a href="/cluster/apps/FAILED">1</a>`,
				"<td>16 GB</td>", "<td>4 GB</td>", `<a href="/cluster/nodes">1</a>`, `<a href="/cluster/nodes?state=LOST">1</a>`,
				`href="/ws/v1/cluster/apps"`, "Showing 1 to 5 of 5 entries"},
			// YARN's default: newest first.
			order: []string{row(5), row(4), row(3), row(2), row(1)}},
		{name: "root redirects", path: "/", status: http.StatusFound},
		{name: "apps row", path: "/cluster/apps", status: 200,
			has: []string{`<a href="/cluster/app/` + app1 + `">` + app1 + `</a>`, "<td>alice</td>", "<td>etl-nightly</td>", "<td>SPARK</td>",
				"<td>root.eng.etl</td>", "<td>2026-11-25 07:58:37 UTC</td>", "<td>1m 23s</td>", `<span class="state running">RUNNING</span>`,
				"<td>UNDEFINED</td>", `<td class="num">2</td>`, `<td class="num">4 GB</td>`, `style="width:50.0%"`,
				`<a href="http://rm.example:8088/proxy/` + app1 + `/">ApplicationMaster</a>`,
				// A finished application holds nothing: N/A, not -1.
				`<td class="num">N/A</td>`, "<td>1h 0m 0s</td>"},
			// Names are escaped, and an AM's javascript: URL is not a link.
			lacks: []string{"<script>alert", `href="javascript:`}},
		{name: "state filter", path: "/cluster/apps/RUNNING", status: 200,
			has:   []string{row(1), "<title>Applications in state RUNNING", `href="/ws/v1/cluster/apps?states=RUNNING"`, `class="on">RUNNING`},
			lacks: []string{row(2), row(3), row(4), row(5)}},
		{name: "state any case", path: "/cluster/apps/killed", status: 200, has: []string{row(5)}, lacks: []string{row(1)}},
		{name: "state without apps", path: "/cluster/apps/NEW_SAVING", status: 200, has: []string{"No applications match."}},
		{name: "unknown state", path: "/cluster/apps/SLEEPING", status: 404, has: []string{"No application state SLEEPING", backLink}},
		{name: "queue filter by leaf", path: "/cluster/apps?queue=etl", status: 200, has: []string{row(1), row(5)}, lacks: []string{row(2), row(3)}},
		{name: "queue filter by path", path: "/cluster/apps?queue=root.eng.etl", status: 200, has: []string{row(1), row(5), `href="/ws/v1/cluster/apps?queue=root.eng.etl"`},
			lacks: []string{row(2), row(4)}},
		{name: "user filter", path: "/cluster/apps?user=bob", status: 200, has: []string{row(2), row(5), "Clear filters"}, lacks: []string{row(1), row(3)}},
		{name: "state and user", path: "/cluster/apps/KILLED?user=alice", status: 200, has: []string{"No applications match."}, lacks: []string{row(5)}},
		{name: "sort started asc", path: "/cluster/apps?sort=started&order=asc", status: 200, order: []string{row(4), row(3), row(5), row(1), row(2)}},
		{name: "sort name desc", path: "/cluster/apps?sort=name&order=desc", status: 200, order: []string{row(3), row(1), row(4), row(2), row(5)}},
		{name: "sort elapsed", path: "/cluster/apps?sort=elapsed&order=desc", status: 200, order: []string{row(3), row(5), row(1), row(2), row(4)}},
		// By the queue path the table shows, not the leaf name.
		{name: "sort queue", path: "/cluster/apps?sort=queue&order=asc", status: 200, order: []string{row(3), row(4), row(2), row(1), row(5)}},
		{name: "unknown sort is the default", path: "/cluster/apps?sort=bogus", status: 200, order: []string{row(5), row(4), row(3), row(2), row(1)}},
		{name: "sort links keep filters", path: "/cluster/apps?user=bob", status: 200,
			has: []string{`href="/cluster/apps?order=asc&amp;sort=started&amp;user=bob"`, `<a href="/cluster/apps?order=asc&amp;sort=id&amp;user=bob">ID</a>▼`}},

		{name: "app", path: "/cluster/app/" + app1, status: 200,
			has: []string{"<title>Application " + app1, `href="/ws/v1/cluster/apps/` + app1 + `"`, "<td>etl-nightly</td>", "<td>1m 23s</td>",
				`<a href="http://rm.example:8088/proxy/` + app1 + `/">ApplicationMaster</a>`, "<td>n1:4040</td>",
				`<a href="http://n1:8042/node/containerlogs/` + containerID(1, 1, 1).String() + `/alice">Logs</a>`,
				// Preemption: one non-AM container of 2 GB.
				"<tr><th>Number of Non-AM Containers Preempted</th><td>1</td></tr>", "<td>2 GB, 1 vcores</td>",
				`<a href="/cluster/appattempt/` + att1 + `">` + att1 + `</a>`, `href="/ws/v1/cluster/apps/` + app1 + `/appattempts"`,
				"<td>" + c2 + "</td>", "<td>" + strings.ReplaceAll(c2, "_", "-") + "</td>", "<td>low</td>",
				`<a href="http://n1:8042/node/containerlogs/` + c2 + `/alice">Logs</a>`, "by 2026-11-25 08:01:00 UTC"}},
		{name: "failed app diagnostics", path: "/cluster/app/" + appID(4).String(), status: 200,
			has: []string{"AM container exited with code 1", "No attempts yet.", "No containers in the store.", "<td>10s</td>"}},
		{name: "unknown app", path: "/cluster/app/" + appID(99).String(), status: 404,
			has: []string{"<title>Not found", appID(99).String() + " is not known", backLink, "Apps Submitted"}},
		{name: "malformed app", path: "/cluster/app/application_x", status: 404, has: []string{"Invalid application id application_x", backLink}},
		{name: "attempt", path: "/cluster/appattempt/" + att1, status: 200,
			has: []string{"<title>Application Attempt " + att1, `<a href="/cluster/app/` + app1 + `">`, "<td>RUNNING</td>", "<td>n1:4040</td>",
				"<td>" + c2 + "</td>", `<a href="http://n1:8042">n1:8041</a>`, `href="/ws/v1/cluster/apps/` + app1 + `/appattempts"`}},
		{name: "unknown attempt", path: "/cluster/appattempt/" + attemptID(1, 2).String(), status: 404, has: []string{"is not known", backLink}},
		{name: "malformed attempt", path: "/cluster/appattempt/" + app1, status: 404, has: []string{"Invalid application attempt id", backLink}},
		{name: "unknown page", path: "/cluster/nope", status: 404, has: []string{"There is no page /cluster/nope", backLink}},

		{name: "nodes", path: "/cluster/nodes", status: 200,
			has: []string{`href="/ws/v1/cluster/nodes"`, `data-node="n1:8041"`, `data-node="n2:8041"`, "<td>/rack-a</td>", `<a href="http://n1:8042">n1:8042</a>`,
				"<td>2026-11-25 07:59:55 UTC</td>", `<td class="num">4 GB</td>`, `<td class="num">16 GB</td>`,
				"<td>4 GB, 4 vcores</td>", "<td>8 GB, 10 vcores</td>", "node: 6 GB memory, 3.25 cores; containers: 2.9 GB memory, 1.50 vcores",
				`<span class="state lost">LOST</span>`}},
		{name: "nodes by state", path: "/cluster/nodes?state=lost", status: 200, has: []string{`data-node="n2:8041"`, `href="/ws/v1/cluster/nodes?states=LOST"`},
			lacks: []string{`data-node="n1:8041"`}},
		{name: "unknown node state", path: "/cluster/nodes?state=ASLEEP", status: 404, has: []string{backLink}},
	})
}

// bars extracts a queue row's bar segments: class → style.
func bars(t *testing.T, body, queue string) map[string]string {
	t.Helper()
	i := strings.Index(body, `data-queue="`+queue+`"`)
	if i < 0 {
		t.Fatalf("no queue %s:\n%s", queue, body)
	}
	rowEnd := strings.Index(body[i:], "</tr>")
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<div class="(\w+)" style="([^"]*)"`).FindAllStringSubmatch(body[i:i+rowEnd], -1) {
		out[m[1]] = m[2]
	}
	return out
}

func TestSchedulerBars(t *testing.T) {
	c := newCluster(t, testQueues(t), populate, n1, n2)
	status, body := get(t, c.handler, "/cluster/scheduler")
	if status != 200 {
		t.Fatalf("status %d:\n%s", status, body)
	}
	for _, s := range []string{`href="/ws/v1/cluster/scheduler"`, "<title>Scheduler", `<a href="/cluster/apps?queue=root.eng.etl">etl</a>`,
		`<a href="/cluster/apps?user=alice">alice</a>`, "Active users of root.eng.etl"} {
		if !strings.Contains(body, s) {
			t.Errorf("scheduler page lacks %q", s)
		}
	}
	// The cluster is n1's 16 GB (n2 is lost). root.eng.etl is guaranteed
	// 10% of it and uses 4 GB, 25%: 10 within its guarantee, 15 borrowed.
	tests := []struct {
		queue string
		want  map[string]string
	}{
		{"root", map[string]string{"max": "width:100.0%", "guaranteed": "width:100.0%", "used": "width:25.0%",
			"borrowed": "left:100.0%;width:0.0%", "pending": "left:25.0%;width:0.0%"}},
		{"root.default", map[string]string{"max": "width:100.0%", "guaranteed": "width:80.0%", "used": "width:0.0%", "borrowed": "left:80.0%;width:0.0%"}},
		{"root.eng", map[string]string{"max": "width:50.0%", "guaranteed": "width:20.0%", "used": "width:20.0%", "borrowed": "left:20.0%;width:5.0%"}},
		// absoluteMaxCapacity is the parent's absolute maximum times the
		// queue's max (50% × 100%), as YARN's CSQueueUtils computes it.
		{"root.eng.etl", map[string]string{"max": "width:50.0%", "guaranteed": "width:10.0%", "used": "width:10.0%", "borrowed": "left:10.0%;width:15.0%"}},
		{"root.eng.adhoc", map[string]string{"guaranteed": "width:10.0%", "used": "width:0.0%", "borrowed": "left:10.0%;width:0.0%"}},
	}
	for _, tt := range tests {
		t.Run(tt.queue, func(t *testing.T) {
			got := bars(t, body, tt.queue)
			for class, style := range tt.want {
				if got[class] != style {
					t.Errorf("%s %s bar: %q, want %q", tt.queue, class, got[class], style)
				}
			}
		})
	}
	// Nested queues are indented under their parent, depth-first.
	at := 0
	for _, q := range []string{`padding-left:0.0em">root`, `padding-left:1.5em"><a href="/cluster/apps?queue=root.default">`,
		`padding-left:1.5em">eng`, `padding-left:3.0em"><a href="/cluster/apps?queue=root.eng.etl">`,
		`padding-left:3.0em"><a href="/cluster/apps?queue=root.eng.adhoc">`} {
		i := strings.Index(body[at:], q)
		if i < 0 {
			t.Fatalf("queue %q missing or out of order", q)
		}
		at += i
	}
}

func TestPagination(t *testing.T) {
	const n = 120 // 50 a page: pages of 50, 50 and 20
	c := newCluster(t, testQueues(t), func(w *state.WriteTxn) error {
		for i := int32(1); i <= n; i++ {
			if err := w.PutApplication(&records.Application{ID: appID(i), Name: fmt.Sprintf("app-%03d", i), User: "alice", Queue: "default", Type: "MAPREDUCE",
				State: records.AppFinished, FinalStatus: records.FinalSucceeded, StartTime: now.UnixMilli() - int64(n-i)*1000}); err != nil {
				return err
			}
		}
		return nil
	})
	rows := regexp.MustCompile(`<tr class="app"`)
	tests := []struct {
		path           string
		rows           int
		first, last    int32
		has            []string
		prevLink, next bool
	}{
		{"/cluster/apps", 50, 120, 71, []string{"Showing 1 to 50 of 120 entries", `<span class="cur">1</span>`, `<a href="/cluster/apps?page=3">3</a>`}, false, true},
		{"/cluster/apps?page=2", 50, 70, 21, []string{"Showing 51 to 100 of 120 entries", `<a href="/cluster/apps">1</a>`}, true, true},
		{"/cluster/apps?page=3", 20, 20, 1, []string{"Showing 101 to 120 of 120 entries"}, true, false},
		// Beyond the last page, or not a number: the nearest page.
		{"/cluster/apps?page=99", 20, 20, 1, []string{"Showing 101 to 120 of 120 entries"}, true, false},
		{"/cluster/apps?page=x", 50, 120, 71, nil, false, true},
		{"/cluster/apps?sort=id&order=asc&page=3", 20, 101, 120, []string{`<a href="/cluster/apps?order=asc&amp;page=2&amp;sort=id" rel="prev">`}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body := get(t, c.handler, tt.path)
			if status != 200 {
				t.Fatalf("status %d", status)
			}
			if got := len(rows.FindAllString(body, -1)); got != tt.rows {
				t.Errorf("%d rows, want %d", got, tt.rows)
			}
			first, last := strings.Index(body, row(tt.first)), strings.Index(body, row(tt.last))
			if first < 0 || last < 0 || first > last {
				t.Errorf("rows from %d to %d not in order (at %d, %d)", tt.first, tt.last, first, last)
			}
			for _, s := range tt.has {
				if !strings.Contains(body, s) {
					t.Errorf("lacks %q", s)
				}
			}
			if got := strings.Contains(body, `rel="prev"`); got != tt.prevLink {
				t.Errorf("prev link %v, want %v", got, tt.prevLink)
			}
			if got := strings.Contains(body, `rel="next"`); got != tt.next {
				t.Errorf("next link %v, want %v", got, tt.next)
			}
		})
	}
}

// TestEmptyCluster: no applications, no nodes, no queues; every page
// renders.
func TestEmptyCluster(t *testing.T) {
	c := newCluster(t, noQueues{}, nil)
	check(t, c.handler, []want{
		{name: "cluster", path: "/cluster", status: 200, has: []string{"No applications.", `<a href="/cluster/apps">0</a>`, "<td>0 MB</td>"}, lacks: []string{`class="pager"`}},
		{name: "apps page 2", path: "/cluster/apps?page=2", status: 200, has: []string{"No applications."}},
		{name: "state", path: "/cluster/apps/RUNNING", status: 200, has: []string{"No applications match."}},
		{name: "scheduler", path: "/cluster/scheduler", status: 200, has: []string{"No queues"}},
		{name: "nodes", path: "/cluster/nodes", status: 200, has: []string{"No nodes."}},
		{name: "tiers", path: "/cluster/weft", status: 200, has: []string{`data-tier="high"`, `data-tier="medium"`, `data-tier="low"`,
			"No preemptions in the last hour."}, lacks: []string{"preemptions-by-queue", `data-tier=""`}},
		{name: "app", path: "/cluster/app/" + appID(1).String(), status: 404, has: []string{backLink}},
		{name: "attempt", path: "/cluster/appattempt/" + attemptID(1, 1).String(), status: 404, has: []string{backLink}},
		{name: "stylesheet", path: "/static/weft.css", status: 200, has: []string{".qbar"}},
	})
}

// TestRESTUnchanged: the UI takes no REST path; REST keeps its YARN
// errors where the UI answers with pages.
func TestRESTUnchanged(t *testing.T) {
	c := newCluster(t, testQueues(t), populate, n1)
	check(t, c.handler, []want{
		{name: "malformed app", path: "/ws/v1/cluster/apps/application_x", status: 400, has: []string{`"RemoteException"`, "BadRequestException"}},
		{name: "unknown app", path: "/ws/v1/cluster/apps/" + appID(99).String(), status: 404, has: []string{"NotFoundException"}},
		{name: "metrics", path: "/ws/v1/cluster/metrics", status: 200, has: []string{`"appsSubmitted":5`, `"allocatedMB":4096`}},
		{name: "scheduler", path: "/ws/v1/cluster/scheduler", status: 200, has: []string{`"queuePath":"root.eng.etl"`}},
		{name: "unknown resource", path: "/ws/v1/cluster/nope", status: 404, has: []string{"NotFoundException"}},
	})
	rec := httptest.NewRecorder()
	c.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/cluster", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("HEAD /cluster: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
}
