package rest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

func newServer(t *testing.T) (*httptest.Server, *rm.Manager) {
	t.Helper()
	return newServerWith(t, Options{})
}

// newServerWith is newServer with the handler's options.
func newServerWith(t *testing.T, opts Options) (*httptest.Server, *rm.Manager) {
	t.Helper()
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := quota.NewTree(append(quota.DefaultQueues, quota.QueueConfig{Path: "root.batch", Capacity: 0, UserLimitPercent: 25}))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{MaxPriority: 5, Logger: quiet})
	if err := mgr.PutNode(&records.Node{ID: "n1:8041", Host: "n1", Port: 8041, Rack: "/default-rack", HTTPAddress: "n1:8042",
		State: records.NodeRunning, Capability: records.Resource{MemoryMB: 8192, VCores: 8},
		Utilization: &records.NodeUtilization{PhysicalMemoryMB: 3072, CPU: 1.5, ContainersPhysicalMemoryMB: 1024, ContainersVCores: 2}}); err != nil {
		t.Fatal(err)
	}
	opts.Logger = quiet
	srv := httptest.NewServer(NewHandler(mgr, opts))
	t.Cleanup(func() { srv.Close(); st.Close() })
	return srv, mgr
}

type exchange struct {
	name, method, path, accept, contentType, body string
	wantStatus                                    int
	// wantJSON lists dotted paths into the JSON body and their expected
	// values as fmt %v renders them.
	wantJSON map[string]string
	wantText []string
}

