package ipc

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// Method is one RPC method of a protocol: how to decode its request and
// what handles it.
type Method struct {
	// NewRequest returns an empty request message to unmarshal into.
	NewRequest func() proto.Message
	// Handle serves the call. Errors should be *RemoteError where the client
	// expects a particular Java exception.
	Handle func(ctx context.Context, req proto.Message) (proto.Message, error)
}

// Service is one protocol served on a port, named as Java clients name it
// in the ProtobufRpcEngine header (the *PB interface, e.g.
// "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB").
type Service struct {
	Protocol string
	Methods  map[string]Method
}

// Unary adapts a typed handler to a Method.
func Unary[Req, Resp proto.Message](h func(context.Context, Req) (Resp, error)) Method {
	var zero Req
	typ := zero.ProtoReflect().Type()
	return Method{
		NewRequest: func() proto.Message { return typ.New().Interface() },
		Handle: func(ctx context.Context, req proto.Message) (proto.Message, error) {
			resp, err := h(ctx, req.(Req))
			if err != nil {
				return nil, err
			}
			return resp, nil
		},
	}
}
