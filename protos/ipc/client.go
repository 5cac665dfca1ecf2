package ipc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	"github.com/weft-sh/weft/protos/ipc/sasl"
)

// Token is a Hadoop token's identifier and password, as a client presents
// it for TOKEN authentication.
type Token struct {
	Identifier []byte
	Password   []byte
}

// ClientOptions configures a Client connection.
type ClientOptions struct {
	// User is the effective user sent in the connection context (SIMPLE).
	User string
	// RealUser, when set, asks to impersonate User as RealUser.
	RealUser string
	// Protocol is named in the connection context.
	Protocol string
	// Token, when set, authenticates with TOKEN/DIGEST-MD5 instead of SIMPLE.
	Token *Token
	// ProtocolVersion goes in every request header (Hadoop's PB protocols use 1).
	ProtocolVersion uint64
}

// Client is one Hadoop IPC connection that multiplexes concurrent calls,
// as Java's org.apache.hadoop.ipc.Client does.
type Client struct {
	nc       net.Conn
	opts     ClientOptions
	clientID []byte

	wmu    sync.Mutex
	mu     sync.Mutex
	nextID int32
	calls  map[int32]chan clientResult
	err    error
	done   chan struct{}
}

type clientResult struct {
	hdr  *commonpb.RpcResponseHeaderProto
	body []byte
}

// Dial connects to addr and authenticates.
func Dial(ctx context.Context, addr string, opts ClientOptions) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ipc: dial %s: %w", addr, err)
	}
	c, err := NewClient(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// NewClient runs the connection setup over an established connection.
func NewClient(ctx context.Context, nc net.Conn, opts ClientOptions) (*Client, error) {
	if opts.ProtocolVersion == 0 {
		opts.ProtocolVersion = 1
	}
	c := &Client{nc: nc, opts: opts, clientID: make([]byte, 16), calls: map[int32]chan clientResult{}, done: make(chan struct{})}
	rand.Read(c.clientID)
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	br := bufio.NewReader(nc)
	if err := c.setup(br); err != nil {
		return nil, err
	}
	go c.readLoop(br)
	return c, nil
}

func (c *Client) setup(br *bufio.Reader) error {
	auth := byte(authProtocolNone)
	if c.opts.Token != nil {
		auth = authProtocolSASL
	}
	if _, err := c.nc.Write([]byte{'h', 'r', 'p', 'c', CurrentVersion, 0, auth}); err != nil {
		return fmt.Errorf("ipc: write connection header: %w", err)
	}
	userInfo := &commonpb.UserInformationProto{EffectiveUser: proto.String(c.opts.User)}
	if c.opts.RealUser != "" {
		userInfo.RealUser = proto.String(c.opts.RealUser)
	}
	if c.opts.Token != nil {
		if err := c.authenticateToken(br); err != nil {
			return err
		}
		userInfo = nil // the token names the user
	}
	ctxFrame, err := encodeFrame(c.header(callIDConnectionContext),
		&commonpb.IpcConnectionContextProto{UserInfo: userInfo, Protocol: proto.String(c.opts.Protocol)})
	if err != nil {
		return err
	}
	_, err = c.nc.Write(ctxFrame)
	return err
}

func (c *Client) authenticateToken(br *bufio.Reader) error {
	exchange := func(msg *commonpb.RpcSaslProto) (*commonpb.RpcSaslProto, error) {
		frame, err := encodeFrame(c.header(callIDSASL), msg)
		if err != nil {
			return nil, err
		}
		if _, err := c.nc.Write(frame); err != nil {
			return nil, err
		}
		hdr, body, err := readResponse(br)
		if err != nil {
			return nil, err
		}
		if hdr.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
			return nil, remoteErrorOf(hdr)
		}
		reply := &commonpb.RpcSaslProto{}
		if _, err := consumeDelimited(body, reply); err != nil {
			return nil, err
		}
		return reply, nil
	}
	neg, err := exchange(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum()})
	if err != nil {
		return fmt.Errorf("ipc: SASL negotiate: %w", err)
	}
	var chosen *commonpb.RpcSaslProto_SaslAuth
	for _, a := range neg.GetAuths() {
		if a.GetMethod() == string(AuthToken) && a.GetMechanism() == sasl.Mechanism {
			chosen = a
			break
		}
	}
	if chosen == nil {
		return errors.New("ipc: server does not offer TOKEN/DIGEST-MD5")
	}
	dc := sasl.NewClient(base64.StdEncoding.EncodeToString(c.opts.Token.Identifier),
		[]byte(base64.StdEncoding.EncodeToString(c.opts.Token.Password)), chosen.GetProtocol(), chosen.GetServerId())
	resp, err := dc.Respond(chosen.GetChallenge())
	if err != nil {
		return err
	}
	initiate := proto.Clone(chosen).(*commonpb.RpcSaslProto_SaslAuth)
	initiate.Challenge = nil
	done, err := exchange(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_INITIATE.Enum(), Token: resp,
		Auths: []*commonpb.RpcSaslProto_SaslAuth{initiate}})
	if err != nil {
		return fmt.Errorf("ipc: SASL initiate: %w", err)
	}
	if done.GetState() != commonpb.RpcSaslProto_SUCCESS {
		return fmt.Errorf("ipc: SASL: unexpected state %v", done.GetState())
	}
	return dc.Verify(done.GetToken())
}

