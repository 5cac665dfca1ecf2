// Package ipctest serves IPC services on loopback for tests of the
// protocols built on package ipc.
package ipctest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/weft-sh/weft/protos/ipc"
)

// Quiet is a logger that discards, for servers under test.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Serve starts a server with services on a free loopback port, shut down
// when the test ends, and returns its address. A nil Logger is Quiet.
func Serve(t testing.TB, opts ipc.Options, services ...*ipc.Service) string {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = Quiet
	}
	srv, err := ipc.NewServer(opts, services...)
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
	})
	return ln.Addr().String()
}

// Dial connects to addr with opts, closing the client when the test ends.
// The error is returned for tests of refused connections.
func Dial(t testing.TB, addr string, opts ipc.ClientOptions) (*ipc.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, addr, opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// FuzzMethods fuzzes every method of a service as the server would call
// it: the fuzzer's bytes are decoded into the method's request type and
// handed to its real handler, with one of callers as the call's caller.
// The first argument picks the method and the caller; seeds are each
// method's empty request and, from seeds, encoded requests by method name.
// newService builds the service over fresh state; it is built again every
// freshEvery executions, so state the calls pile up (applications, pods)
// does not slow the target down as it runs. A handler must answer or
// fail: a panic or a call running past 10 s fails the target.
func FuzzMethods(f *testing.F, newService func() *ipc.Service, callers []*ipc.Caller, seeds map[string][]proto.Message) {
	const freshEvery = 1000
	svc := newService()
	names := make([]string, 0, len(svc.Methods))
	for name := range svc.Methods {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		f.Add(uint16(i), []byte{})
		for _, m := range seeds[name] {
			b, err := proto.Marshal(m)
			if err != nil {
				f.Fatal(err)
			}
			for c := range callers {
				f.Add(uint16(c*len(names)+i), b)
			}
		}
	}
	execs := 0
	f.Fuzz(func(t *testing.T, pick uint16, payload []byte) {
		if execs++; execs%freshEvery == 0 {
			svc = newService()
		}
		name := names[int(pick)%len(names)]
		m := svc.Methods[name]
		req := m.NewRequest()
		if err := proto.Unmarshal(payload, req); err != nil {
			return // the server answers a frame it cannot decode before any handler
		}
		ctx, cancel := context.WithTimeout(ipc.WithCaller(context.Background(), callers[int(pick)/len(names)%len(callers)]), 10*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.Handle(ctx, req)
		}()
		timer := time.NewTimer(10 * time.Second)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			t.Fatalf("%s did not answer in 10 s", name)
		}
	})
}
