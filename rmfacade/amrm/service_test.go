package amrm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

type fixture struct {
	mgr    *rm.Manager
	tokens *Tokens
	addr   string
	alloc  *allocator.Allocator
	keys   *nmtokens.Keys
	svc    *Service
	store  *state.Store
	dir    string
}

func start(t *testing.T) *fixture { return startWith(t, false) }

// startWith starts the service, with an allocator and the NM keys when
// granting is on.
func startWith(t *testing.T, granting bool) *fixture {
	return startIn(t, t.TempDir(), granting, Options{})
}

// startIn starts an RM incarnation over the store in dir: what a restart
// starts again (the master keys are the same, as the server keeps them in
// its data dir).
func startIn(t *testing.T, dir string, granting bool, opts Options) *fixture {
	t.Helper()
	st, err := state.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := quota.NewTree(quota.DefaultQueues)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{Logger: quiet, Now: opts.Now})
	if _, err := mgr.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	tokens := NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
	if granting {
		opts.Allocator, opts.Keys = allocator.New(mgr, allocator.Options{Logger: quiet}), nmtokens.New([]byte("fedcba9876543210fedcba9876543210"))
	}
	t.Cleanup(func() { st.Close() }) // after the server's shutdown
	svc := New(mgr, opts)
	addr := ipctest.Serve(t, ipc.Options{Tokens: tokens}, svc.Service())
	return &fixture{mgr: mgr, tokens: tokens, addr: addr, alloc: opts.Allocator, keys: opts.Keys, svc: svc, store: st, dir: dir}
}

// submit admits an unmanaged application and returns its first attempt.
func (f *fixture) submit(t *testing.T) records.AttemptID {
	t.Helper()
	id := f.mgr.NewApplicationID()
	if err := f.mgr.Submit(context.Background(), rm.Submission{ID: id, User: "alice", UnmanagedAM: true}); err != nil {
		t.Fatal(err)
	}
	return records.AttemptID{App: id, ID: 1}
}

func (f *fixture) dial(t *testing.T, attempt records.AttemptID) (*ipc.Client, error) {
	t.Helper()
	tok, err := f.tokens.Issue(attempt)
	if err != nil {
		t.Fatal(err)
	}
	return ipctest.Dial(t, f.addr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: tok.GetIdentifier(), Password: tok.GetPassword()}})
}

func call(c *ipc.Client, method string, req, resp proto.Message) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Call(ctx, Protocol, method, req, resp)
}

func class(err error) string {
	var re *ipc.RemoteError
	if errors.As(err, &re) {
		return re.Class
	}
	return ""
}

func allocate(c *ipc.Client, responseID int32) (*yarnpb.AllocateResponseProto, error) {
	resp := &yarnpb.AllocateResponseProto{}
	return resp, call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(responseID)}, resp)
}

func TestAMLifecycle(t *testing.T) {
	f := start(t)
	attempt := f.submit(t)
	c, err := f.dial(t, attempt)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		do    func() error
		class string
	}{
		{"allocate before register", func() error { _, err := allocate(c, 0); return err }, yarnerr.ClassAMNotRegistered},
		{"finish before register", func() error {
			return call(c, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{}, &yarnpb.FinishApplicationMasterResponseProto{})
		}, yarnerr.ClassAMNotRegistered},
		{"register", func() error {
			return call(c, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h"), RpcPort: proto.Int32(1)},
				&yarnpb.RegisterApplicationMasterResponseProto{})
		}, ""},
		{"register twice", func() error {
			return call(c, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{}, &yarnpb.RegisterApplicationMasterResponseProto{})
		}, yarnerr.ClassInvalidApplicationMasterRequest},
		{"allocate 0", func() error {
			r, err := allocate(c, 0)
			if err == nil && r.GetResponseId() != 1 {
				t.Errorf("response id %d, want 1", r.GetResponseId())
			}
			return err
		}, ""},
		{"retry of 0 gets the same answer", func() error {
			r, err := allocate(c, 0)
			if err == nil && r.GetResponseId() != 1 {
				t.Errorf("retried response id %d, want 1", r.GetResponseId())
			}
			return err
		}, ""},
		{"allocate 1", func() error { _, err := allocate(c, 1); return err }, ""},
		{"stale response id", func() error { _, err := allocate(c, 7); return err }, yarnerr.ClassInvalidApplicationMasterRequest},
		{"finish", func() error {
			resp := &yarnpb.FinishApplicationMasterResponseProto{}
			err := call(c, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
				FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_FAILED.Enum(), Diagnostics: proto.String("boom")}, resp)
			if err == nil && !resp.GetIsUnregistered() {
				t.Error("not unregistered")
			}
			return err
		}, ""},
		{"allocate after finish", func() error { _, err := allocate(c, 2); return err }, yarnerr.ClassApplicationAttemptNotFound},
	}
	for _, s := range steps {
		if got := class(s.do()); got != s.class {
			t.Fatalf("%s: got %q, want %q", s.name, got, s.class)
		}
	}
	a, _ := f.mgr.Application(attempt.App)
	if a.State != records.AppFinished || a.FinalStatus != records.FinalFailed || a.Diagnostics != "boom" {
		t.Fatalf("application after finish: %+v", a)
	}
	// A new connection with the finished attempt's token is refused at SASL.
	if _, err := f.dial(t, attempt); class(err) != ipc.ClassInvalidToken {
		t.Fatalf("finished attempt's token: %v", err)
	}
}