func (c *Client) header(callID int32) *commonpb.RpcRequestHeaderProto {
	return &commonpb.RpcRequestHeaderProto{
		RpcKind:  commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(),
		RpcOp:    commonpb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
		CallId:   proto.Int32(callID),
		ClientId: c.clientID,
	}
}

// Call invokes protocol.method with req and unmarshals the result into resp.
// Remote failures are returned as *RemoteError.
func (c *Client) Call(ctx context.Context, protocol, method string, req, resp proto.Message) error {
	ch := make(chan clientResult, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return c.err
	}
	id := c.nextID
	c.nextID++
	c.calls[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()

	frame, err := encodeFrame(c.header(id), &commonpb.RequestHeaderProto{
		MethodName: proto.String(method), DeclaringClassProtocolName: proto.String(protocol),
		ClientProtocolVersion: proto.Uint64(c.opts.ProtocolVersion),
	}, req)
	if err != nil {
		return fmt.Errorf("ipc: encode %s: %w", method, err)
	}
	c.wmu.Lock()
	_, err = c.nc.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		// A server that refused the connection wrote why before closing it;
		// that reason beats the broken pipe.
		<-c.done
		return fmt.Errorf("ipc: send %s: %w", method, c.err)
	}
	select {
	case r := <-ch:
		if r.hdr.GetStatus() != commonpb.RpcResponseHeaderProto_SUCCESS {
			return remoteErrorOf(r.hdr)
		}
		if _, err := consumeDelimited(r.body, resp); err != nil {
			return fmt.Errorf("ipc: decode %s response: %w", method, err)
		}
		return nil
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close ends the connection.
func (c *Client) Close() error { return c.nc.Close() }

func (c *Client) readLoop(br *bufio.Reader) {
	var err error
	for {
		var hdr *commonpb.RpcResponseHeaderProto
		var body []byte
		if hdr, body, err = readResponse(br); err != nil {
			break
		}
		c.mu.Lock()
		ch, ok := c.calls[int32(hdr.GetCallId())]
		c.mu.Unlock()
		if ok {
			ch <- clientResult{hdr: hdr, body: body}
		} else if hdr.GetStatus() == commonpb.RpcResponseHeaderProto_FATAL {
			err = remoteErrorOf(hdr)
			break
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("ipc: connection closed: %w", err)
	c.mu.Unlock()
	close(c.done)
	c.nc.Close()
}

func readResponse(br *bufio.Reader) (*commonpb.RpcResponseHeaderProto, []byte, error) {
	frame, err := readFrame(br, DefaultMaxFrameSize)
	if err != nil {
		return nil, nil, err
	}
	hdr := &commonpb.RpcResponseHeaderProto{}
	rest, err := consumeDelimited(frame, hdr)
	if err != nil {
		return nil, nil, err
	}
	return hdr, rest, nil
}

func remoteErrorOf(hdr *commonpb.RpcResponseHeaderProto) *RemoteError {
	return &RemoteError{Class: hdr.GetExceptionClassName(), Message: hdr.GetErrorMsg(), Code: hdr.GetErrorDetail(),
		Fatal: hdr.GetStatus() == commonpb.RpcResponseHeaderProto_FATAL}
}
