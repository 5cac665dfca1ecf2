package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
)

// The protocols' names as Hadoop's clients send them in each call (wire
// constants, spelled here so the benchmark depends on no RM package).
const (
	clientProtocol = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
	amProtocol     = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
)

// callTimeout bounds one RPC: a call that long is a failed run, not a
// sample.
const callTimeout = 60 * time.Second

func call(ctx context.Context, c *ipc.Client, protocol, method string, req, resp proto.Message) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := c.Call(cctx, protocol, method, req, resp); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// am is an unmanaged ApplicationMaster on its own connection to the AM
// protocol, as AMRMClient keeps one: its calls are sequential.
type am struct {
	app        *yarnpb.ApplicationIdProto
	conn       *ipc.Client
	responseID int32
	// held are the containers granted and not released.
	held []*yarnpb.ContainerIdProto
}

// submitUnmanaged submits an unmanaged application to queue over the
// client protocol and waits for its attempt's AMRMToken, as
// UnmanagedAMLauncher does.
func submitUnmanaged(ctx context.Context, c *ipc.Client, name, queue string) (*yarnpb.ApplicationIdProto, *commonpb.TokenProto, error) {
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := call(ctx, c, clientProtocol, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return nil, nil, err
	}
	id := na.GetApplicationId()
	err := call(ctx, c, clientProtocol, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String(name), Queue: proto.String(queue), UnmanagedAm: proto.Bool(true),
		ApplicationType: proto.String("YARN"), Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
	}}, &yarnpb.SubmitApplicationResponseProto{})
	if err != nil {
		return nil, nil, err
	}
	for {
		report := &yarnpb.GetApplicationReportResponseProto{}
		if err := call(ctx, c, clientProtocol, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, report); err != nil {
			return nil, nil, err
		}
		if t := report.GetApplicationReport().GetAmRmToken(); t != nil {
			return id, t, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// registerAM connects to the AM protocol with the attempt's AMRMToken and
// registers.
func registerAM(ctx context.Context, addr string, app *yarnpb.ApplicationIdProto, token *commonpb.TokenProto) (*am, error) {
	c, err := ipc.Dial(ctx, addr, ipc.ClientOptions{Protocol: amProtocol,
		Token: &ipc.Token{Identifier: token.GetIdentifier(), Password: token.GetPassword()}})
	if err != nil {
		return nil, err
	}
	err = call(ctx, c, amProtocol, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("bench")},
		&yarnpb.RegisterApplicationMasterResponseProto{})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &am{app: app, conn: c}, nil
}

// ask is AMRMClient's ANY request for n containers of 1 GiB and 1 vcore
// at priority 1: a total, which replaces the previous one.
func ask(n int32) []*yarnpb.ResourceRequestProto {
	return []*yarnpb.ResourceRequestProto{{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n),
		RelaxLocality: proto.Bool(true)}}
}

// allocate heartbeats once, with asks and releases, and returns how many
// containers it was granted and how long the call took at the client.
func (a *am) allocate(ctx context.Context, asks []*yarnpb.ResourceRequestProto, release []*yarnpb.ContainerIdProto) (int, time.Duration, error) {
	resp := &yarnpb.AllocateResponseProto{}
	t0 := time.Now()
	err := call(ctx, a.conn, amProtocol, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.responseID), Ask: asks,
		Release: release, Progress: proto.Float32(0.5)}, resp)
	took := time.Since(t0)
	if err != nil {
		return 0, took, err
	}
	a.responseID = resp.GetResponseId()
	for _, c := range resp.GetAllocatedContainers() {
		a.held = append(a.held, c.GetId())
	}
	return len(resp.GetAllocatedContainers()), took, nil
}

func (a *am) close() { a.conn.Close() }