func TestTokensAreRequired(t *testing.T) {
	f := start(t)
	f.submit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, f.addr, ipc.ClientOptions{User: "alice", Protocol: Protocol})
	if err == nil {
		defer c.Close()
		_, err = allocate(c, 0)
	}
	if class(err) != ipc.ClassAccessControlException {
		t.Fatalf("SIMPLE on the AM port: %v", err)
	}
	// A token for an attempt that never existed.
	if _, err := f.dial(t, records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 1, ID: 9}, ID: 1}); class(err) != ipc.ClassInvalidToken {
		t.Fatalf("unknown attempt's token: %v", err)
	}
}

// TestGrantsContainers: asks become containers on a node with room, with
// container tokens the node accepts and one NMToken per node; a release
// comes back as a completed status; asks beyond the room stay pending.
// askFor is an ask of n containers of mb megabytes and one vcore, anywhere.
func askFor(n int32, mb int64) *yarnpb.ResourceRequestProto {
	return &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(0)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n)}
}

// grantThree registers an AM on a cluster of one node with room for three
// of its four asks, runs a cycle, and returns the response of allocate 1,
// which grants the three.
func (f *fixture) grantThree(t *testing.T) (records.AttemptID, *ipc.Client, *yarnpb.AllocateResponseProto) {
	t.Helper()
	if err := f.mgr.PutNode(&records.Node{ID: "node-a:8041", Host: "node-a", Port: 8041, HTTPAddress: "node-a:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 4096, VCores: 4}, Occupied: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	attempt, c := f.registeredAM(t)
	resp := &yarnpb.AllocateResponseProto{}
	// 4 asks of 700 MB round up to 1024: 3 fit beside the 1024 occupied.
	if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*yarnpb.ResourceRequestProto{askFor(4, 700)}}, resp); err != nil {
		t.Fatal(err)
	}
	if n, err := f.alloc.Cycle(context.Background()); err != nil || n != 3 {
		t.Fatalf("cycle granted %d, %v; want 3", n, err)
	}
	if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(1)}, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.GetAllocatedContainers()) != 3 || len(resp.GetNmTokens()) != 1 {
		t.Fatalf("got %d containers and %d NMTokens, want 3 and 1", len(resp.GetAllocatedContainers()), len(resp.GetNmTokens()))
	}
	return attempt, c, resp
}

