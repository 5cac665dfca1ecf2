package ipc

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	"github.com/weft-sh/weft/protos/ipc/sasl"
)

// saslServerID and saslProtocol are what Hadoop's SaslRpcServer uses for
// token authentication: the digest-uri becomes "/default".
const (
	saslProtocol = ""
	saslServerID = "default"
)

// httpReply answers an HTTP request sent to the IPC port, as Hadoop does.
const httpReply = "HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\n\r\n" +
	"It looks like you are making an HTTP request to a Hadoop IPC port. " +
	"This is not the correct port for the web interface on this daemon.\r\n"

type conn struct {
	srv *Server
	nc  net.Conn
	br  *bufio.Reader
	log interface {
		Debug(string, ...any)
		Warn(string, ...any)
	}

	// caller is fixed once the connection context is read.
	caller Caller

	ctx    context.Context
	cancel context.CancelFunc

	wmu      sync.Mutex
	inflight atomic.Int32
	calls    sync.WaitGroup
	sem      chan struct{}
	closing  atomic.Bool
}

// connReadBuffer is the size of a connection's read buffer, held for as
// long as the connection is open, calls or none: a heartbeat's request is
// a few hundred bytes, and readFrame reads a larger frame through it
// (bufio reads straight into a request larger than its buffer). At 16
// KiB, the 1,000 AMs of a large cluster would hold 16 MB in buffers.
const connReadBuffer = 4 << 10

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		srv: s, nc: nc, br: bufio.NewReaderSize(nc, connReadBuffer),
		log:    s.opts.Logger.With("remote", nc.RemoteAddr().String()),
		caller: Caller{RemoteAddr: nc.RemoteAddr()},
		ctx:    ctx, cancel: cancel,
		sem: make(chan struct{}, s.opts.MaxInFlightPerConn),
	}
}

// beginClose asks the connection to stop reading; calls in flight finish.
func (c *conn) beginClose() {
	c.closing.Store(true)
	c.nc.SetReadDeadline(time.Now())
}

func (c *conn) serve() {
	defer func() {
		c.calls.Wait()
		c.cancel()
		c.nc.Close()
	}()
	if err := c.handshake(); err != nil {
		c.fail(err)
		return
	}
	c.nc.SetReadDeadline(time.Time{})
	if err := c.readCalls(); err != nil {
		c.fail(err)
	}
}

