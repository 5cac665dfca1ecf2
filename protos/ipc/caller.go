package ipc

import (
	"context"
	"net"
)

// AuthMethod is how a connection authenticated, named as Hadoop names it.
type AuthMethod string

const (
	AuthSimple AuthMethod = "SIMPLE"
	AuthToken  AuthMethod = "TOKEN"
)

// Caller identifies who made a call. It is fixed for the life of a
// connection except for CallID and RetryCount.
type Caller struct {
	// User is the effective user the call acts as.
	User string
	// RealUser is set when User is impersonated by an authenticated proxy.
	RealUser string
	// Auth is the method the connection authenticated with.
	Auth AuthMethod
	// TokenIdentifier holds the raw identifier of the token a TOKEN
	// connection authenticated with, for services that scope access by it
	// (an AMRMToken names its application attempt).
	TokenIdentifier []byte
	// Protocol is the protocol named in the connection context.
	Protocol string
	// RemoteAddr is the peer's address.
	RemoteAddr net.Addr
	// ClientID and CallID identify the call for retry caches.
	ClientID   []byte
	CallID     int32
	RetryCount int32
}

type callerKey struct{}

// WithCaller returns ctx carrying c. Tests and in-process callers use it to
// invoke handlers directly.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller of the call ctx belongs to, or nil.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// RealUserOrEmpty returns the impersonating user, "" for none or a nil
// caller.
func (c *Caller) RealUserOrEmpty() string {
	if c == nil {
		return ""
	}
	return c.RealUser
}
