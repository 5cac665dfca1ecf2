// Package yarnerr holds the errors the ResourceManager returns, each with
// the Java exception class a YARN client rethrows it as. Transports map
// them: IPC to a RemoteException of that class, REST to YARN's
// RemoteException JSON and an HTTP status.
package yarnerr

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/weft-sh/weft/protos/ipc"
)

// Kind classifies an error for transports that need a status (REST).
type Kind int

const (
	KindInternal Kind = iota
	KindBadRequest
	KindNotFound
	KindForbidden
	KindConflict
)

// Java exception classes YARN clients know.
const (
	ClassYarnException                   = "org.apache.hadoop.yarn.exceptions.YarnException"
	ClassYARNFeatureNotEnabled           = "org.apache.hadoop.yarn.exceptions.YARNFeatureNotEnabledException"
	ClassApplicationNotFound             = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"
	ClassApplicationAttemptNotFound      = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException"
	ClassContainerNotFound               = "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException"
	ClassInvalidResourceRequest          = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"
	ClassAccessControl                   = "org.apache.hadoop.security.AccessControlException"
	ClassIOException                     = "java.io.IOException"
	ClassApplicationIDNotProvided        = "org.apache.hadoop.yarn.exceptions.ApplicationIdNotProvidedException"
	ClassInvalidApplicationMasterRequest = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException"
)

// Error is a ResourceManager error with its Java class.
type Error struct {
	Kind    Kind
	Class   string
	Message string
}

func (e *Error) Error() string { return e.Message }

// New returns an Error.
func New(kind Kind, class, format string, args ...any) *Error {
	return &Error{Kind: kind, Class: class, Message: fmt.Sprintf(format, args...)}
}

// As returns err as an *Error, wrapping anything else as an internal
// YarnException.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindInternal, Class: ClassYarnException, Message: err.Error()}
}

// ApplicationNotFound is YARN's message for an unknown application id.
func ApplicationNotFound(id string) *Error {
	return New(KindNotFound, ClassApplicationNotFound,
		"Application with id '%s' doesn't exist in RM. Please check that the job submission was successful.", id)
}

// AttemptNotFound is YARN's message for an unknown attempt id.
func AttemptNotFound(id string) *Error {
	return New(KindNotFound, ClassApplicationAttemptNotFound, "ApplicationAttempt with id '%s' doesn't exist in RM.", id)
}

// ContainerNotFound is YARN's message for an unknown container id.
func ContainerNotFound(id string) *Error {
	return New(KindNotFound, ClassContainerNotFound, "Container with id '%s' doesn't exist in RM.", id)
}

// BadRequest is a YarnException for malformed input.
func BadRequest(format string, args ...any) *Error {
	return New(KindBadRequest, ClassYarnException, format, args...)
}

// Forbidden is an AccessControlException.
func Forbidden(format string, args ...any) *Error {
	return New(KindForbidden, ClassAccessControl, format, args...)
}

// ClassAMNotRegistered is thrown at AMs that call before registering;
// AMRMClient re-registers when it sees it.
const ClassAMNotRegistered = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException"

// InvalidAMRequest is YARN's InvalidApplicationMasterRequestException.
func InvalidAMRequest(format string, args ...any) *Error {
	return New(KindBadRequest, ClassInvalidApplicationMasterRequest, format, args...)
}

// Handler adapts a YARN protocol handler for ipc.Unary: errors that are
// not already RemoteErrors become the RemoteError of their YARN class, so
// every method answers in the form Java clients rebuild.
func Handler[Req, Resp proto.Message](h func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		resp, err := h(ctx, req)
		if err == nil {
			return resp, nil
		}
		var re *ipc.RemoteError
		if errors.As(err, &re) {
			return resp, err
		}
		ye := As(err)
		if ye.Class == ClassAccessControl {
			// ClientRMService throws ACL refusals through
			// RPCUtil.getRemoteException: a YarnException whose message is
			// the AccessControlException it wraps.
			return resp, ipc.Errorf(ClassYarnException, "%s: %s", ClassAccessControl, ye.Message)
		}
		return resp, ipc.Errorf(ye.Class, "%s", ye.Message)
	}
}
