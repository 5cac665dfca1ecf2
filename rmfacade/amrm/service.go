package amrm

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// Protocol is the name AMs give the protocol in each call.
const Protocol = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"

// Options wires the service to scheduling and to the nodes' secret
// manager. With no Allocator, asks stay pending (the embedded mode without
// a cluster runs no containers).
type Options struct {
	Allocator *allocator.Allocator
	// Keys signs container tokens and NMTokens; required with Allocator.
	Keys *nmtokens.Keys
	// ContainerTokenExpiry is how long an AM has to start a granted
	// container (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms,
	// default 10 minutes).
	ContainerTokenExpiry time.Duration
	// AMExpiry is how long a registered AM may go without a call before
	// its attempt fails (yarn.am.liveness-monitor.expiry-interval-ms,
	// default 10 minutes); see Run.
	AMExpiry time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Applications is what the AM service needs of the RM's records: YARN's
// ApplicationMasterService verbs (register, allocate, finish, and the
// liveness monitor's expiry), each one store transaction, the checks
// every call makes, and the snapshot the monitor and the headroom read.
type Applications interface {
	LiveAttempt(records.AttemptID) (*records.Application, *records.Attempt, error)
	RegisterAM(ctx context.Context, id records.AttemptID, host string, rpcPort int32, trackingURL string) (rm.Registered, error)
	Allocate(context.Context, rm.Allocation) (rm.Allocated, error)
	FinishAM(ctx context.Context, id records.AttemptID, final records.FinalStatus, diagnostics, trackingURL string) error
	AMExpired(context.Context, records.AttemptID) error
	NormalizeRequest(records.Resource) (records.Resource, error)
	// ClusterTimestamp is the RM incarnation's id, which container tokens
	// carry for the NodeManager to check.
	ClusterTimestamp() int64
	Snapshot() *state.Snapshot
}

// Service implements ApplicationMasterProtocol. Every call acts on the
// attempt its connection's AMRMToken names, re-checked on each call.
type Service struct {
	mgr  Applications
	opts Options
	// started is when this incarnation began: the last sign of life of
	// AMs that registered with an earlier one.
	started time.Time
	// mu guards sessions only, never across a call's work: the AMs of
	// different applications are served in parallel, each serialized on
	// its own session as YARN's ApplicationMasterService serializes an
	// attempt's calls on its AllocateResponseLock.
	mu sync.Mutex
	// sessions holds the attempts registered with this incarnation.
	sessions map[records.AttemptID]*session
	// headroom is the cluster's last summed headroom (clusterHeadroom).
	headroom atomic.Pointer[headroom]
	// nodesMu guards nodes, and serializes summing the headroom anew so
	// that each change of the nodes is scanned once.
	nodesMu sync.Mutex
	nodes   nodeLog
}

// session is what this incarnation keeps of a registered AM.
type session struct {
	// mu is held through each call of the AM.
	mu sync.Mutex
	// last is what the last allocate response said, for YARN's
	// responseId handshake (a retried request gets it again); nil until
	// the AM registered.
	last *sent
	// nmTokens remembers the nodes whose NMToken the attempt has had.
	nmTokens map[string]bool
	// heard is when the AM last called (Unix nanoseconds), read by the
	// liveness monitor without waiting on a call in progress.
	heard atomic.Int64
	// nodesFrom is the number of the first node change (nodeLog) the AM
	// has yet to hear of.
	nodesFrom uint64
	// progress is what the AM last reported (math.Float32bits), kept in
	// memory as YARN's RMAppAttempt keeps it: the next heartbeat after a
	// restart tells it again. reported says whether it has.
	progress atomic.Uint32
	reported atomic.Bool
}

// Progress returns what the attempt's AM last reported of its progress
// (0 to 1) in an allocate call to this incarnation, and whether it has.
func (s *Service) Progress(id records.AttemptID) (float32, bool) {
	sess := s.session(id)
	if sess == nil || !sess.reported.Load() {
		return 0, false
	}
	return math.Float32frombits(sess.progress.Load()), true
}

// clampProgress reads an AM's reported progress as YARN's
// ApplicationMasterService does: NaN, infinite and negative values are
// 0, values above 1 are 1.
func clampProgress(p float32) float32 {
	switch {
	case math.IsNaN(float64(p)) || p < 0:
		return 0
	case p > 1:
		return 1
	}
	return p
}

// New returns the service.
func New(mgr Applications, opts Options) *Service {
	if opts.ContainerTokenExpiry <= 0 {
		opts.ContainerTokenExpiry = 10 * time.Minute
	}
	if opts.AMExpiry <= 0 {
		opts.AMExpiry = 10 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{mgr: mgr, opts: opts, started: opts.Now(), sessions: map[records.AttemptID]*session{}}
}

// session returns the attempt's session, nil when it has not registered
// with this incarnation.
func (s *Service) session(id records.AttemptID) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// Run is YARN's AMLivelinessMonitor: until ctx ends it checks, every
// third of AMExpiry, that each RUNNING attempt's AM called within
// AMExpiry, and fails the attempts whose AM did not (rm.Manager.AMExpired),
// so a job whose AM hangs or lost its way is retried or failed, never left
// RUNNING. AMs that registered with an earlier RM incarnation count from
// this one's start: they get a whole interval to resync.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.AMExpiry / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.expire(ctx)
	}
}