// fail reports a connection-ending error to the client where the protocol
// allows, and logs it.
func (c *conn) fail(err error) {
	var re *RemoteError
	if errors.As(err, &re) {
		c.log.Debug("closing connection", "class", re.Class, "err", re.Message)
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || c.closing.Load() {
		return
	}
	c.log.Debug("connection error", "err", err)
}

// handshake reads the connection header, authenticates, and reads the
// connection context.
func (c *conn) handshake() error {
	c.nc.SetDeadline(time.Now().Add(c.srv.opts.HandshakeTimeout))
	defer c.nc.SetWriteDeadline(time.Time{})
	p, isHTTP, err := readPreamble(c.br)
	if err != nil {
		return err
	}
	if isHTTP {
		io.WriteString(c.nc, httpReply)
		return errors.New("HTTP request on the IPC port")
	}
	if p.version != CurrentVersion {
		return c.sendFatal(callIDUnknown, fatalf(commonpb.RpcResponseHeaderProto_FATAL_VERSION_MISMATCH, ClassVersionMismatch,
			"Server IPC version %d cannot communicate with client version %d", CurrentVersion, p.version))
	}
	switch p.authProtocol {
	case authProtocolNone:
		if !c.srv.opts.Simple {
			return c.sendFatal(callIDSASL, fatalf(commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, ClassAccessControlException,
				"SIMPLE authentication is not enabled.  Available:[TOKEN]"))
		}
		c.caller.Auth = AuthSimple
	case authProtocolSASL:
		if err := c.negotiateSASL(); err != nil {
			return err
		}
	default:
		return c.sendFatal(callIDSASL, fatalf(commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, ClassIOException,
			"Unknown auth protocol: %d", int8(p.authProtocol)))
	}
	return c.readConnectionContext()
}

// readHeaderFrame reads a frame and its RpcRequestHeaderProto. A frame that
// cannot be parsed is fatal: its boundaries may not be trusted any more.
func (c *conn) readHeaderFrame() (*commonpb.RpcRequestHeaderProto, []byte, error) {
	frame, err := readFrame(c.br, c.srv.opts.MaxFrameSize)
	if err != nil {
		if errors.Is(err, errFrameTooLarge) {
			return nil, nil, c.sendFatal(callIDInvalid, fatalf(commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, ClassIOException, "%v", err))
		}
		return nil, nil, err
	}
	hdr := &commonpb.RpcRequestHeaderProto{}
	rest, err := consumeDelimited(frame, hdr)
	if err != nil {
		return nil, nil, c.sendFatal(callIDInvalid, fatalf(commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, ClassRPCServerException,
			"Invalid RPC header: %v", err))
	}
	return hdr, rest, nil
}

func (c *conn) negotiateSASL() error {
	opts := &c.srv.opts
	var digest *sasl.Server
	var tokenUser string
	var tokenID []byte
	lookup := func(username string) ([]byte, error) {
		id, err := base64.StdEncoding.DecodeString(username)
		if err != nil {
			return nil, Errorf(ClassInvalidToken, "token identifier is not base64: %v", err)
		}
		password, user, err := opts.Tokens.RetrievePassword(id)
		if err != nil {
			return nil, err
		}
		tokenUser, tokenID = user, id
		return []byte(base64.StdEncoding.EncodeToString(password)), nil
	}
	unauthorized := func(class, format string, args ...any) error {
		return c.sendFatal(callIDSASL, fatalf(commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, class, format, args...))
	}
	sentNegotiate := false
	for {
		hdr, rest, err := c.readHeaderFrame()
		if err != nil {
			return err
		}
		if hdr.GetCallId() != callIDSASL {
			return unauthorized(ClassAccessControlException, "SASL message expected, got call id %d", hdr.GetCallId())
		}
		msg := &commonpb.RpcSaslProto{}
		if _, err := consumeDelimited(rest, msg); err != nil {
			return unauthorized(ClassSaslException, "malformed SASL message: %v", err)
		}
		switch msg.GetState() {
		case commonpb.RpcSaslProto_NEGOTIATE:
			if sentNegotiate {
				return unauthorized(ClassAccessControlException, "Client already attempted negotiation")
			}
			sentNegotiate = true
			if opts.Tokens == nil {
				// A SIMPLE-only server answers SUCCESS, which the client
				// takes as a switch to SIMPLE.
				c.caller.Auth = AuthSimple
				return c.sendSASL(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum()})
			}
			if digest, err = sasl.NewServer(saslProtocol, saslServerID, lookup); err != nil {
				return err
			}
			// TOKEN goes first and carries the initial challenge, saving the
			// client a round trip.
			reply := &commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_NEGOTIATE.Enum(), Auths: []*commonpb.RpcSaslProto_SaslAuth{{
				Method: proto.String(string(AuthToken)), Mechanism: proto.String(sasl.Mechanism),
				Protocol: proto.String(saslProtocol), ServerId: proto.String(saslServerID), Challenge: digest.Challenge(),
			}}}
			if opts.Simple {
				reply.Auths = append(reply.Auths, &commonpb.RpcSaslProto_SaslAuth{Method: proto.String(string(AuthSimple)), Mechanism: proto.String("")})
			}
			if err := c.sendSASL(reply); err != nil {
				return err
			}
		case commonpb.RpcSaslProto_INITIATE:
			if len(msg.GetAuths()) == 0 {
				return unauthorized(ClassSaslException, "Client mechanism is malformed")
			}
			auth := msg.GetAuths()[0]
			switch AuthMethod(auth.GetMethod()) {
			case AuthSimple:
				if !opts.Simple {
					return unauthorized(ClassAccessControlException, "SIMPLE authentication is not enabled.  Available:[TOKEN]")
				}
				// The client does not wait for an answer to a switch to SIMPLE.
				c.caller.Auth = AuthSimple
				return nil
			case AuthToken:
				if opts.Tokens == nil || auth.GetMechanism() != sasl.Mechanism {
					return unauthorized(ClassAccessControlException, "%s authentication is not enabled.  Available:[SIMPLE]", auth.GetMethod())
				}
				if digest == nil {
					return unauthorized(ClassSaslException, "DIGEST-MD5 response without a challenge")
				}
				rspauth, err := digest.Respond(msg.GetToken())
				if err != nil {
					var re *RemoteError
					if errors.As(err, &re) {
						return unauthorized(re.Class, "%s", re.Message)
					}
					return unauthorized(ClassSaslException, "%v", err)
				}
				c.caller.Auth, c.caller.User, c.caller.TokenIdentifier = AuthToken, tokenUser, tokenID
				return c.sendSASL(&commonpb.RpcSaslProto{State: commonpb.RpcSaslProto_SUCCESS.Enum(), Token: rspauth})
			default:
				return unauthorized(ClassAccessControlException, "Server does not support SASL %s", auth.GetMethod())
			}
		default:
			return unauthorized(ClassSaslException, "Unexpected SASL state %v", msg.GetState())
		}
	}
}

