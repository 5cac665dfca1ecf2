package ipc

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
)

const echoProtocol = "org.example.EchoProtocolPB"

// echoService answers "echo" with the caller's identity and the request's
// effective user; "fail" returns a typed error; "slow" sleeps first.
func echoService() *Service {
	echo := func(ctx context.Context, req *commonpb.UserInformationProto) (*commonpb.UserInformationProto, error) {
		c := CallerFrom(ctx)
		return &commonpb.UserInformationProto{EffectiveUser: proto.String(req.GetEffectiveUser()),
			RealUser: proto.String(c.User + "/" + string(c.Auth))}, nil
	}
	return &Service{Protocol: echoProtocol, Methods: map[string]Method{
		"echo": Unary(echo),
		"fail": Unary(func(ctx context.Context, req *commonpb.UserInformationProto) (*commonpb.UserInformationProto, error) {
			return nil, Errorf("org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException", "Application with id '%s' doesn't exist in RM.", req.GetEffectiveUser())
		}),
		"slow": Unary(func(ctx context.Context, req *commonpb.UserInformationProto) (*commonpb.UserInformationProto, error) {
			time.Sleep(time.Duration(len(req.GetEffectiveUser())%7) * time.Millisecond)
			return echo(ctx, req)
		}),
		"panic": Unary(func(ctx context.Context, req *commonpb.UserInformationProto) (*commonpb.UserInformationProto, error) {
			panic("boom")
		}),
	}}
}

// testTokens is a secret manager over one HMAC key; identifiers are
// "user:serial" and only serials below 100 are known.
type testTokens struct{ key []byte }

func (tt testTokens) password(id []byte) []byte {
	m := hmac.New(sha1.New, tt.key)
	m.Write(id)
	return m.Sum(nil)
}

func (tt testTokens) RetrievePassword(id []byte) ([]byte, string, error) {
	user, serial, ok := strings.Cut(string(id), ":")
	if !ok || len(serial) > 2 {
		return nil, "", Errorf(ClassInvalidToken, "token %q can't be found in cache", id)
	}
	return tt.password(id), user, nil
}

func startServer(t *testing.T, opts Options) string {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := NewServer(opts, echoService())
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
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return ln.Addr().String()
}

func echoCall(ctx context.Context, c *Client, method, arg string) (*commonpb.UserInformationProto, error) {
	resp := &commonpb.UserInformationProto{}
	err := c.Call(ctx, echoProtocol, method, &commonpb.UserInformationProto{EffectiveUser: proto.String(arg)}, resp)
	return resp, err
}

// mustServe proves the server still answers a well-behaved client.
func mustServe(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, ClientOptions{User: "alice", Protocol: echoProtocol})
	if err != nil {
		t.Fatalf("next client: dial: %v", err)
	}
	defer c.Close()
	resp, err := echoCall(ctx, c, "echo", "x")
	if err != nil || resp.GetRealUser() != "alice/SIMPLE" {
		t.Fatalf("next client: got %v, %v", resp, err)
	}
}