// expire fails the attempts whose AM has been silent for AMExpiry.
func (s *Service) expire(ctx context.Context) {
	now := s.opts.Now()
	snap := s.mgr.Snapshot()
	for _, app := range snap.Applications(state.ApplicationFilter{States: []records.AppState{records.AppRunning}}) {
		id := records.AttemptID{App: app.ID, ID: app.CurrentAttempt}
		att := snap.Attempt(id)
		if att == nil || att.State != records.AttemptRunning {
			continue
		}
		heard := s.started
		if sess := s.session(id); sess != nil {
			heard = time.Unix(0, sess.heard.Load())
		}
		if now.Sub(heard) < s.opts.AMExpiry {
			continue
		}
		if err := s.mgr.AMExpired(ctx, id); err != nil {
			s.opts.Logger.Warn("expiring a silent AM", "attempt", id.String(), "err", err)
			continue
		}
		s.opts.Logger.Warn("ApplicationMaster timed out", "attempt", id.String(), "silentFor", now.Sub(heard).String())
		s.forget(id)
	}
}

// forget drops what this incarnation keeps of an attempt.
func (s *Service) forget(id records.AttemptID) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
	if s.opts.Allocator != nil {
		s.opts.Allocator.Forget(id)
	}
}

// Service returns the ipc registration.
func (s *Service) Service() *ipc.Service {
	return &ipc.Service{Protocol: Protocol, Methods: map[string]ipc.Method{
		"registerApplicationMaster": ipc.Unary(yarnerr.Handler(s.register)),
		"allocate":                  ipc.Unary(yarnerr.Handler(s.allocate)),
		"finishApplicationMaster":   ipc.Unary(yarnerr.Handler(s.finish)),
	}}
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
	// Registered with this incarnation already: refused, as YARN's
	// ApplicationMasterService does. One that registered with an earlier
	// incarnation is resyncing and registers again (rm.Manager.RegisterAM).
	// Two registers of one attempt race for its session under mu; the
	// session counts as registered once last is set.
	s.mu.Lock()
	if _, ok := s.sessions[id]; ok {
		s.mu.Unlock()
		return nil, yarnerr.InvalidAMRequest("Application Master is already registered : %s", id.App)
	}
	sess := &session{nmTokens: map[string]bool{}}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	s.sessions[id] = sess
	s.mu.Unlock()
	reg, err := s.mgr.RegisterAM(ctx, id, req.GetHost(), req.GetRpcPort(), req.GetTrackingUrl())
	if err != nil {
		s.mu.Lock()
		if s.sessions[id] == sess {
			delete(s.sessions, id)
		}
		s.mu.Unlock()
		return nil, err
	}
	sess.last = &sent{head: &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(0)}}
	sess.heard.Store(s.opts.Now().UnixNano())
	sess.nodesFrom = s.clusterHeadroom().nodesNext
	return &yarnpb.RegisterApplicationMasterResponseProto{
		MaximumCapability:      wire.Resource(reg.MaximumAllocation),
		Queue:                  proto.String(reg.QueuePath),
		SchedulerResourceTypes: []yarnpb.SchedulerResourceTypes{yarnpb.SchedulerResourceTypes_MEMORY, yarnpb.SchedulerResourceTypes_CPU},
		// AMRMClient re-initializes its resource types from these; an empty
		// list would leave it none, not even memory.
		ResourceTypes: []*yarnpb.ResourceTypeInfoProto{
			{Name: proto.String("memory-mb"), Units: proto.String("Mi"), Type: yarnpb.ResourceTypesProto_COUNTABLE.Enum()},
			{Name: proto.String("vcores"), Units: proto.String(""), Type: yarnpb.ResourceTypesProto_COUNTABLE.Enum()},
		},
	}, nil
}