func do(t *testing.T, srv *httptest.Server, ex exchange) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(ex.method, srv.URL+ex.path, strings.NewReader(ex.body))
	if err != nil {
		t.Fatal(err)
	}
	if ex.accept != "" {
		req.Header.Set("Accept", ex.accept)
	}
	if ex.contentType != "" {
		req.Header.Set("Content-Type", ex.contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// lookup follows a dotted path ("apps.app.0.id") through decoded JSON.
func lookup(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch cur := v.(type) {
		case map[string]any:
			v = cur[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			if i >= len(cur) {
				return nil
			}
			v = cur[i]
		default:
			return nil
		}
	}
	return v
}

func check(t *testing.T, srv *httptest.Server, tests []exchange) {
	t.Helper()
	for _, ex := range tests {
		t.Run(ex.name, func(t *testing.T) {
			status, body := do(t, srv, ex)
			if status != ex.wantStatus {
				t.Fatalf("status %d, want %d: %s", status, ex.wantStatus, body)
			}
			if len(ex.wantJSON) > 0 {
				var v any
				if err := json.Unmarshal(body, &v); err != nil {
					t.Fatalf("body is not JSON: %v: %s", err, body)
				}
				for path, want := range ex.wantJSON {
					if got := lookup(v, path); sprintf("%v", got) != want {
						t.Errorf("%s = %v, want %s (body %s)", path, got, want, body)
					}
				}
			}
			for _, s := range ex.wantText {
				if !strings.Contains(string(body), s) {
					t.Errorf("body lacks %q: %s", s, body)
				}
			}
		})
	}
}

func TestRESTApplications(t *testing.T) {
	srv, mgr := newServer(t)

	status, body := do(t, srv, exchange{method: "POST", path: "/ws/v1/cluster/apps/new-application?user.name=alice"})
	if status != 200 {
		t.Fatalf("new-application: %d %s", status, body)
	}
	var na dao.NewApplication
	if err := json.Unmarshal(body, &na); err != nil || na.MaximumResourceCapability.Memory != 8192 {
		t.Fatalf("new-application body %s: %v", body, err)
	}
	id := na.ApplicationID
	submission := `{"application-id":"` + id + `","application-name":"rest-app","queue":"batch","priority":3,
		"am-container-spec":{"commands":{"command":"{{JAVA_HOME}}/bin/java -Xmx256m Main"},
		  "environment":{"entry":[{"key":"A","value":"1"},{"key":"B","value":"2"}]},
		  "local-resources":{"entry":{"key":"app.jar","value":{"resource":"hdfs://nn:8020/user/alice/app.jar","type":"FILE","visibility":"APPLICATION","size":42,"timestamp":7}}}},
		"resource":{"memory":512,"vCores":1},"application-type":"SPARK","application-tags":{"tag":["Etl","nightly"]}}`
	xmlSubmission := `<?xml version="1.0"?><application-submission-context><application-id>%s</application-id>
		<application-name>xml-app</application-name><am-container-spec><commands><command>sleep 1</command></commands></am-container-spec>
		<resource><memory>1024</memory><vCores>1</vCores></resource><application-tags><tag>a</tag><tag>b</tag></application-tags></application-submission-context>`
	xmlID := mgr.NewApplicationID().String()
	anonID := mgr.NewApplicationID().String()

	check(t, srv, []exchange{
		{name: "submit json", method: "POST", path: "/ws/v1/cluster/apps?user.name=alice", contentType: "application/json", body: submission, wantStatus: 202},
		{name: "submit xml", method: "POST", path: "/ws/v1/cluster/apps?user.name=bob", contentType: "application/xml", body: sprintf(xmlSubmission, xmlID), wantStatus: 202},
		{name: "submit unknown queue", method: "POST", path: "/ws/v1/cluster/apps?user.name=alice", contentType: "application/json",
			body: `{"application-id":"` + mgr.NewApplicationID().String() + `","queue":"nope"}`, wantStatus: 400,
			wantJSON: map[string]string{"RemoteException.exception": "BadRequestException"}},
		{name: "submit malformed", method: "POST", path: "/ws/v1/cluster/apps?user.name=alice", contentType: "application/json", body: `{"application-id":`, wantStatus: 400,
			wantJSON: map[string]string{"RemoteException.exception": "WebApplicationException"}},
		{name: "submit bad id", method: "POST", path: "/ws/v1/cluster/apps?user.name=alice", contentType: "application/json", body: `{"application-id":"app_1"}`, wantStatus: 400},
		{name: "get app", method: "GET", path: "/ws/v1/cluster/apps/" + id, wantStatus: 200, wantJSON: map[string]string{
			"app.id": id, "app.user": "alice", "app.queue": "root.batch", "app.state": "ACCEPTED", "app.finalStatus": "UNDEFINED",
			"app.applicationType": "SPARK", "app.applicationTags": "etl,nightly", "app.priority": "3", "app.name": "rest-app"}},
		{name: "get app xml", method: "GET", path: "/ws/v1/cluster/apps/" + xmlID, accept: "application/xml", wantStatus: 200,
			wantText: []string{"<app><id>" + xmlID + "</id><user>bob</user>", "<applicationTags>a,b</applicationTags>"}},
		{name: "unknown app", method: "GET", path: "/ws/v1/cluster/apps/application_1_0042", wantStatus: 404, wantJSON: map[string]string{
			"RemoteException.exception": "NotFoundException", "RemoteException.javaClassName": "org.apache.hadoop.yarn.webapp.NotFoundException"}},
		{name: "malformed app id", method: "GET", path: "/ws/v1/cluster/apps/nonsense", wantStatus: 400, wantJSON: map[string]string{"RemoteException.exception": "BadRequestException"}},
		{name: "list", method: "GET", path: "/ws/v1/cluster/apps", wantStatus: 200, wantJSON: map[string]string{"apps.app.0.id": id, "apps.app.1.id": xmlID}},
		{name: "list by queue", method: "GET", path: "/ws/v1/cluster/apps?queue=default", wantStatus: 200, wantJSON: map[string]string{"apps.app.0.id": xmlID, "apps.app.1": "<nil>", "apps.app.0.queue": "root.default"}},
		{name: "list by user and tags", method: "GET", path: "/ws/v1/cluster/apps?user=alice&applicationTags=ETL", wantStatus: 200, wantJSON: map[string]string{"apps.app.0.id": id}},
		{name: "list by type", method: "GET", path: "/ws/v1/cluster/apps?applicationTypes=spark,mapreduce", wantStatus: 200, wantJSON: map[string]string{"apps.app.0.id": id, "apps.app.1": "<nil>"}},
		{name: "list limit", method: "GET", path: "/ws/v1/cluster/apps?limit=1", wantStatus: 200, wantJSON: map[string]string{"apps.app.1": "<nil>"}},
		{name: "list started window", method: "GET", path: "/ws/v1/cluster/apps?startedTimeBegin=1&startedTimeEnd=2", wantStatus: 200, wantText: []string{`{"apps":{}}`}},
		{name: "list bad state", method: "GET", path: "/ws/v1/cluster/apps?states=SLEEPING", wantStatus: 400},
		{name: "list bad limit", method: "GET", path: "/ws/v1/cluster/apps?limit=-1", wantStatus: 400},
		{name: "list bad window", method: "GET", path: "/ws/v1/cluster/apps?startedTimeBegin=5&startedTimeEnd=2", wantStatus: 400},
		{name: "state", method: "GET", path: "/ws/v1/cluster/apps/" + id + "/state", wantStatus: 200, wantJSON: map[string]string{"state": "ACCEPTED"}},
		{name: "attempts", method: "GET", path: "/ws/v1/cluster/apps/" + id + "/appattempts", wantStatus: 200, wantJSON: map[string]string{
			"appAttempts.appAttempt.0.id": "1", "appAttempts.appAttempt.0.appAttemptState": "SCHEDULED"}},
		{name: "priority", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/priority?user.name=alice", contentType: "application/json", body: `{"priority":9}`,
			wantStatus: 200, wantJSON: map[string]string{"priority": "5"}},
		{name: "get priority", method: "GET", path: "/ws/v1/cluster/apps/" + id + "/priority", wantStatus: 200, wantJSON: map[string]string{"priority": "5"}},
		{name: "move", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/queue?user.name=alice", contentType: "application/json", body: `{"queue":"default"}`,
			wantStatus: 200, wantJSON: map[string]string{"queue": "root.default"}},
		{name: "get queue", method: "GET", path: "/ws/v1/cluster/apps/" + id + "/queue", wantStatus: 200, wantJSON: map[string]string{"queue": "root.default"}},
		// A request naming no user acts as dr.who, as Hadoop's static user
		// filter names it; the queues' ACLs then decide (default: root's
		// administer ACL "*", as YARN's).
		{name: "submit without user", method: "POST", path: "/ws/v1/cluster/apps", contentType: "application/xml", body: sprintf(xmlSubmission, anonID), wantStatus: 202},
		{name: "submitted by dr.who", method: "GET", path: "/ws/v1/cluster/apps/" + anonID, wantStatus: 200, wantJSON: map[string]string{"app.user": "dr.who"}},
		{name: "kill without user", method: "PUT", path: "/ws/v1/cluster/apps/" + anonID + "/state", contentType: "application/json", body: `{"state":"KILLED"}`,
			wantStatus: 202, wantJSON: map[string]string{"state": "ACCEPTED"}},
		{name: "bad target state", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/state?user.name=alice", contentType: "application/json", body: `{"state":"RUNNING"}`, wantStatus: 400},
		{name: "kill with trailing bytes", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/state?user.name=alice", contentType: "application/json",
			body: `{"state":"KILLED"}}}`, wantStatus: 400},
		{name: "kill in the second of two documents", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/state?user.name=alice", contentType: "application/json",
			body: `{"state":"ACCEPTED"}{"state":"KILLED"}`, wantStatus: 400},
		{name: "not killed by either", method: "GET", path: "/ws/v1/cluster/apps/" + id + "/state", wantStatus: 200, wantJSON: map[string]string{"state": "ACCEPTED"}},
		// As a 3.4 RM: 202 with the state the kill found; then the state
		// resource says KILLED, and killing again is 200.
		{name: "kill", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/state?user.name=alice", contentType: "application/json", body: `{"state":"KILLED"}`,
			wantStatus: 202, wantJSON: map[string]string{"state": "ACCEPTED"}},
		{name: "state after kill", method: "GET", path: "/ws/v1/cluster/apps/" + id + "/state", wantStatus: 200, wantJSON: map[string]string{"state": "KILLED"}},
		{name: "kill again", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/state?user.name=alice", contentType: "application/json", body: `{"state":"KILLED"}`,
			wantStatus: 200, wantJSON: map[string]string{"state": "KILLED"}},
		{name: "killed", method: "GET", path: "/ws/v1/cluster/apps?states=KILLED", wantStatus: 200, wantJSON: map[string]string{"apps.app.0.finalStatus": "KILLED"}},
		{name: "final status filter", method: "GET", path: "/ws/v1/cluster/apps?finalStatus=UNDEFINED", wantStatus: 200, wantJSON: map[string]string{"apps.app.0.id": xmlID}},
		{name: "move killed", method: "PUT", path: "/ws/v1/cluster/apps/" + id + "/queue?user.name=alice", contentType: "application/json", body: `{"queue":"batch"}`, wantStatus: 400},
		{name: "wrong method", method: "DELETE", path: "/ws/v1/cluster/apps/" + id, wantStatus: 405},
		{name: "unknown resource", method: "GET", path: "/ws/v1/cluster/bogus", wantStatus: 404},
		{name: "ui app page", method: "GET", path: "/cluster/app/" + id, wantStatus: 200, wantText: []string{"rest-app", "KILLED"}},
		{name: "proxy before AM", method: "GET", path: "/proxy/" + xmlID + "/", wantStatus: 200, wantText: []string{"xml-app"}},
	})

	// The REST submission reaches the store as the same proto IPC clients send.
	a, err := mgr.Application(records.ApplicationID{ClusterTimestamp: mgr.ClusterTimestamp(), ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	sc := &yarnpb.ApplicationSubmissionContextProto{}
	if err := proto.Unmarshal(a.SubmissionContext, sc); err != nil {
		t.Fatal(err)
	}
	clc := sc.GetAmContainerSpec()
	lr := clc.GetLocalResources()
	if len(clc.GetCommand()) != 1 || len(clc.GetEnvironment()) != 2 || len(lr) != 1 || lr[0].GetValue().GetResource().GetHost() != "nn" ||
		lr[0].GetValue().GetResource().GetPort() != 8020 || lr[0].GetValue().GetResource().GetFile() != "/user/alice/app.jar" || lr[0].GetValue().GetSize() != 42 {
		t.Fatalf("stored launch context %v", clc)
	}
}

func TestRESTCluster(t *testing.T) {
	srv, _ := newServer(t)
	check(t, srv, []exchange{
		{name: "cluster", method: "GET", path: "/ws/v1/cluster", wantStatus: 200, wantJSON: map[string]string{"clusterInfo.state": "STARTED", "clusterInfo.haState": "ACTIVE"}},
		{name: "info", method: "GET", path: "/ws/v1/cluster/info", wantStatus: 200, wantJSON: map[string]string{"clusterInfo.hadoopVersion": HadoopVersion}},
		{name: "info xml", method: "GET", path: "/ws/v1/cluster/info", accept: "application/xml", wantStatus: 200, wantText: []string{"<clusterInfo><id>"}},
		{name: "metrics", method: "GET", path: "/ws/v1/cluster/metrics", wantStatus: 200, wantJSON: map[string]string{
			"clusterMetrics.activeNodes": "1", "clusterMetrics.totalMB": "8192", "clusterMetrics.appsSubmitted": "0"}},
		{name: "scheduler", method: "GET", path: "/ws/v1/cluster/scheduler", wantStatus: 200, wantJSON: map[string]string{
			"scheduler.schedulerInfo.type": "capacityScheduler", "scheduler.schedulerInfo.queueName": "root",
			"scheduler.schedulerInfo.queues.queue.0.queuePath": "root.default", "scheduler.schedulerInfo.queues.queue.1.queueName": "batch",
			"scheduler.schedulerInfo.queues.queue.0.userLimit": "100", "scheduler.schedulerInfo.queues.queue.1.userLimit": "25"}},
		{name: "scheduler xml", method: "GET", path: "/ws/v1/cluster/scheduler", accept: "application/xml", wantStatus: 200, wantText: []string{"<scheduler><schedulerInfo"}},
		{name: "empty apps", method: "GET", path: "/ws/v1/cluster/apps", wantStatus: 200, wantText: []string{`{"apps":{}}`}},
		{name: "nodes", method: "GET", path: "/ws/v1/cluster/nodes", wantStatus: 200, wantJSON: map[string]string{
			"nodes.node.0.id": "n1:8041", "nodes.node.0.state": "RUNNING", "nodes.node.0.availMemoryMB": "8192"}},
		{name: "nodes by state", method: "GET", path: "/ws/v1/cluster/nodes?states=LOST", wantStatus: 200, wantText: []string{`{"nodes":{}}`}},
		{name: "node", method: "GET", path: "/ws/v1/cluster/nodes/n1:8041", wantStatus: 200, wantJSON: map[string]string{"node.nodeHostName": "n1",
			// What the node agent measured, as a NodeManager reports it.
			"node.resourceUtilization.nodePhysicalMemoryMB": "3072", "node.resourceUtilization.nodeVirtualMemoryMB": "3072",
			"node.resourceUtilization.nodeCPUUsage": "1.5", "node.resourceUtilization.aggregatedContainersPhysicalMemoryMB": "1024",
			"node.resourceUtilization.containersCPUUsage": "2"}},
		{name: "unknown node", method: "GET", path: "/ws/v1/cluster/nodes/n9:1", wantStatus: 404},
		{name: "ui", method: "GET", path: "/cluster/nodes", wantStatus: 200, wantText: []string{"n1:8041"}},
	})
	// XML bodies parse as XML.
	_, body := do(t, srv, exchange{method: "GET", path: "/ws/v1/cluster/metrics", accept: "application/xml"})
	var m dao.ClusterMetricsInfo
	if err := xml.Unmarshal(body, &m); err != nil || m.TotalMB != 8192 {
		t.Fatalf("xml metrics %s: %v", body, err)
	}
}

// TestHTTPMethodsAndLimits: OPTIONS, HEAD and over-long URIs answered as
// a 3.4 RM's Jetty and Jersey answer them.
func TestHTTPMethodsAndLimits(t *testing.T) {
	srv, _ := newServer(t)
	send := func(method, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	cases := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"OPTIONS", "/ws/v1/cluster/apps", 200, "GET,HEAD,POST,OPTIONS"},
		{"OPTIONS", "/ws/v1/cluster/apps/application_1_0001/state", 200, "GET,HEAD,PUT,OPTIONS"},
		{"OPTIONS", "/ws/v1/cluster/info", 200, "GET,HEAD,OPTIONS"},
		{"OPTIONS", "/ws/v1/cluster/bogus", 404, ""},
		{"HEAD", "/ws/v1/cluster/info", 200, ""},
		{"GET", "/ws/v1/cluster/apps?name=" + strings.Repeat("x", 60<<10), 200, ""},
		{"GET", "/ws/v1/cluster/apps?name=" + strings.Repeat("x", 65<<10), 414, ""},
	}
	for _, c := range cases {
		resp := send(c.method, c.path)
		if resp.StatusCode != c.status || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %.60s: %d Allow %q, want %d %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.status, c.allow)
		}
	}
	// The server keeps serving.
	if resp := send("GET", "/ws/v1/cluster/info"); resp.StatusCode != 200 {
		t.Fatalf("info after: %d", resp.StatusCode)
	}
}

// TestTracking follows a 3.4 RM's tracking UI and URL through an
// application's life (testdata/rm-3.4.1: app-accepted, app-running,
// app-finished, app-killed).
func TestTracking(t *testing.T) {
	h := &handler{opts: Options{WebAddr: "rm:8088"}}
	id := records.ApplicationID{ClusterTimestamp: 1795404800970, ID: 2}
	cases := []struct {
		name    string
		app     records.Application
		ui, url string
	}{
		{"accepted", records.Application{State: records.AppAccepted}, "UNASSIGNED", ""},
		{"running", records.Application{State: records.AppRunning, LaunchTime: 1, OriginalTrackingURL: "http://am:1234"},
			"ApplicationMaster", "http://rm:8088/proxy/application_1795404800970_0002/"},
		{"running, no URL of its own", records.Application{State: records.AppRunning, LaunchTime: 1},
			"ApplicationMaster", "http://rm:8088/proxy/application_1795404800970_0002/"},
		{"finished", records.Application{State: records.AppFinished, LaunchTime: 1, TrackingURL: "http://history/job"},
			"History", "http://rm:8088/proxy/application_1795404800970_0002/"},
		{"killed before an AM ran", records.Application{State: records.AppKilled},
			"History", "http://rm:8088/cluster/app/application_1795404800970_0002"},
		{"unmanaged AM", records.Application{State: records.AppRunning, UnmanagedAM: true, LaunchTime: 1, TrackingURL: "http://client:9"},
			"ApplicationMaster", "http://client:9"},
	}
	for _, c := range cases {
		c.app.ID = id
		if ui, url := h.tracking(&c.app); ui != c.ui || url != c.url {
			t.Errorf("%s: %s %q, want %s %q", c.name, ui, url, c.ui, c.url)
		}
	}
}

// TestRESTUsage: what a running application holds shows in its report,
// its queue (used resources, capacity, users) and the cluster totals, as
// a 3.4 RM reports them (not 0 and {}).
func TestRESTUsage(t *testing.T) {
	srv, mgr := newServer(t)
	ctx := context.Background()
	id := mgr.NewApplicationID()
	if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default", AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	attempt := records.AttemptID{App: id, ID: 1}
	if err := mgr.AMContainerPlaced(ctx, records.ContainerID{Attempt: attempt, ID: 1}, "n1:8041", "n1:8042", records.Resource{MemoryMB: 1024, VCores: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.RegisterAM(ctx, attempt, "am", 1, ""); err != nil {
		t.Fatal(err)
	}
	g := rm.Grant{Node: "n1:8041", Resource: records.Resource{MemoryMB: 2048, VCores: 1}}
	if _, err := mgr.AllocateContainers(ctx, attempt, []rm.Grant{g, g}); err != nil {
		t.Fatal(err)
	}
	q := "scheduler.schedulerInfo.queues.queue.0."
	check(t, srv, []exchange{
		{name: "app", method: "GET", path: "/ws/v1/cluster/apps/" + id.String(), wantStatus: 200, wantJSON: map[string]string{
			"app.runningContainers": "3", "app.allocatedMB": "5120", "app.allocatedVCores": "3", "app.amNodeLabelExpression": "",
			"app.resourceInfo.resourceUsagesByPartition.0.used.memory": "5120", "app.resourceInfo.resourceUsagesByPartition.0.amUsed.memory": "1024"}},
		{name: "queue", method: "GET", path: "/ws/v1/cluster/scheduler", wantStatus: 200, wantJSON: map[string]string{
			q + "queuePath": "root.default", q + "resourcesUsed.memory": "5120", q + "numContainers": "3", q + "absoluteUsedCapacity": "62.5",
			q + "users.user.0.username": "alice", q + "users.user.0.resourcesUsed.memory": "5120", q + "users.user.0.AMResourceUsed.memory": "1024",
			q + "resources.resourceUsagesByPartition.0.used.memory": "5120", q + "capacities.queueCapacitiesByPartition.0.absoluteUsedCapacity": "62.5",
			q + "maximumAllocation.memory": "8192", q + "queueAcls.queueAcl.0.accessType": "ADMINISTER_QUEUE"}},
		{name: "metrics", method: "GET", path: "/ws/v1/cluster/metrics", wantStatus: 200, wantJSON: map[string]string{
			"clusterMetrics.crossPartitionMetricsAvailable": "true", "clusterMetrics.totalClusterResourcesAcrossPartition.memory": "8192"}},
	})
}

// TestRESTPending: a queue's pending resources are what its applications
// asked for and were not granted, as the CapacityScheduler reports them
// (a 3.4.1 RM: testdata/rm-3.4.1/scheduler.json, where an ACCEPTED
// application's AM is its queue's pending and its parent's): the AMs'
// outstanding asks (Options.Asks) and the AM containers ACCEPTED
// applications wait for, summed up the tree; users' pending stays 0.
func TestRESTPending(t *testing.T) {
	st, err := state.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree([]quota.QueueConfig{
		{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
		{Path: "root.default", Capacity: 50},
		{Path: "root.eng", Capacity: 50},
		{Path: "root.eng.etl", Capacity: 50},
		{Path: "root.eng.adhoc", Capacity: 50},
	})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{Logger: quiet})
	if err := mgr.PutNode(&records.Node{ID: "n1:8041", Host: "n1", Port: 8041, HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 16384, VCores: 16}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	submit := func(queue string, am records.Resource, unmanaged bool) records.ApplicationID {
		t.Helper()
		id := mgr.NewApplicationID()
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: queue, AMResource: am, UnmanagedAM: unmanaged}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	placeAM := func(id records.ApplicationID, am records.Resource) records.AttemptID {
		t.Helper()
		attempt := records.AttemptID{App: id, ID: 1}
		if err := mgr.AMContainerPlaced(ctx, records.ContainerID{Attempt: attempt, ID: 1}, "n1:8041", "n1:8042", am); err != nil {
			t.Fatal(err)
		}
		return attempt
	}
	gb := func(n int64) records.Resource { return records.Resource{MemoryMB: n << 10, VCores: int32(n)} }

	// root.eng.etl: an ACCEPTED application waiting for its 2 GB AM, a
	// RUNNING one whose AM asks for three 1 GB containers, an unmanaged
	// AM's (nothing to place).
	waiting := submit("etl", gb(2), false)
	running := submit("etl", gb(1), false)
	asking := placeAM(running, gb(1))
	if _, err := mgr.RegisterAM(ctx, asking, "am", 1, ""); err != nil {
		t.Fatal(err)
	}
	submit("etl", records.Resource{}, true)
	// root.eng.adhoc: an ACCEPTED application whose AM is placed, and a
	// killed one (its asks are over).
	placeAM(submit("adhoc", gb(1), false), gb(1))
	killed := submit("adhoc", gb(4), false)
	if _, err := mgr.Kill(ctx, killed, "alice", ""); err != nil {
		t.Fatal(err)
	}
	asks := func(attempt records.AttemptID) (int, records.Resource) {
		switch attempt.App {
		case running:
			return 3, gb(3)
		case killed:
			return 5, gb(5)
		}
		return 0, records.Resource{}
	}

	const (
		s     = "scheduler.schedulerInfo.queues.queue."
		def   = s + "0."
		eng   = s + "1."
		etl   = eng + "queues.queue.0."
		adhoc = eng + "queues.queue.1."
		p     = "resources.resourceUsagesByPartition.0.pending."
	)
	tests := []struct {
		name string
		asks func(records.AttemptID) (int, records.Resource)
		want map[string]string
	}{
		{"with the AMs' asks", asks, map[string]string{
			etl + "queuePath": "root.eng.etl", etl + p + "memory": "5120", etl + p + "vCores": "5", etl + "pendingContainers": "4",
			// Every resource type's value, as the RM writes a Resource; a
			// user's pending stays 0.
			etl + p + "resourceInformations.resourceInformation.0.value": "5120", etl + "users.user.0.resources.resourceUsagesByPartition.0.pending.memory": "0",
			adhoc + p + "memory": "0", adhoc + p + "vCores": "0", adhoc + "pendingContainers": "0",
			eng + "queuePath": "root.eng", eng + p + "memory": "5120", eng + p + "vCores": "5", eng + "pendingContainers": "4",
			def + "queuePath": "root.default", def + p + "memory": "0", def + "pendingContainers": "0"}},
		// Without the allocator's asks, the store's alone: the AM
		// container the ACCEPTED application waits for.
		{"without", nil, map[string]string{
			etl + p + "memory": "2048", etl + p + "vCores": "2", etl + "pendingContainers": "1",
			eng + p + "memory": "2048", eng + p + "vCores": "2", eng + "pendingContainers": "1",
			adhoc + p + "memory": "0", def + p + "memory": "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(NewHandler(mgr, Options{Logger: quiet, Asks: tt.asks}))
			defer srv.Close()
			check(t, srv, []exchange{{name: "scheduler", method: "GET", path: "/ws/v1/cluster/scheduler", wantStatus: 200, wantJSON: tt.want}})
		})
	}

	// An application's own report says the same (as a 3.4.1 RM's
	// app-accepted: its AM pending).
	srv := httptest.NewServer(NewHandler(mgr, Options{Logger: quiet, Asks: asks}))
	defer srv.Close()
	check(t, srv, []exchange{
		{name: "waiting app", method: "GET", path: "/ws/v1/cluster/apps/" + waiting.String(), wantStatus: 200, wantJSON: map[string]string{
			"app.resourceInfo.resourceUsagesByPartition.0.pending.memory": "2048", "app.resourceInfo.resourceUsagesByPartition.0.pending.vCores": "2"}},
		{name: "asking app", method: "GET", path: "/ws/v1/cluster/apps/" + running.String(), wantStatus: 200, wantJSON: map[string]string{
			"app.resourceInfo.resourceUsagesByPartition.0.pending.memory": "3072", "app.resourceInfo.resourceUsagesByPartition.0.used.memory": "1024"}},
		// The UI's scheduler page draws the same: the pending bar of
		// root.eng.etl, 5 GB of the cluster's 16.
		{name: "ui", method: "GET", path: "/cluster/scheduler", wantStatus: 200, wantText: []string{"<td>5 GB, 5 vcores</td>", `left:6.2%;width:31.2%`}},
	})
}

// Each attempt names where its AM container ran and links its logs, a
// failed attempt's too: that is where a user looks first.
func TestRESTAttemptsNameTheirAMNode(t *testing.T) {
	srv, mgr := newServer(t)
	ctx := context.Background()
	id := mgr.NewApplicationID()
	if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default", MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	first, second := records.AttemptID{App: id, ID: 1}, records.AttemptID{App: id, ID: 2}
	gib := records.Resource{MemoryMB: 1024, VCores: 1}
	for _, step := range []func() error{
		func() error { return mgr.AMLaunched(ctx, first, records.ContainerID{Attempt: first, ID: 1}) },
		func() error {
			return mgr.AMContainerPlaced(ctx, records.ContainerID{Attempt: first, ID: 1}, "n1:8041", "n1:8042", gib)
		},
		func() error { return mgr.AMExited(ctx, first, 1, "crashed") },
		func() error { return mgr.AMLaunched(ctx, second, records.ContainerID{Attempt: second, ID: 1}) },
		func() error {
			return mgr.AMContainerPlaced(ctx, records.ContainerID{Attempt: second, ID: 1}, "n2:8041", "n2:8042", gib)
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	path := "/ws/v1/cluster/apps/" + id.String() + "/appattempts"
	check(t, srv, []exchange{{name: "attempts", method: "GET", path: path, wantStatus: 200, wantJSON: map[string]string{
		"appAttempts.appAttempt.0.appAttemptState": "FAILED",
		"appAttempts.appAttempt.0.nodeId":          "n1:8041",
		"appAttempts.appAttempt.0.nodeHttpAddress": "n1:8042",
		"appAttempts.appAttempt.0.logsLink":        "http://n1:8042/node/containerlogs/" + records.ContainerID{Attempt: first, ID: 1}.String() + "/alice",
		"appAttempts.appAttempt.1.nodeId":          "n2:8041",
		"appAttempts.appAttempt.1.logsLink":        "http://n2:8042/node/containerlogs/" + records.ContainerID{Attempt: second, ID: 1}.String() + "/alice",
	}}})
}

// The proxy sends a browser to a running AM's own UI, and once the
// application ended to the history its AM named when it unregistered,
// or to the RM's page when it named none.
func TestRESTProxyFollowsTheAM(t *testing.T) {
	srv, mgr := newServer(t)
	ctx := context.Background()
	start := func() records.AttemptID {
		id := mgr.NewApplicationID()
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default"}); err != nil {
			t.Fatal(err)
		}
		at := records.AttemptID{App: id, ID: 1}
		if err := mgr.AMLaunched(ctx, at, records.ContainerID{Attempt: at, ID: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := mgr.RegisterAM(ctx, at, "node", 1, "http://node:4040"); err != nil {
			t.Fatal(err)
		}
		return at
	}
	finish := func(at records.AttemptID, final string) {
		if err := mgr.FinishAM(ctx, at, records.FinalSucceeded, "", final); err != nil {
			t.Fatal(err)
		}
		if err := mgr.AMExited(ctx, at, 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	running, named, unnamed := start(), start(), start()
	finish(named, "http://history:18080/history/app")
	finish(unnamed, "")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		name string
		at   records.AttemptID
		want string
	}{
		{"running: the AM's UI", running, "http://node:4040"},
		{"ended naming its history: the history", named, "http://history:18080/history/app"},
		{"ended naming none: the RM's application page", unnamed, "/cluster/app/" + unnamed.App.String()},
	} {
		resp, err := noFollow.Get(srv.URL + "/proxy/" + tc.at.App.String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || got != tc.want {
			t.Errorf("%s: %d to %q, want 302 to %q", tc.name, resp.StatusCode, got, tc.want)
		}
	}
}

// A running application's progress is what its AM last reported in an
// allocate (kept by the AM service, not the store), in percent; one
// whose AM has not reported, or that unregistered, shows its record's.
func TestRESTProgressIsTheAMsReport(t *testing.T) {
	reported := map[records.AttemptID]float32{}
	srv, mgr := newServerWith(t, Options{Progress: func(at records.AttemptID) (float32, bool) {
		p, ok := reported[at]
		return p, ok
	}})
	ctx := context.Background()
	start := func() records.AttemptID {
		id := mgr.NewApplicationID()
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default", UnmanagedAM: true}); err != nil {
			t.Fatal(err)
		}
		at := records.AttemptID{App: id, ID: 1}
		if _, err := mgr.RegisterAM(ctx, at, "h", 1, ""); err != nil {
			t.Fatal(err)
		}
		return at
	}
	reporting, silent, done := start(), start(), start()
	reported[reporting], reported[done] = 0.25, 0.5
	if err := mgr.FinishAM(ctx, done, records.FinalSucceeded, "", ""); err != nil {
		t.Fatal(err)
	}
	check(t, srv, []exchange{
		{name: "reporting", method: "GET", path: "/ws/v1/cluster/apps/" + reporting.App.String(), wantStatus: 200,
			wantJSON: map[string]string{"app.progress": "25"}},
		{name: "silent", method: "GET", path: "/ws/v1/cluster/apps/" + silent.App.String(), wantStatus: 200,
			wantJSON: map[string]string{"app.progress": "0"}},
		{name: "finished", method: "GET", path: "/ws/v1/cluster/apps/" + done.App.String(), wantStatus: 200,
			wantJSON: map[string]string{"app.progress": "100"}},
	})
}
