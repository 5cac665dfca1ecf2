package amrm

import (
	"context"
	"errors"
	"sync"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/rmfacade/ipc"
	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// Protocol is the name AMs give the protocol in each call.
const Protocol = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"

// Service implements ApplicationMasterProtocol. Every call acts on the
// attempt its connection's AMRMToken names, re-checked on each call.
type Service struct {
	mgr *rm.Manager
	// last holds each registered attempt's last allocate response, for
	// YARN's responseId handshake: a retried request gets it again.
	mu   sync.Mutex
	last map[records.AttemptID]*yarnpb.AllocateResponseProto
}

// New returns the service.
func New(mgr *rm.Manager) *Service {
	return &Service{mgr: mgr, last: map[records.AttemptID]*yarnpb.AllocateResponseProto{}}
}

// Service returns the ipc registration.
func (s *Service) Service() *ipc.Service {
	return &ipc.Service{Protocol: Protocol, Methods: map[string]ipc.Method{
		"registerApplicationMaster": ipc.Unary(wrap(s.register)),
		"allocate":                  ipc.Unary(wrap(s.allocate)),
		"finishApplicationMaster":   ipc.Unary(wrap(s.finish)),
	}}
}

func wrap[Req, Resp proto.Message](h func(context.Context, Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		resp, err := h(ctx, req)
		var re *ipc.RemoteError
		if err != nil && !errors.As(err, &re) {
			ye := yarnerr.As(err)
			err = ipc.Errorf(ye.Class, "%s", ye.Message)
		}
		return resp, err
	}
}

// attempt is the attempt the caller's AMRMToken names, if still live.
func (s *Service) attempt(ctx context.Context) (records.AttemptID, error) {
	c := ipc.CallerFrom(ctx)
	if c == nil || c.Auth != ipc.AuthToken {
		return records.AttemptID{}, ipc.Errorf(ipc.ClassAccessControlException, "ApplicationMasterProtocol requires an AMRMToken")
	}
	id, _, err := attemptOf(c.TokenIdentifier)
	if err != nil {
		return id, err
	}
	if _, _, err := s.mgr.LiveAttempt(id); err != nil {
		return id, err
	}
	return id, nil
}

func (s *Service) register(ctx context.Context, req *yarnpb.RegisterApplicationMasterRequestProto) (*yarnpb.RegisterApplicationMasterResponseProto, error) {
	id, err := s.attempt(ctx)
	if err != nil {
		return nil, err
	}
	app, err := s.mgr.RegisterAM(ctx, id, req.GetHost(), req.GetRpcPort(), req.GetTrackingUrl())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.last[id] = &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(0)}
	s.mu.Unlock()
	max := s.mgr.MaximumAllocation()
	return &yarnpb.RegisterApplicationMasterResponseProto{
		MaximumCapability:      &yarnpb.ResourceProto{Memory: proto.Int64(max.MemoryMB), VirtualCores: proto.Int32(max.VCores)},
		Queue:                  proto.String(app.Queue),
		SchedulerResourceTypes: []yarnpb.SchedulerResourceTypes{yarnpb.SchedulerResourceTypes_MEMORY, yarnpb.SchedulerResourceTypes_CPU},
	}, nil
}

func (s *Service) allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	id, err := s.attempt(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last, ok := s.last[id]
	if !ok {
		// Not registered with this RM incarnation: AMRMClient re-registers
		// on this exception.
		return nil, ipc.Errorf(yarnerr.ClassAMNotRegistered, "AM is not registered for known application attempt: %s or RM had restarted after AM registered. AM should re-register.", id)
	}
	switch req.GetResponseId() {
	case last.GetResponseId() - 1:
		return last, nil // a retry of the request last answered
	case last.GetResponseId():
	default:
		return nil, ipc.Errorf(yarnerr.ClassInvalidApplicationMasterRequest,
			"Invalid responseId in AllocateRequest from application attempt: %s, expect responseId to be %d, but get %d",
			id, last.GetResponseId(), req.GetResponseId())
	}
	snap := s.mgr.Snapshot()
	var free records.Resource
	nodes := snap.Nodes(records.NodeRunning)
	for _, n := range nodes {
		free = free.Add(records.Resource{MemoryMB: n.Capability.MemoryMB - n.Used.MemoryMB, VCores: n.Capability.VCores - n.Used.VCores})
	}
	// Containers are granted once the translator and scheduler place pods
	// (the AM/NM path); until then asks stay pending and the response
	// carries headroom and the handshake only.
	resp := &yarnpb.AllocateResponseProto{
		ResponseId:      proto.Int32(last.GetResponseId() + 1),
		Limit:           &yarnpb.ResourceProto{Memory: proto.Int64(free.MemoryMB), VirtualCores: proto.Int32(free.VCores)},
		NumClusterNodes: proto.Int32(int32(len(nodes))),
	}
	if resp.GetResponseId() < 0 { // wraps as Java's int does
		resp.ResponseId = proto.Int32(0)
	}
	s.last[id] = resp
	return resp, nil
}

func (s *Service) finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	id, err := s.attempt(ctx)
	if err != nil {
		return nil, err
	}
	final := records.FinalStatus(req.GetFinalApplicationStatus().String()[len("APP_"):])
	if err := s.mgr.FinishAM(ctx, id, final, req.GetDiagnostics(), req.GetTrackingUrl()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.last, id)
	s.mu.Unlock()
	return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
}