func (s *Service) allocate(ctx context.Context, req *yarnpb.AllocateRequestProto) (*yarnpb.AllocateResponseProto, error) {
	id, err := s.attempt(ctx)
	if err != nil {
		return nil, err
	}
	sess := s.session(id)
	if sess != nil {
		sess.mu.Lock()
		defer sess.mu.Unlock()
	}
	// Registered with this incarnation, and still: a register that failed
	// or a finish that forgot the attempt while this call waited leaves it
	// unregistered.
	if sess == nil || sess.last == nil || s.session(id) != sess {
		// Not registered with this RM incarnation: AMRMClient re-registers
		// on this exception.
		return nil, ipc.Errorf(yarnerr.ClassAMNotRegistered, "AM is not registered for known application attempt: %s or RM had restarted after AM registered. AM should re-register.", id)
	}
	last := sess.last.head
	sess.heard.Store(s.opts.Now().UnixNano())
	if req.Progress != nil {
		sess.progress.Store(math.Float32bits(clampProgress(req.GetProgress())))
		sess.reported.Store(true)
	}
	switch req.GetResponseId() {
	case last.GetResponseId() - 1:
		return s.resend(id, sess.last) // a retry of the request last answered
	case last.GetResponseId():
	default:
		return nil, ipc.Errorf(yarnerr.ClassInvalidApplicationMasterRequest,
			"Invalid responseId in AllocateRequest from application attempt: %s, expect responseId to be %d, but get %d",
			id, last.GetResponseId(), req.GetResponseId())
	}
	for _, r := range req.GetAsk() {
		want := wire.ResourceOf(r.GetCapability())
		norm, err := s.mgr.NormalizeRequest(want)
		if err != nil {
			return nil, err
		}
		r.Capability = wire.Resource(norm)
	}
	release := make([]records.ContainerID, 0, len(req.GetRelease()))
	for _, c := range req.GetRelease() {
		release = append(release, wire.ContainerIDOf(c))
	}
	resp := &yarnpb.AllocateResponseProto{ResponseId: proto.Int32(last.GetResponseId() + 1)}
	if resp.GetResponseId() < 0 { // wraps as Java's int does
		resp.ResponseId = proto.Int32(0)
	}
	if s.opts.Allocator != nil {
		s.opts.Allocator.Update(id, req.GetAsk())
	}
	got, err := s.mgr.Allocate(ctx, rm.Allocation{Attempt: id, Release: release, Acquire: s.opts.Allocator != nil})
	if err != nil {
		return nil, err
	}
	granted, err := s.grant(id, sess, got, resp)
	if err != nil {
		return nil, err
	}
	for _, c := range got.Completed {
		resp.CompletedContainerStatuses = append(resp.CompletedContainerStatuses, &yarnpb.ContainerStatusProto{
			ContainerId: wire.ContainerID(c.ID), State: yarnpb.ContainerStateProto_C_COMPLETE.Enum(),
			Diagnostics: proto.String(c.Diagnostics), ExitStatus: proto.Int32(c.ExitStatus),
			Capability: wire.Resource(c.Resource),
		})
	}
	// Victims are announced in every response until they are gone, as
	// YARN does: strict (they will be killed at the deadline whatever the
	// AM does) and in the contract, which MapReduce's AM reads.
	if len(got.Preempting) > 0 {
		var cs []*yarnpb.PreemptionContainerProto
		for _, c := range got.Preempting {
			cs = append(cs, &yarnpb.PreemptionContainerProto{Id: wire.ContainerID(c.ID)})
		}
		resp.Preempt = &yarnpb.PreemptionMessageProto{
			StrictContract: &yarnpb.StrictPreemptionContractProto{Container: cs},
			Contract:       &yarnpb.PreemptionContractProto{Container: cs},
		}
	}
	h := s.clusterHeadroom()
	resp.Limit = wire.Resource(records.Resource{MemoryMB: max(h.free.MemoryMB, 0), VCores: max(h.free.VCores, 0)})
	resp.NumClusterNodes = proto.Int32(int32(h.nodes))
	resp.UpdatedNodes = s.updatedNodes(sess)
	sess.last = granted.keep(resp)
	return resp, nil
}