func TestCalls(t *testing.T) {
	addr := startServer(t, Options{Simple: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, ClientOptions{User: "alice", Protocol: echoProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	tests := []struct {
		name, protocol, method string
		wantClass              string
		wantUser               string
	}{
		{name: "echo", protocol: echoProtocol, method: "echo", wantUser: "alice/SIMPLE"},
		{name: "typed error", protocol: echoProtocol, method: "fail", wantClass: "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"},
		{name: "unknown protocol", protocol: "org.example.Nope", method: "echo", wantClass: ClassNoSuchProtocol},
		{name: "unknown method", protocol: echoProtocol, method: "nope", wantClass: ClassNoSuchMethod},
		{name: "handler panic", protocol: echoProtocol, method: "panic", wantClass: ClassRPCServerException},
		{name: "still usable", protocol: echoProtocol, method: "echo", wantUser: "alice/SIMPLE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := &commonpb.UserInformationProto{}
			err := c.Call(ctx, tc.protocol, tc.method, &commonpb.UserInformationProto{EffectiveUser: proto.String("app_1")}, resp)
			var re *RemoteError
			switch {
			case tc.wantClass != "":
				if !errors.As(err, &re) || re.Class != tc.wantClass || re.Fatal {
					t.Fatalf("got %v, want non-fatal %s", err, tc.wantClass)
				}
			case err != nil:
				t.Fatal(err)
			case resp.GetRealUser() != tc.wantUser || resp.GetEffectiveUser() != "app_1":
				t.Fatalf("got %v", resp)
			}
		})
	}
}

func TestPipelinedCalls(t *testing.T) {
	addr := startServer(t, Options{Simple: true, MaxInFlightPerConn: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, ClientOptions{User: "bob", Protocol: echoProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 500)
	for i := range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			arg := fmt.Sprintf("call-%d", i)
			resp, err := echoCall(ctx, c, "slow", arg)
			if err == nil && resp.GetEffectiveUser() != arg {
				err = fmt.Errorf("call %d answered with %q", i, resp.GetEffectiveUser())
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTokenAuth(t *testing.T) {
	tokens := testTokens{key: []byte("master-key")}
	id := []byte("appattempt_1_0001_000001:7")

	tests := []struct {
		name      string
		opts      Options
		token     *Token
		wantUser  string
		wantClass string
	}{
		{name: "good token", opts: Options{Simple: true, Tokens: tokens}, token: &Token{id, tokens.password(id)}, wantUser: "appattempt_1_0001_000001/TOKEN"},
		{name: "token-only server", opts: Options{Tokens: tokens}, token: &Token{id, tokens.password(id)}, wantUser: "appattempt_1_0001_000001/TOKEN"},
		{name: "wrong password", opts: Options{Simple: true, Tokens: tokens}, token: &Token{id, []byte("guess")}, wantClass: ClassSaslException},
		{name: "unknown token", opts: Options{Tokens: tokens}, token: &Token{[]byte("u:12345"), []byte("x")}, wantClass: ClassInvalidToken},
		{name: "simple refused", opts: Options{Tokens: tokens}, wantClass: ClassAccessControlException},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := Dial(ctx, addr, ClientOptions{User: "mallory", Protocol: echoProtocol, Token: tc.token})
			var resp *commonpb.UserInformationProto
			if err == nil {
				defer c.Close()
				resp, err = echoCall(ctx, c, "echo", "x")
			}
			var re *RemoteError
			if tc.wantClass != "" {
				if !errors.As(err, &re) || re.Class != tc.wantClass {
					t.Fatalf("got %v, want %s", err, tc.wantClass)
				}
				if tc.opts.Simple {
					mustServe(t, addr)
				}
				return
			}
			if err != nil || resp.GetRealUser() != tc.wantUser {
				t.Fatalf("got %v, %v; want user %s", resp, err, tc.wantUser)
			}
		})
	}
}

func TestProxyUser(t *testing.T) {
	allowOozie := func(real, effective string, _ net.Addr) error {
		if real != "oozie" {
			return fmt.Errorf("User: %s is not allowed to impersonate %s", real, effective)
		}
		return nil
	}
	tests := []struct {
		name      string
		authorize ProxyAuthorizer
		real      string
		wantErr   bool
	}{
		{name: "refused by default", real: "oozie", wantErr: true},
		{name: "allowed", authorize: allowOozie, real: "oozie"},
		{name: "not allowed", authorize: allowOozie, real: "eve", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, Options{Simple: true, AuthorizeProxy: tc.authorize})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := Dial(ctx, addr, ClientOptions{User: "alice", RealUser: tc.real, Protocol: echoProtocol})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = echoCall(ctx, c, "echo", "x")
			var re *RemoteError
			if tc.wantErr != (err != nil) || tc.wantErr && (!errors.As(err, &re) || re.Class != ClassAuthorizationException) {
				t.Fatalf("got %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// frameOf builds a raw request frame from delimited messages.
func frameOf(t *testing.T, msgs ...proto.Message) []byte {
	b, err := encodeFrame(msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadInput(t *testing.T) {
	hdr := func(callID int32) *commonpb.RpcRequestHeaderProto {
		return &commonpb.RpcRequestHeaderProto{RpcKind: commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(callID), ClientId: []byte("0123456789abcdef")}
	}
	simpleCtx := frameOf(t, hdr(-3), &commonpb.IpcConnectionContextProto{UserInfo: &commonpb.UserInformationProto{EffectiveUser: proto.String("u")}})
	lengthPrefix := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	preNone := []byte("hrpc\x09\x00\x00")
	preSASL := []byte("hrpc\x09\x00\xdf")

	tests := []struct {
		name      string
		send      []byte
		wantClass string // expected in the server's reply, "" for a silent close
	}{
		{name: "random bytes", send: []byte("\x17\x03\x01\x00\xa5random-tls-ish-garbage")},
		{name: "http on ipc port", send: []byte("GET / HTTP/1.1\r\n\r\n")},
		{name: "old version", send: []byte("hrpc\x07\x00\x00"), wantClass: ClassVersionMismatch},
		{name: "unknown auth protocol", send: []byte("hrpc\x09\x00\x51"), wantClass: ClassIOException},
		{name: "2 GiB length prefix", send: cat(preNone, lengthPrefix(0x7fffffff)), wantClass: ClassIOException},
		{name: "negative length prefix", send: cat(preNone, lengthPrefix(0xfffffff0)), wantClass: ClassIOException},
		{name: "truncated frame", send: cat(preNone, lengthPrefix(100), []byte("short"))},
		{name: "garbage header", send: cat(preNone, lengthPrefix(6), []byte{0x05, 0xff, 0xff, 0xff, 0xff, 0xff}), wantClass: ClassRPCServerException},
		{name: "call before context", send: cat(preNone, frameOf(t, hdr(0))), wantClass: ClassRPCServerException},
		{name: "bad call id", send: cat(preNone, simpleCtx, frameOf(t, hdr(-7))), wantClass: ClassRPCServerException},
		{name: "writable rpc kind", send: cat(preNone, simpleCtx, frameOf(t, &commonpb.RpcRequestHeaderProto{RpcKind: commonpb.RpcKindProto_RPC_WRITABLE.Enum(), CallId: proto.Int32(1), ClientId: []byte("x")})), wantClass: ClassRPCServerException},
		{name: "undecodable request", send: cat(preNone, simpleCtx, lengthPrefix(0), []byte{}), wantClass: ClassRPCServerException},
		{name: "unsupported SASL mechanism", send: cat(preSASL, frameOf(t, hdr(-33), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(),
			Auths: []*commonpb.RpcSaslProto_SaslAuth{{Method: proto.String("KERBEROS"), Mechanism: proto.String("GSSAPI")}}})), wantClass: ClassAccessControlException},
		{name: "SASL token without negotiate", send: cat(preSASL, frameOf(t, hdr(-33), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(), Token: []byte("x"),
			Auths: []*commonpb.RpcSaslProto_SaslAuth{{Method: proto.String("TOKEN"), Mechanism: proto.String("DIGEST-MD5")}}})), wantClass: ClassSaslException},
		{name: "non-SASL frame in SASL", send: cat(preSASL, simpleCtx), wantClass: ClassAccessControlException},
	}
	addr := startServer(t, Options{Simple: true, Tokens: testTokens{key: []byte("k")}, MaxFrameSize: 1 << 20, HandshakeTimeout: 2 * time.Second})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := nc.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tcp, ok := nc.(*net.TCPConn); ok && tc.name == "truncated frame" {
				tcp.CloseWrite()
			}
			reply, err := io.ReadAll(nc) // the server must close the connection
			if err != nil {
				t.Fatalf("server did not close the connection: %v", err)
			}
			if tc.wantClass != "" && !bytes.Contains(reply, []byte(tc.wantClass)) {
				t.Fatalf("reply %q lacks %s", reply, tc.wantClass)
			}
			mustServe(t, addr)
		})
	}
}

func TestIdleTimeout(t *testing.T) {
	addr := startServer(t, Options{Simple: true, IdleTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	c, err := Dial(ctx, addr, ClientOptions{User: "alice", Protocol: echoProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		t.Fatal("idle connection was not closed")
	}
	mustServe(t, addr)
}

// TestConnectionHeap bounds what an open connection holds on the heap
// before any call, the state of most of 1,000 AMs' connections between
// heartbeats (at 1,000 connections a 16 KiB read buffer each is 16 MB).
func TestConnectionHeap(t *testing.T) {
	s, err := NewServer(Options{Simple: true}, echoService())
	if err != nil {
		t.Fatal(err)
	}
	const n, most = 500, 8 << 10
	conns, peers := make([]*conn, n), make([]net.Conn, n)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range conns {
		var nc net.Conn
		nc, peers[i] = net.Pipe()
		conns[i] = newConn(s, nc)
	}
	per := (heap() - before) / n
	runtime.KeepAlive(conns)
	runtime.KeepAlive(peers)
	if per > most {
		t.Errorf("a connection holds %d bytes, want at most %d", per, most)
	}
	t.Logf("%d bytes per connection", per)
}