func TestGrantsContainers(t *testing.T) {
	f := startWith(t, true)
	ctx := context.Background()
	attempt, c, resp := f.grantThree(t)
	ask := askFor
	tiers := map[records.Tier]int{}
	for _, ct := range resp.GetAllocatedContainers() {
		if ct.GetResource().GetMemory() != 1024 || ct.GetNodeId().GetHost() != "node-a" {
			t.Errorf("container %v", ct)
		}
		g, err := f.keys.VerifyContainerToken(ct.GetContainerToken(), "node-a:8041")
		if err != nil {
			t.Fatal(err)
		}
		if g.Container != wire.ContainerIDOf(ct.GetId()) || g.User != "alice" {
			t.Errorf("token grants %+v", g)
		}
		if _, err := f.keys.VerifyContainerToken(ct.GetContainerToken(), "node-b:8041"); class(err) != ipc.ClassInvalidToken {
			t.Errorf("token accepted on another node: %v", err)
		}
		tiers[g.Tier]++
	}
	if tiers[records.TierMedium] != 1 || tiers[records.TierLow] != 2 {
		t.Errorf("tiers %v, want one medium (the job's minimum) and two low", tiers)
	}
	if n, _ := f.alloc.Outstanding(attempt); n != 1 {
		t.Errorf("pending %d, want 1", n)
	}
	// Released: completed with ABORTED on the next allocate, once.
	released := resp.GetAllocatedContainers()[0].GetId()
	if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(2), Release: []*yarnpb.ContainerIdProto{released}}, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.GetCompletedContainerStatuses()) != 1 || resp.GetCompletedContainerStatuses()[0].GetExitStatus() != records.ExitAborted {
		t.Fatalf("completed %v", resp.GetCompletedContainerStatuses())
	}
	if len(resp.GetAllocatedContainers()) != 0 {
		t.Errorf("containers granted twice: %v", resp.GetAllocatedContainers())
	}
	// The released container's room goes to the pending ask.
	if n, err := f.alloc.Cycle(ctx); err != nil || n != 1 {
		t.Fatalf("cycle granted %d, %v; want 1", n, err)
	}
	// Over the maximum allocation: InvalidResourceRequestException.
	err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(3), Ask: []*yarnpb.ResourceRequestProto{ask(1, 1<<20)}}, resp)
	if class(err) != yarnerr.ClassInvalidResourceRequest {
		t.Errorf("oversized ask: %v", err)
	}
}

// TestRetryGetsTheGrantsAgain: a retry of the request whose response
// granted containers (the AM lost the response) gets them again, with
// NMTokens and container tokens that verify, and the session keeps the
// grants' ids, not the response's tokens (the last responses of 1,000
// AMs holding 100 containers each are about 140 MB).
func TestRetryGetsTheGrantsAgain(t *testing.T) {
	f := startWith(t, true)
	attempt, c, first := f.grantThree(t)
	last := f.svc.session(attempt).last
	if n := len(last.head.GetAllocatedContainers()) + len(last.head.GetNmTokens()); n != 0 || len(last.allocated) != 3 || len(last.nmTokenNodes) != 1 {
		t.Errorf("session keeps %d grants in the response, %d container ids and %d NMToken nodes; want 0, 3 and 1",
			n, len(last.allocated), len(last.nmTokenNodes))
	}
	again := &yarnpb.AllocateResponseProto{}
	if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(1)}, again); err != nil {
		t.Fatal(err)
	}
	if again.GetResponseId() != first.GetResponseId() || again.GetNumClusterNodes() != first.GetNumClusterNodes() ||
		!proto.Equal(again.GetLimit(), first.GetLimit()) {
		t.Errorf("retried response %v, want the first's id, limit and node count: %v", again, first)
	}
	if len(again.GetAllocatedContainers()) != 3 {
		t.Fatalf("retry got %d containers, want 3", len(again.GetAllocatedContainers()))
	}
	for i, ct := range again.GetAllocatedContainers() {
		want := first.GetAllocatedContainers()[i]
		if !proto.Equal(ct.GetId(), want.GetId()) || !proto.Equal(ct.GetNodeId(), want.GetNodeId()) ||
			!proto.Equal(ct.GetResource(), want.GetResource()) || ct.GetNodeHttpAddress() != want.GetNodeHttpAddress() {
			t.Errorf("container %d: %v, want %v", i, ct, want)
		}
		g, err := f.keys.VerifyContainerToken(ct.GetContainerToken(), "node-a:8041")
		if err != nil {
			t.Fatal(err)
		}
		if g.Container != wire.ContainerIDOf(want.GetId()) || g.User != "alice" {
			t.Errorf("token grants %+v", g)
		}
	}
	// An NMToken has no expiry here: signed again, it is the same token.
	if len(again.GetNmTokens()) != 1 || !proto.Equal(again.GetNmTokens()[0], first.GetNmTokens()[0]) {
		t.Errorf("retry's NMTokens %v, want %v", again.GetNmTokens(), first.GetNmTokens())
	}
}

// TestFinishWithAStatusOutsideTheEnum: a final status the enum does not
// have is UNDEFINED, as Java's protobuf leaves the field unset (a
// recovered "slice bounds out of range" before).
func TestFinishWithAStatusOutsideTheEnum(t *testing.T) {
	f := start(t)
	attempt, c := f.registeredAM(t)
	if err := call(c, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto(77).Enum()},
		&yarnpb.FinishApplicationMasterResponseProto{}); err != nil {
		t.Fatal(err)
	}
	if a, _ := f.mgr.Application(attempt.App); a.FinalStatus != records.FinalUndefined {
		t.Errorf("final status %q", a.FinalStatus)
	}
}