// sent is what a session keeps of the last allocate response: the
// response without its grants, and the ids of the containers and the
// nodes of the NMTokens it granted. YARN's ApplicationMasterService keeps
// the whole response (lastResponse) to answer a retry of the request; here
// a retry gets the grants built again from the store's records (resend).
// Container tokens and NMTokens are most of a response's bytes: keeping
// them for each of 1,000 AMs holding 100 containers each is about 140 MB
// of live heap.
type sent struct {
	// head is the response with AllocatedContainers and NmTokens empty.
	head *yarnpb.AllocateResponseProto
	// allocated are the containers granted, in the response's order.
	allocated []records.ContainerID
	// nmTokenNodes are the nodes whose NMToken the response carried.
	nmTokenNodes []string
}

// grantFields are the response's fields a session does not keep.
var grantFields = map[protoreflect.Name]bool{"allocated_containers": true, "nm_tokens": true}

// keep returns what a session keeps of resp, whose grants s names: every
// field of resp but the grants, shared with resp (which is not written
// once answered).
func (s sent) keep(resp *yarnpb.AllocateResponseProto) *sent {
	head := &yarnpb.AllocateResponseProto{}
	dst := head.ProtoReflect()
	resp.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if !grantFields[fd.Name()] {
			dst.Set(fd, v)
		}
		return true
	})
	s.head = head
	return &s
}

// headroom is what every allocate response tells of the cluster: its
// RUNNING nodes' free capacity and their number, as of a store version.
type headroom struct {
	free  records.Resource
	nodes int
	// nodesNext is the number the next node change will have (nodeLog).
	nodesNext uint64
	// changed closes when a node changes after the snapshot it was
	// summed over.
	changed <-chan struct{}
}

// clusterHeadroom sums the RUNNING nodes once per change of the nodes,
// not once per heartbeat: with 10,000 nodes and 1,000 AMs heartbeating
// each second, listing and summing every node on every call would take
// most of the RM's CPU (test/bench/scale).
//
// The same pass logs the nodes whose usability changed (nodeLog).
func (s *Service) clusterHeadroom() *headroom {
	fresh := func(h *headroom) bool {
		if h == nil {
			return false
		}
		select {
		case <-h.changed:
			return false
		default:
			return true
		}
	}
	if h := s.headroom.Load(); fresh(h) {
		return h
	}
	s.nodesMu.Lock()
	defer s.nodesMu.Unlock()
	if h := s.headroom.Load(); fresh(h) {
		return h // summed while this call waited
	}
	snap := s.mgr.Snapshot()
	h := &headroom{changed: snap.NodesChanged()}
	all := snap.Nodes()
	for _, n := range all {
		if n.State != records.NodeRunning {
			continue
		}
		h.free = h.free.Add(records.Resource{MemoryMB: n.Capability.MemoryMB - n.Used.MemoryMB - n.Occupied.MemoryMB,
			VCores: n.Capability.VCores - n.Used.VCores - n.Occupied.VCores})
		h.nodes++
	}
	now := s.opts.Now()
	s.nodes.scan(all, now)
	s.nodes.trim(now.Add(-s.opts.AMExpiry))
	h.nodesNext = s.nodes.next()
	s.headroom.Store(h)
	return h
}

// updatedNodes returns the reports of the nodes whose usability changed
// since the AM last heard, as they are now; the caller holds sess.mu.
func (s *Service) updatedNodes(sess *session) []*yarnpb.NodeReportProto {
	s.nodesMu.Lock()
	ids := s.nodes.since(sess.nodesFrom)
	sess.nodesFrom = s.nodes.next()
	s.nodesMu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	snap := s.mgr.Snapshot()
	now := s.opts.Now().UnixMilli()
	var out []*yarnpb.NodeReportProto
	for _, id := range ids {
		if n := snap.Node(id); n != nil {
			out = append(out, wire.NodeReport(n, now))
		}
	}
	return out
}

