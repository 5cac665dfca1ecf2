// Package ipc is a Hadoop IPC (version 9, ProtobufRpcEngine) server,
// independent of YARN: connection header, framing, SASL negotiation (SIMPLE
// and TOKEN/DIGEST-MD5), connection context, ping, pipelined calls dispatched
// by protocol and method name, and errors as the RemoteExceptions Java
// clients rethrow.
package ipc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// TokenAuthenticator verifies tokens for TOKEN authentication. It is the
// server half of a Hadoop SecretManager.
type TokenAuthenticator interface {
	// RetrievePassword returns the password of the token with the given
	// identifier and the user the token authenticates. An unknown or expired
	// token yields an error, ideally a *RemoteError of ClassInvalidToken.
	RetrievePassword(identifier []byte) (password []byte, user string, err error)
}

// ProxyAuthorizer decides whether realUser may impersonate effectiveUser
// (Hadoop's hadoop.proxyuser.* rules).
type ProxyAuthorizer func(realUser, effectiveUser string, remote net.Addr) error

// Options configures a Server. The zero value of each field means its
// documented default.
type Options struct {
	// Name labels the server in logs, e.g. "client-rm".
	Name string
	// Simple accepts SIMPLE authentication (hadoop.security.authentication=simple).
	Simple bool
	// Tokens, when set, offers TOKEN authentication with DIGEST-MD5.
	Tokens TokenAuthenticator
	// AuthorizeProxy decides impersonation; nil refuses it, as Hadoop does
	// without hadoop.proxyuser.* configuration.
	AuthorizeProxy ProxyAuthorizer
	// MaxFrameSize bounds a request frame (default DefaultMaxFrameSize).
	MaxFrameSize int
	// HandshakeTimeout bounds the connection header, SASL and connection
	// context exchange (default 20s).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection with no calls in flight that has sent
	// nothing for this long (default 2m; Java clients ping every 60s while
	// they wait and close idle connections themselves after 10s).
	IdleTimeout time.Duration
	// WriteTimeout bounds writing one response (default 30s).
	WriteTimeout time.Duration
	// MaxInFlightPerConn bounds concurrently executing calls of one
	// connection; further calls wait unread, pushing back on the client
	// (default 256).
	MaxInFlightPerConn int
	// Logger receives connection-level events (default slog.Default()).
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = DefaultMaxFrameSize
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 20 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	if o.MaxInFlightPerConn <= 0 {
		o.MaxInFlightPerConn = 256
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name != "" {
		o.Logger = o.Logger.With("server", o.Name)
	}
}

// Server serves Hadoop IPC connections.
type Server struct {
	opts     Options
	services map[string]*Service

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	closing   bool
	connsDone sync.WaitGroup
}

// NewServer returns a server for the given protocols.
func NewServer(opts Options, services ...*Service) (*Server, error) {
	opts.setDefaults()
	if !opts.Simple && opts.Tokens == nil {
		return nil, errors.New("ipc: no authentication method enabled")
	}
	s := &Server{opts: opts, services: map[string]*Service{}, listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}}
	for _, svc := range services {
		if _, dup := s.services[svc.Protocol]; dup {
			return nil, fmt.Errorf("ipc: protocol %s registered twice", svc.Protocol)
		}
		s.services[svc.Protocol] = svc
	}
	return s, nil
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("ipc: server closed")

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyOpenFiles) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.opts.Logger.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("ipc: accept: %w", err)
		}
		backoff = 0
		c := newConn(s, nc)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.conns[c] = struct{}{}
		s.connsDone.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.connsDone.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting, lets calls in flight finish and closes every
// connection; when ctx ends first, remaining connections are closed at once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		c.beginClose()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.connsDone.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}
