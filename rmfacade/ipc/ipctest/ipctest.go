// Package ipctest serves IPC services on loopback for tests of the
// protocols built on package ipc.
package ipctest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/weft-sh/weft/rmfacade/ipc"
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