// grant puts the containers an allocate acquired, with their container
// tokens, and the NMTokens of nodes new to the attempt into resp, and
// returns what a retry needs to grant them again.
func (s *Service) grant(id records.AttemptID, sess *session, got rm.Allocated, resp *yarnpb.AllocateResponseProto) (sent, error) {
	var out sent
	for _, c := range got.Acquired {
		out.allocated = append(out.allocated, c.ID)
		if !sess.nmTokens[c.Node] {
			out.nmTokenNodes = append(out.nmTokenNodes, c.Node)
			sess.nmTokens[c.Node] = true
		}
	}
	if len(got.Acquired) == 0 {
		return out, nil
	}
	return out, s.addGrants(id, got.Application, got.Acquired, out.nmTokenNodes, resp)
}

// resend builds the response last names again, for a retry of the request
// it answered: its grants from the store's records, each container token
// and NMToken signed anew. The AM never read the tokens of the response it
// lost, so fresh ones, with a fresh expiry, serve it as the lost ones
// would have. A container whose record is gone (its application removed)
// is left out.
func (s *Service) resend(id records.AttemptID, last *sent) (*yarnpb.AllocateResponseProto, error) {
	resp := proto.Clone(last.head).(*yarnpb.AllocateResponseProto)
	if len(last.allocated) == 0 && len(last.nmTokenNodes) == 0 {
		return resp, nil
	}
	snap := s.mgr.Snapshot()
	app := snap.Application(id.App)
	if app == nil {
		return nil, yarnerr.ApplicationNotFound(id.App.String())
	}
	var cs []*records.Container
	for _, cid := range last.allocated {
		if c := snap.Container(cid); c != nil {
			cs = append(cs, c)
		}
	}
	return resp, s.addGrants(id, app, cs, last.nmTokenNodes, resp)
}

// addGrants appends containers, each with its container token, and the
// NMTokens of nmTokenNodes to resp.
func (s *Service) addGrants(id records.AttemptID, app *records.Application, containers []*records.Container, nmTokenNodes []string,
	resp *yarnpb.AllocateResponseProto) error {
	expiry := s.opts.Now().Add(s.opts.ContainerTokenExpiry)
	for _, c := range containers {
		token, err := s.opts.Keys.ContainerToken(nmtokens.ContainerGrant{Container: c.ID, NodeID: c.Node, User: app.User,
			Resource: c.Resource, Priority: c.Priority, AllocationRequestID: c.AllocationRequestID,
			RMIdentifier: s.mgr.ClusterTimestamp(), Expiry: expiry, Tier: c.Tier, Queue: app.Queue})
		if err != nil {
			return err
		}
		resp.AllocatedContainers = append(resp.AllocatedContainers, &yarnpb.ContainerProto{
			Id: wire.ContainerID(c.ID), NodeId: wire.NodeID(c.Node), NodeHttpAddress: proto.String(c.NodeHTTP),
			Resource:       wire.Resource(c.Resource),
			Priority:       &yarnpb.PriorityProto{Priority: proto.Int32(c.Priority)},
			ContainerToken: token, AllocationRequestId: proto.Int64(c.AllocationRequestID),
		})
	}
	for _, node := range nmTokenNodes {
		host, port, err := wire.SplitNodeID(node)
		if err != nil {
			return err
		}
		nm, err := s.opts.Keys.NMToken(id, host, port, app.User)
		if err != nil {
			return err
		}
		resp.NmTokens = append(resp.NmTokens, &yarnpb.NMTokenProto{NodeId: wire.NodeID(node), Token: nm})
	}
	return nil
}

func (s *Service) finish(ctx context.Context, req *yarnpb.FinishApplicationMasterRequestProto) (*yarnpb.FinishApplicationMasterResponseProto, error) {
	id, err := s.attempt(ctx)
	if err != nil {
		return nil, err
	}
	// A value outside the enum is dropped by Java's protobuf, leaving the
	// field's default: UNDEFINED.
	final := records.FinalUndefined
	if name, ok := yarnpb.FinalApplicationStatusProto_name[int32(req.GetFinalApplicationStatus())]; ok {
		final = records.FinalStatus(strings.TrimPrefix(name, "APP_"))
	}
	// Not while one of the AM's own calls is in progress.
	if sess := s.session(id); sess != nil {
		sess.mu.Lock()
		defer sess.mu.Unlock()
	}
	if err := s.mgr.FinishAM(ctx, id, final, req.GetDiagnostics(), req.GetTrackingUrl()); err != nil {
		return nil, err
	}
	s.forget(id)
	return &yarnpb.FinishApplicationMasterResponseProto{IsUnregistered: proto.Bool(true)}, nil
}
