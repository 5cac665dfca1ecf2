package amrm

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/ipc"
	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

type fixture struct {
	mgr    *rm.Manager
	tokens *Tokens
	addr   string
}

func start(t *testing.T) *fixture {
	t.Helper()
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tree, _ := quota.NewTree(quota.DefaultQueues)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{Logger: quiet})
	tokens := NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
	srv, err := ipc.NewServer(ipc.Options{Tokens: tokens, Logger: quiet}, New(mgr, Options{}).Service())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		st.Close()
	})
	return &fixture{mgr: mgr, tokens: tokens, addr: ln.Addr().String()}
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, f.addr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: tok.GetIdentifier(), Password: tok.GetPassword()}})
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
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