func (c *conn) readConnectionContext() error {
	hdr, rest, err := c.readHeaderFrame()
	if err != nil {
		return err
	}
	if hdr.GetCallId() != callIDConnectionContext {
		return c.sendFatal(hdr.GetCallId(), fatalf(commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, ClassRPCServerException,
			"Connection context not established"))
	}
	cc := &commonpb.IpcConnectionContextProto{}
	if _, err := consumeDelimited(rest, cc); err != nil {
		return c.sendFatal(callIDConnectionContext, fatalf(commonpb.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST, ClassRPCServerException,
			"Invalid connection context: %v", err))
	}
	c.caller.Protocol = cc.GetProtocol()
	claimed, real := cc.GetUserInfo().GetEffectiveUser(), cc.GetUserInfo().GetRealUser()
	unauthorized := func(class, format string, args ...any) error {
		return c.sendFatal(callIDConnectionContext, fatalf(commonpb.RpcResponseHeaderProto_FATAL_UNAUTHORIZED, class, format, args...))
	}
	switch c.caller.Auth {
	case AuthToken:
		// The token established the user; the client may only restate it.
		if claimed != "" && claimed != c.caller.User {
			return unauthorized(ClassAccessControlException, "Authenticated user (%s) doesn't match what the client claims to be (%s)", c.caller.User, claimed)
		}
	default:
		if claimed == "" {
			return unauthorized(ClassAccessControlException, "Connection context names no user")
		}
		c.caller.User = claimed
		if real != "" && real != claimed {
			authorize := c.srv.opts.AuthorizeProxy
			if authorize == nil {
				return unauthorized(ClassAuthorizationException, "User: %s is not allowed to impersonate %s", real, claimed)
			}
			if err := authorize(real, claimed, c.nc.RemoteAddr()); err != nil {
				return unauthorized(ClassAuthorizationException, "%v", err)
			}
			c.caller.RealUser = real
		}
	}
	c.log = c.srv.opts.Logger.With("remote", c.nc.RemoteAddr().String(), "user", c.caller.User)
	return nil
}

// readCalls reads and dispatches calls until the connection ends.
func (c *conn) readCalls() error {
	idle := c.srv.opts.IdleTimeout
	for {
		if c.closing.Load() {
			return nil
		}
		c.nc.SetReadDeadline(time.Now().Add(idle))
		hdr, rest, err := c.readHeaderFrame()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && !c.closing.Load() && c.inflight.Load() > 0 {
				// Waiting on our own slow calls is not idleness. A partly
				// read frame is not at risk: the deadline only fires between
				// frames because clients write whole frames.
				continue
			}
			return err
		}
		switch hdr.GetCallId() {
		case callIDPing:
			continue
		case callIDConnectionContext, callIDSASL:
			return c.sendFatal(hdr.GetCallId(), fatalf(commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, ClassRPCServerException,
				"Connection setup message after the connection was established"))
		}
		if hdr.GetRpcOp() == commonpb.RpcRequestHeaderProto_RPC_CLOSE_CONNECTION {
			return nil
		}
		if hdr.GetCallId() < 0 {
			return c.sendFatal(hdr.GetCallId(), fatalf(commonpb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER, ClassRPCServerException,
				"Invalid call id %d", hdr.GetCallId()))
		}
		if hdr.GetRpcKind() != commonpb.RpcKindProto_RPC_PROTOCOL_BUFFER {
			return c.sendFatalFor(hdr, fatalf(commonpb.RpcResponseHeaderProto_FATAL_UNSUPPORTED_SERIALIZATION, ClassRPCServerException,
				"Unsupported RPC kind %v", hdr.GetRpcKind()))
		}
		reqHdr := &commonpb.RequestHeaderProto{}
		rest, err = consumeDelimited(rest, reqHdr)
		if err != nil {
			return c.sendFatalFor(hdr, fatalf(commonpb.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST, ClassRPCServerException,
				"Invalid request header: %v", err))
		}
		svc, ok := c.srv.services[reqHdr.GetDeclaringClassProtocolName()]
		if !ok {
			if err := c.respond(hdr, nil, &RemoteError{Class: ClassNoSuchProtocol, Code: commonpb.RpcResponseHeaderProto_ERROR_NO_SUCH_PROTOCOL,
				Message: fmt.Sprintf("Unknown protocol: %s", reqHdr.GetDeclaringClassProtocolName())}); err != nil {
				return err
			}
			continue
		}
		m, ok := svc.Methods[reqHdr.GetMethodName()]
		if !ok {
			if err := c.respond(hdr, nil, &RemoteError{Class: ClassNoSuchMethod, Code: commonpb.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD,
				Message: fmt.Sprintf("Unknown method %s called on %s protocol.", reqHdr.GetMethodName(), svc.Protocol)}); err != nil {
				return err
			}
			continue
		}
		req := m.NewRequest()
		if _, err := consumeDelimited(rest, req); err != nil {
			return c.sendFatalFor(hdr, fatalf(commonpb.RpcResponseHeaderProto_FATAL_DESERIALIZING_REQUEST, ClassRPCServerException,
				"Cannot decode %s.%s request: %v", svc.Protocol, reqHdr.GetMethodName(), err))
		}
		c.sem <- struct{}{}
		c.inflight.Add(1)
		c.calls.Add(1)
		go c.call(hdr, m, req)
	}
}

