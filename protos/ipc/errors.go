package ipc

import (
	"errors"
	"fmt"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
)

// Java exception classes a Hadoop client maps back to typed exceptions.
const (
	ClassIOException            = "java.io.IOException"
	ClassAccessControlException = "org.apache.hadoop.security.AccessControlException"
	ClassAuthorizationException = "org.apache.hadoop.security.authorize.AuthorizationException"
	ClassSaslException          = "javax.security.sasl.SaslException"
	ClassInvalidToken           = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
	ClassNoSuchProtocol         = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
	ClassNoSuchMethod           = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	ClassRPCServerException     = "org.apache.hadoop.ipc.RpcServerException"
	ClassFatalRPCServer         = "org.apache.hadoop.ipc.FatalRpcServerException"
	ClassVersionMismatch        = "org.apache.hadoop.ipc.RPC$VersionMismatch"
	ClassStandbyException       = "org.apache.hadoop.ipc.StandbyException"
	ClassRetriableException     = "org.apache.hadoop.ipc.RetriableException"
)

type rpcErrorCode = commonpb.RpcResponseHeaderProto_RpcErrorCodeProto

// RemoteError is an error in the form a Hadoop client rethrows: the Java
// class name selects the exception type it unwraps to (for YARN's
// RPCUtil.unwrapAndThrowException, a YarnException subclass by name).
type RemoteError struct {
	// Class is the fully qualified Java class name.
	Class string
	// Message becomes the exception's message.
	Message string
	// Code refines the failure for the client's retry logic.
	Code rpcErrorCode
	// Fatal errors close the connection after the response is sent.
	Fatal bool
}

func (e *RemoteError) Error() string { return e.Class + ": " + e.Message }

// Errorf returns an application-level RemoteError of the given Java class.
func Errorf(class, format string, args ...any) *RemoteError {
	return &RemoteError{Class: class, Message: fmt.Sprintf(format, args...), Code: commonpb.RpcResponseHeaderProto_ERROR_APPLICATION}
}

// fatalf returns a connection-fatal RemoteError.
func fatalf(code rpcErrorCode, class, format string, args ...any) *RemoteError {
	return &RemoteError{Class: class, Message: fmt.Sprintf(format, args...), Code: code, Fatal: true}
}

// asRemoteError turns any handler error into what goes on the wire. Errors
// without a Java class surface as java.io.IOException with their message,
// which is what a Java server's unexpected exception looks like to clients.
func asRemoteError(err error) *RemoteError {
	var re *RemoteError
	if errors.As(err, &re) {
		return re
	}
	return &RemoteError{Class: ClassIOException, Message: err.Error(), Code: commonpb.RpcResponseHeaderProto_ERROR_APPLICATION}
}
