package ipc

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
)

// FuzzReadFrame checks that the framing and header parsers reject or accept
// any input without panicking or allocating beyond the frame limit.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 2, 0x18, 1})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		frame, err := readFrame(bufio.NewReader(bytes.NewReader(b)), 1<<16)
		if err != nil {
			return
		}
		hdr := &commonpb.RpcRequestHeaderProto{}
		rest, err := consumeDelimited(frame, hdr)
		if err != nil {
			return
		}
		consumeDelimited(rest, &commonpb.RequestHeaderProto{})
	})
}

// FuzzConnection feeds arbitrary bytes to a server connection after each
// kind of connection header: it must end the connection (or keep reading)
// without panicking, and never hang past its deadlines.
func FuzzConnection(f *testing.F) {
	hdr := func(id int32) *commonpb.RpcRequestHeaderProto {
		return &commonpb.RpcRequestHeaderProto{RpcKind: commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(id), ClientId: []byte("0123456789abcdef")}
	}
	frame := func(msgs ...proto.Message) []byte {
		b, err := encodeFrame(msgs...)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	context := frame(hdr(-3), &commonpb.IpcConnectionContextProto{UserInfo: &commonpb.UserInformationProto{EffectiveUser: proto.String("u")}, Protocol: proto.String(echoProtocol)})
	call := frame(hdr(0), &commonpb.RequestHeaderProto{MethodName: proto.String("echo"), DeclaringClassProtocolName: proto.String(echoProtocol),
		ClientProtocolVersion: proto.Uint64(1)}, &commonpb.UserInformationProto{EffectiveUser: proto.String("x")})
	f.Add(byte(0), []byte{})
	f.Add(byte(0), append(append([]byte{}, context...), call...))
	f.Add(byte(0xdf), frame(hdr(-33), &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()}))
	f.Fuzz(func(t *testing.T, auth byte, b []byte) {
		srv, err := NewServer(Options{Simple: true, Tokens: testTokens{key: []byte("k")}, HandshakeTimeout: time.Second,
			IdleTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, echoService())
		if err != nil {
			t.Fatal(err)
		}
		client, server := net.Pipe()
		c := newConn(srv, server)
		done := make(chan struct{})
		go func() { c.serve(); close(done) }()
		go io.Copy(io.Discard, client)
		go func() {
			client.SetWriteDeadline(time.Now().Add(time.Second))
			client.Write(append([]byte{'h', 'r', 'p', 'c', CurrentVersion, 0, auth}, b...))
			client.Close()
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("connection did not end")
		}
	})
}