func (c *conn) call(hdr *commonpb.RpcRequestHeaderProto, m Method, req proto.Message) {
	defer func() {
		<-c.sem
		c.inflight.Add(-1)
		c.calls.Done()
	}()
	caller := c.caller
	caller.ClientID, caller.CallID, caller.RetryCount = hdr.GetClientId(), hdr.GetCallId(), hdr.GetRetryCount()
	resp, err := c.invoke(WithCaller(c.ctx, &caller), m, req)
	if err := c.respond(hdr, resp, err); err != nil {
		c.log.Debug("write response", "err", err)
		c.nc.Close()
	}
}

// invoke runs a handler, turning a panic into an error so that one bad
// request cannot take the server down.
func (c *conn) invoke(ctx context.Context, m Method, req proto.Message) (resp proto.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Warn("handler panic", "panic", p)
			resp, err = nil, &RemoteError{Class: ClassRPCServerException, Message: fmt.Sprintf("internal error: %v", p),
				Code: commonpb.RpcResponseHeaderProto_ERROR_RPC_SERVER}
		}
	}()
	return m.Handle(ctx, req)
}

// respond writes the response of one call: the message on success, the
// RemoteError otherwise.
func (c *conn) respond(hdr *commonpb.RpcRequestHeaderProto, resp proto.Message, callErr error) error {
	rh := c.responseHeader(hdr.GetCallId(), hdr)
	var frame []byte
	var err error
	if callErr == nil {
		frame, err = encodeFrame(rh, resp)
		if err != nil {
			callErr = &RemoteError{Class: ClassRPCServerException, Message: fmt.Sprintf("cannot serialize response: %v", err),
				Code: commonpb.RpcResponseHeaderProto_ERROR_SERIALIZING_RESPONSE}
		}
	}
	if callErr != nil {
		re := asRemoteError(callErr)
		setError(rh, re)
		if frame, err = encodeFrame(rh); err != nil {
			return err
		}
		if err := c.write(frame); err != nil {
			return err
		}
		if re.Fatal {
			c.nc.Close()
		}
		return nil
	}
	return c.write(frame)
}

func (c *conn) responseHeader(callID int32, req *commonpb.RpcRequestHeaderProto) *commonpb.RpcResponseHeaderProto {
	rh := &commonpb.RpcResponseHeaderProto{
		CallId:              proto.Uint32(uint32(callID)),
		Status:              commonpb.RpcResponseHeaderProto_SUCCESS.Enum(),
		ServerIpcVersionNum: proto.Uint32(CurrentVersion),
	}
	if req != nil {
		rh.ClientId = req.GetClientId()
		rh.RetryCount = proto.Int32(req.GetRetryCount())
	}
	return rh
}

func setError(rh *commonpb.RpcResponseHeaderProto, re *RemoteError) {
	status := commonpb.RpcResponseHeaderProto_ERROR
	if re.Fatal {
		status = commonpb.RpcResponseHeaderProto_FATAL
	}
	code := re.Code
	if code == 0 {
		code = commonpb.RpcResponseHeaderProto_ERROR_APPLICATION
	}
	rh.Status = status.Enum()
	rh.ExceptionClassName = proto.String(re.Class)
	rh.ErrorMsg = proto.String(re.Message)
	rh.ErrorDetail = code.Enum()
}

// sendFatal writes a fatal error for a connection-level exchange and
// returns it, so callers end the connection with it.
func (c *conn) sendFatal(callID int32, re *RemoteError) error {
	rh := c.responseHeader(callID, nil)
	setError(rh, re)
	if frame, err := encodeFrame(rh); err == nil {
		c.write(frame)
	}
	return re
}

func (c *conn) sendFatalFor(hdr *commonpb.RpcRequestHeaderProto, re *RemoteError) error {
	rh := c.responseHeader(hdr.GetCallId(), hdr)
	setError(rh, re)
	if frame, err := encodeFrame(rh); err == nil {
		c.write(frame)
	}
	return re
}

func (c *conn) sendSASL(msg *commonpb.RpcSaslProto) error {
	frame, err := encodeFrame(c.responseHeader(callIDSASL, nil), msg)
	if err != nil {
		return err
	}
	return c.write(frame)
}

func (c *conn) write(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(c.srv.opts.WriteTimeout))
	_, err := c.nc.Write(frame)
	return err
}
