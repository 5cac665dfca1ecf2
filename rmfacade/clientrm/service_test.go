package clientrm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

type fixture struct {
	addr string
	mgr  *rm.Manager
}

func start(t testing.TB) *fixture {
	t.Helper()
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree, err := quota.NewTree([]quota.QueueConfig{
		{Path: "root", Capacity: 100, AdminACL: "admin"},
		{Path: "root.default", Capacity: 100, SubmitACL: "*"},
		{Path: "root.prod", Capacity: 0, SubmitACL: "alice"},
	})
	if err != nil {
		t.Fatal(err)
	}
	mgr := rm.New(st, tree, rm.Options{MaxPriority: 5})
	tokens := NewDelegationTokens(st, []byte("0123456789abcdef0123"), TokenOptions{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := New(mgr, Options{Tokens: tokens, WebAddr: "127.0.0.1:8088", Logger: quiet})
	t.Cleanup(func() { st.Close() }) // after the server's shutdown
	addr := ipctest.Serve(t, ipc.Options{Simple: true, Tokens: tokens}, svc.Service())
	return &fixture{addr: addr, mgr: mgr}
}

func (f *fixture) dial(t testing.TB, user string, tok *ipc.Token) *ipc.Client {
	t.Helper()
	c, err := ipctest.Dial(t, f.addr, ipc.ClientOptions{User: user, Protocol: Protocol, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func call[Resp proto.Message](t testing.TB, c *ipc.Client, method string, req proto.Message, resp Resp) (Resp, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return resp, c.Call(ctx, Protocol, method, req, resp)
}

// aclRefusal reports whether err is YARN's RPC form of an ACL refusal
// whose message starts with msg.
func aclRefusal(err error, msg string) bool {
	var re *ipc.RemoteError
	return errors.As(err, &re) && re.Class == yarnerr.ClassYarnException &&
		strings.HasPrefix(re.Message, yarnerr.ClassAccessControl+": "+msg)
}

func remoteClass(err error) string {
	var re *ipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

func submit(t testing.TB, c *ipc.Client, queue string, tags ...string) (*yarnpb.ApplicationIdProto, error) {
	t.Helper()
	newApp, err := call(t, c, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, &yarnpb.GetNewApplicationResponseProto{})
	if err != nil {
		t.Fatal(err)
	}
	if newApp.GetMaximumCapability().GetMemory() != 8192 {
		t.Fatalf("maximum capability %v", newApp.GetMaximumCapability())
	}
	_, err = call(t, c, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: newApp.GetApplicationId(), ApplicationName: proto.String("sleeper"), Queue: proto.String(queue),
		ApplicationType: proto.String("MAPREDUCE"), ApplicationTags: tags, Resource: &yarnpb.ResourceProto{Memory: proto.Int64(512), VirtualCores: proto.Int32(1)},
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(9)},
	}}, &yarnpb.SubmitApplicationResponseProto{})
	return newApp.GetApplicationId(), err
}

func TestApplicationLifecycleOverIPC(t *testing.T) {
	f := start(t)
	alice := f.dial(t, "alice", nil)
	bob := f.dial(t, "bob", nil)

	id1, err := submit(t, alice, "", "Nightly")
	if err != nil {
		t.Fatal(err)
	}
	id2, err := submit(t, alice, "prod")
	if err != nil {
		t.Fatal(err)
	}
	// ACL refusals: a YarnException wrapping the AccessControlException,
	// as RPCUtil.getRemoteException makes them.
	if _, err := submit(t, bob, "prod"); !aclRefusal(err, "User bob does not have permission to submit") {
		t.Fatalf("submit without ACL: %v", err)
	}
	if _, err := submit(t, bob, "nope"); remoteClass(err) != yarnerr.ClassYarnException {
		t.Fatalf("submit to unknown queue: %v", err)
	}

	rep, err := call(t, bob, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id1}, &yarnpb.GetApplicationReportResponseProto{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.GetApplicationReport()
	if r.GetYarnApplicationState() != yarnpb.YarnApplicationStateProto_ACCEPTED || r.GetUser() != "alice" || r.GetQueue() != "root.default" ||
		r.GetName() != "sleeper" || r.GetApplicationType() != "MAPREDUCE" || r.GetPriority().GetPriority() != 5 ||
		r.GetCurrentApplicationAttemptId().GetAttemptId() != 1 || len(r.GetApplicationTags()) != 1 || r.GetApplicationTags()[0] != "nightly" {
		t.Fatalf("report %v", r)
	}

	lists := []struct {
		name string
		req  *yarnpb.GetApplicationsRequestProto
		want int
	}{
		{"all", &yarnpb.GetApplicationsRequestProto{}, 2},
		{"queue", &yarnpb.GetApplicationsRequestProto{Queues: []string{"prod"}}, 1},
		{"queue by path", &yarnpb.GetApplicationsRequestProto{Queues: []string{"root.prod"}}, 1},
		{"tag", &yarnpb.GetApplicationsRequestProto{ApplicationTags: []string{"nightly"}}, 1},
		{"type", &yarnpb.GetApplicationsRequestProto{ApplicationTypes: []string{"mapreduce"}}, 2},
		{"running", &yarnpb.GetApplicationsRequestProto{ApplicationStates: []yarnpb.YarnApplicationStateProto{yarnpb.YarnApplicationStateProto_RUNNING}}, 0},
		{"own scope", &yarnpb.GetApplicationsRequestProto{Scope: yarnpb.ApplicationsRequestScopeProto_OWN.Enum()}, 0},
		{"limit", &yarnpb.GetApplicationsRequestProto{Limit: proto.Int64(1)}, 1},
	}
	for _, l := range lists {
		resp, err := call(t, bob, "getApplications", l.req, &yarnpb.GetApplicationsResponseProto{})
		if err != nil || len(resp.GetApplications()) != l.want {
			t.Errorf("%s: %d apps, %v; want %d", l.name, len(resp.GetApplications()), err, l.want)
		}
	}

	if _, err := call(t, bob, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id2}, &yarnpb.KillApplicationResponseProto{}); !aclRefusal(err, "User bob cannot perform operation MODIFY_APP on") {
		t.Fatalf("kill by non-owner: %v", err)
	}
	kill, err := call(t, alice, "forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id2}, &yarnpb.KillApplicationResponseProto{})
	if err != nil || !kill.GetIsKillCompleted() {
		t.Fatalf("kill: %v %v", kill, err)
	}
	if a, _ := f.mgr.Application(wire.AppIDOf(id2)); a.State != records.AppKilled {
		t.Fatalf("after kill: %s", a.State)
	}

	missing := &yarnpb.ApplicationIdProto{Id: proto.Int32(999), ClusterTimestamp: id1.ClusterTimestamp}
	notFound := []struct {
		method string
		req    proto.Message
		resp   proto.Message
		class  string
	}{
		{"getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: missing}, &yarnpb.GetApplicationReportResponseProto{}, yarnerr.ClassApplicationNotFound},
		{"getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: missing}, &yarnpb.GetApplicationAttemptsResponseProto{}, yarnerr.ClassApplicationNotFound},
		{"getApplicationAttemptReport", &yarnpb.GetApplicationAttemptReportRequestProto{ApplicationAttemptId: &yarnpb.ApplicationAttemptIdProto{ApplicationId: id1, AttemptId: proto.Int32(7)}},
			&yarnpb.GetApplicationAttemptReportResponseProto{}, yarnerr.ClassApplicationAttemptNotFound},
		{"getContainerReport", &yarnpb.GetContainerReportRequestProto{ContainerId: &yarnpb.ContainerIdProto{AppId: id1, AppAttemptId: &yarnpb.ApplicationAttemptIdProto{ApplicationId: id1, AttemptId: proto.Int32(1)}, Id: proto.Int64(1)}},
			&yarnpb.GetContainerReportResponseProto{}, yarnerr.ClassContainerNotFound},
		{"forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: missing}, &yarnpb.KillApplicationResponseProto{}, yarnerr.ClassApplicationNotFound},
	}
	for _, nf := range notFound {
		if _, err := call(t, bob, nf.method, nf.req, nf.resp); remoteClass(err) != nf.class {
			t.Errorf("%s: got %v, want %s", nf.method, err, nf.class)
		}
	}

	atts, err := call(t, bob, "getApplicationAttempts", &yarnpb.GetApplicationAttemptsRequestProto{ApplicationId: id1}, &yarnpb.GetApplicationAttemptsResponseProto{})
	if err != nil || len(atts.GetApplicationAttempts()) != 1 ||
		atts.GetApplicationAttempts()[0].GetYarnApplicationAttemptState() != yarnpb.YarnApplicationAttemptStateProto_APP_ATTEMPT_SCHEDULED {
		t.Fatalf("attempts %v %v", atts, err)
	}
	// An unknown queue: an answer with no QueueInfo, as ClientRMService
	// gives.
	if none, err := call(t, bob, "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("nope")},
		&yarnpb.GetQueueInfoResponseProto{}); err != nil || none.QueueInfo != nil {
		t.Errorf("unknown queue: %v, %v", none, err)
	}
	qi, err := call(t, bob, "getQueueInfo", &yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("root"), IncludeChildQueues: proto.Bool(true),
		Recursive: proto.Bool(true), IncludeApplications: proto.Bool(true)}, &yarnpb.GetQueueInfoResponseProto{})
	if err != nil || len(qi.GetQueueInfo().GetChildQueues()) != 2 {
		t.Fatalf("queue info %v %v", qi, err)
	}
	for _, child := range qi.GetQueueInfo().GetChildQueues() {
		if child.GetQueueName() == "default" && (len(child.GetApplications()) != 1 || child.GetCapacity() != 1) {
			t.Fatalf("default queue %v", child)
		}
		// Weft preempts between queues, not within one.
		if child.GetPreemptionDisabled() || !child.GetIntraQueuePreemptionDisabled() {
			t.Errorf("queue %s: preemption disabled %v, intra-queue disabled %v", child.GetQueueName(),
				child.GetPreemptionDisabled(), child.GetIntraQueuePreemptionDisabled())
		}
	}
	acls, err := call(t, bob, "getQueueUserAcls", &yarnpb.GetQueueUserAclsInfoRequestProto{}, &yarnpb.GetQueueUserAclsInfoResponseProto{})
	if err != nil || len(acls.GetQueueUserAcls()) != 3 {
		t.Fatalf("acls %v %v", acls, err)
	}
	for _, a := range acls.GetQueueUserAcls() {
		if a.GetQueueName() == "prod" && len(a.GetUserAcls()) != 0 || a.GetQueueName() == "default" && len(a.GetUserAcls()) != 1 {
			t.Errorf("prod acls %v", a.GetUserAcls())
		}
	}
}

func TestDelegationTokens(t *testing.T) {
	f := start(t)
	alice := f.dial(t, "alice", nil)
	resp, err := call(t, alice, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("yarn/host@REALM")}, &commonpb.GetDelegationTokenResponseProto{})
	if err != nil {
		t.Fatal(err)
	}
	tok := resp.GetToken()
	if tok.GetKind() != DelegationTokenKind {
		t.Fatalf("kind %q", tok.GetKind())
	}

	// The token authenticates its owner, whatever user the client claims.
	withToken := f.dial(t, "mallory", &ipc.Token{Identifier: tok.GetIdentifier(), Password: tok.GetPassword()})
	if _, err := submit(t, withToken, "prod"); err != nil {
		t.Fatalf("submit as token owner: %v", err)
	}
	apps, err := call(t, withToken, "getApplications", &yarnpb.GetApplicationsRequestProto{}, &yarnpb.GetApplicationsResponseProto{})
	if err != nil || len(apps.GetApplications()) != 1 || apps.GetApplications()[0].GetUser() != "alice" {
		t.Fatalf("apps via token: %v %v", apps, err)
	}
	if _, err := call(t, withToken, "getDelegationToken", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("x")}, &commonpb.GetDelegationTokenResponseProto{}); err == nil {
		t.Fatal("a token obtained another token")
	}

	// A wrong password fails SASL; a renewal by someone else is refused.
	bad := append([]byte(nil), tok.GetPassword()...)
	bad[0] ^= 0xff
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ipc.Dial(ctx, f.addr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: tok.GetIdentifier(), Password: bad}}); remoteClass(err) != ipc.ClassSaslException {
		t.Fatalf("bad password: %v", err)
	}
	if _, err := call(t, alice, "renewDelegationToken", &commonpb.RenewDelegationTokenRequestProto{Token: tok}, &commonpb.RenewDelegationTokenResponseProto{}); remoteClass(err) != ipc.ClassAccessControlException {
		t.Fatalf("renew by non-renewer: %v", err)
	}
	yarnUser := f.dial(t, "yarn", nil)
	if r, err := call(t, yarnUser, "renewDelegationToken", &commonpb.RenewDelegationTokenRequestProto{Token: tok}, &commonpb.RenewDelegationTokenResponseProto{}); err != nil || r.GetNewExpiryTime() == 0 {
		t.Fatalf("renew: %v %v", r, err)
	}
	if _, err := call(t, alice, "cancelDelegationToken", &commonpb.CancelDelegationTokenRequestProto{Token: tok}, &commonpb.CancelDelegationTokenResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ipc.Dial(ctx, f.addr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: tok.GetIdentifier(), Password: tok.GetPassword()}}); remoteClass(err) != ipc.ClassInvalidToken {
		t.Fatalf("cancelled token: %v", err)
	}
}

// TestEnumValuesOutsideTheEnum: states a client sends that the enum does
// not have are dropped, as Java's protobuf drops them before a real RM
// sees the request, so a filter of only unknown states is no filter —
// never an error (a recovered "slice bounds out of range" before).
func TestEnumValuesOutsideTheEnum(t *testing.T) {
	f := start(t)
	c := f.dial(t, "alice", nil)
	if err := f.mgr.PutNode(&records.Node{ID: "n:8041", Host: "n", Port: 8041, State: records.NodeRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := submit(t, c, "default"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		nodes []yarnpb.NodeStateProto
		want  int
	}{
		{"unknown only: every state", []yarnpb.NodeStateProto{42}, 1},
		{"unknown and RUNNING", []yarnpb.NodeStateProto{42, yarnpb.NodeStateProto_NS_RUNNING}, 1},
		{"unknown and LOST", []yarnpb.NodeStateProto{-7, yarnpb.NodeStateProto_NS_LOST}, 0},
	}
	for _, tc := range cases {
		resp, err := call(t, c, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{NodeStates: tc.nodes}, &yarnpb.GetClusterNodesResponseProto{})
		if err != nil || len(resp.GetNodeReports()) != tc.want {
			t.Errorf("getClusterNodes %s: %d nodes, %v; want %d", tc.name, len(resp.GetNodeReports()), err, tc.want)
		}
	}
	apps, err := call(t, c, "getApplications", &yarnpb.GetApplicationsRequestProto{ApplicationStates: []yarnpb.YarnApplicationStateProto{99}},
		&yarnpb.GetApplicationsResponseProto{})
	if err != nil || len(apps.GetApplications()) != 1 {
		t.Errorf("getApplications with an unknown state: %d applications, %v; want 1", len(apps.GetApplications()), err)
	}
	// And the server keeps serving.
	if _, err := call(t, c, "getClusterMetrics", &yarnpb.GetClusterMetricsRequestProto{}, &yarnpb.GetClusterMetricsResponseProto{}); err != nil {
		t.Fatal(err)
	}
}

// A node's measured use reaches the report `yarn node -status` prints
// ("Resource Utilization by Node/Containers"); an unmeasured node has none.
func TestNodeReportUtilization(t *testing.T) {
	f := start(t)
	c := f.dial(t, "alice", nil)
	for _, n := range []*records.Node{
		{ID: "a:8041", Host: "a", Port: 8041, State: records.NodeRunning,
			Utilization: &records.NodeUtilization{PhysicalMemoryMB: 3072, CPU: 1.5, ContainersPhysicalMemoryMB: 1024, ContainersVCores: 2}},
		{ID: "b:8041", Host: "b", Port: 8041, State: records.NodeRunning},
	} {
		if err := f.mgr.PutNode(n); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := call(t, c, "getClusterNodes", &yarnpb.GetClusterNodesRequestProto{}, &yarnpb.GetClusterNodesResponseProto{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*yarnpb.NodeReportProto{}
	for _, r := range resp.GetNodeReports() {
		got[r.GetNodeId().GetHost()] = r
	}
	if u := got["a"].GetNodeUtilization(); u.GetPmem() != 3072 || u.GetVmem() != 3072 || u.GetCpu() != 1.5 {
		t.Errorf("node a's node utilization %v", u)
	}
	if u := got["a"].GetContainersUtilization(); u.GetPmem() != 1024 || u.GetCpu() != 2 {
		t.Errorf("node a's containers utilization %v", u)
	}
	if got["b"].NodeUtilization != nil || got["b"].ContainersUtilization != nil {
		t.Errorf("unmeasured node b reports utilization: %v", got["b"])
	}
}
