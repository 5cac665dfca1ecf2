// Package clientrm serves YARN's ApplicationClientProtocol — what `yarn`,
// YarnClient, `hadoop jar` and spark-submit speak to a ResourceManager on
// port 8032 — over the ipc server, on top of the rm lifecycle.
package clientrm

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// Protocol is the name Java clients give the protocol in each call.
const Protocol = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"

// Options configures the service.
type Options struct {
	// Tokens issues RM delegation tokens.
	Tokens *DelegationTokens
	// WebAddr is the RM web address reports point at (host:port).
	WebAddr string
	// AMTokens issues AMRMTokens, which the owner of an unmanaged AM gets
	// in its application report.
	AMTokens AMTokenIssuer
	// Progress, when set, gives what an attempt's AM last reported of its
	// progress: the AMs' reports are not in the state store (the AM
	// service keeps them, as YARN's RMAppAttempt does), so without it a
	// running application's progress is what its record last said.
	Progress func(records.AttemptID) (float32, bool)
	Logger   *slog.Logger
}

// AMTokenIssuer issues an attempt's AMRMToken.
type AMTokenIssuer interface {
	Issue(records.AttemptID) (*commonpb.TokenProto, error)
}

// Service implements ApplicationClientProtocol.
type Service struct {
	mgr       rm.ClientService
	tokens    *DelegationTokens
	amTokens  AMTokenIssuer
	proxyBase string
	progress  func(records.AttemptID) (float32, bool)
	log       *slog.Logger
}

// New returns the service.
func New(mgr rm.ClientService, opts Options) *Service {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Service{mgr: mgr, tokens: opts.Tokens, amTokens: opts.AMTokens, proxyBase: "http://" + opts.WebAddr + "/proxy/",
		progress: opts.Progress, log: opts.Logger}
}

// progressOf is an application's progress: what its running AM last
// reported, else its record's (1 once its AM unregistered).
func (s *Service) progressOf(a *records.Application) float32 {
	if s.progress != nil && a.AMReportsProgress() {
		if p, ok := s.progress(records.AttemptID{App: a.ID, ID: a.CurrentAttempt}); ok {
			return p
		}
	}
	return a.Progress
}

// Service returns the ipc registration of every method.
func (s *Service) Service() *ipc.Service {
	return &ipc.Service{Protocol: Protocol, Methods: map[string]ipc.Method{
		"getNewApplication":           ipc.Unary(yarnerr.Handler(s.getNewApplication)),
		"getResourceProfiles":         ipc.Unary(yarnerr.Handler(s.getResourceProfiles)),
		"getResourceProfile":          ipc.Unary(yarnerr.Handler(s.getResourceProfile)),
		"submitApplication":           ipc.Unary(yarnerr.Handler(s.submitApplication)),
		"getApplicationReport":        ipc.Unary(yarnerr.Handler(s.getApplicationReport)),
		"getApplications":             ipc.Unary(yarnerr.Handler(s.getApplications)),
		"forceKillApplication":        ipc.Unary(yarnerr.Handler(s.forceKillApplication)),
		"getClusterMetrics":           ipc.Unary(yarnerr.Handler(s.getClusterMetrics)),
		"getClusterNodes":             ipc.Unary(yarnerr.Handler(s.getClusterNodes)),
		"getQueueInfo":                ipc.Unary(yarnerr.Handler(s.getQueueInfo)),
		"getQueueUserAcls":            ipc.Unary(yarnerr.Handler(s.getQueueUserAcls)),
		"getApplicationAttempts":      ipc.Unary(yarnerr.Handler(s.getApplicationAttempts)),
		"getApplicationAttemptReport": ipc.Unary(yarnerr.Handler(s.getApplicationAttemptReport)),
		"getContainers":               ipc.Unary(yarnerr.Handler(s.getContainers)),
		"getContainerReport":          ipc.Unary(yarnerr.Handler(s.getContainerReport)),
		"moveApplicationAcrossQueues": ipc.Unary(yarnerr.Handler(s.moveApplicationAcrossQueues)),
		"updateApplicationPriority":   ipc.Unary(yarnerr.Handler(s.updateApplicationPriority)),
		"getDelegationToken":          ipc.Unary(yarnerr.Handler(s.getDelegationToken)),
		"renewDelegationToken":        ipc.Unary(yarnerr.Handler(s.renewDelegationToken)),
		"cancelDelegationToken":       ipc.Unary(yarnerr.Handler(s.cancelDelegationToken)),
		"getClusterNodeLabels": ipc.Unary(yarnerr.Handler(func(context.Context, *yarnpb.GetClusterNodeLabelsRequestProto) (*yarnpb.GetClusterNodeLabelsResponseProto, error) {
			return &yarnpb.GetClusterNodeLabelsResponseProto{}, nil
		})),
		"getLabelsToNodes": ipc.Unary(yarnerr.Handler(func(context.Context, *yarnpb.GetLabelsToNodesRequestProto) (*yarnpb.GetLabelsToNodesResponseProto, error) {
			return &yarnpb.GetLabelsToNodesResponseProto{}, nil
		})),
		"getNodeToLabels": ipc.Unary(yarnerr.Handler(func(context.Context, *yarnpb.GetNodesToLabelsRequestProto) (*yarnpb.GetNodesToLabelsResponseProto, error) {
			return &yarnpb.GetNodesToLabelsResponseProto{}, nil
		})),
		"getClusterNodeAttributes": ipc.Unary(yarnerr.Handler(func(context.Context, *yarnpb.GetClusterNodeAttributesRequestProto) (*yarnpb.GetClusterNodeAttributesResponseProto, error) {
			return &yarnpb.GetClusterNodeAttributesResponseProto{}, nil
		})),
		"getAttributesToNodes": ipc.Unary(yarnerr.Handler(func(context.Context, *yarnpb.GetAttributesToNodesRequestProto) (*yarnpb.GetAttributesToNodesResponseProto, error) {
			return &yarnpb.GetAttributesToNodesResponseProto{}, nil
		})),
		"getNodesToAttributes": ipc.Unary(yarnerr.Handler(func(context.Context, *yarnpb.GetNodesToAttributesRequestProto) (*yarnpb.GetNodesToAttributesResponseProto, error) {
			return &yarnpb.GetNodesToAttributesResponseProto{}, nil
		})),
		"getResourceTypeInfo": ipc.Unary(yarnerr.Handler(s.getResourceTypeInfo)),
	}}
}

// wrap maps rm errors to the RemoteExceptions Java clients expect.
func user(ctx context.Context) string {
	if c := ipc.CallerFrom(ctx); c != nil {
		return c.User
	}
	return ""
}

func (s *Service) getNewApplication(ctx context.Context, _ *yarnpb.GetNewApplicationRequestProto) (*yarnpb.GetNewApplicationResponseProto, error) {
	return &yarnpb.GetNewApplicationResponseProto{ApplicationId: wire.AppID(s.mgr.NewApplicationID()),
		MaximumCapability: wire.Resource(s.mgr.MaximumAllocation())}, nil
}

func (s *Service) submitApplication(ctx context.Context, req *yarnpb.SubmitApplicationRequestProto) (*yarnpb.SubmitApplicationResponseProto, error) {
	sc := req.GetApplicationSubmissionContext()
	if sc == nil || sc.GetApplicationId() == nil {
		return nil, yarnerr.New(yarnerr.KindBadRequest, yarnerr.ClassApplicationIDNotProvided, "ApplicationId is not provided in ApplicationSubmissionContext")
	}
	raw, err := proto.Marshal(sc)
	if err != nil {
		return nil, err
	}
	am := wire.ResourceOf(sc.GetResource())
	if rr := sc.GetAmContainerResourceRequest(); len(rr) > 0 && rr[0].GetCapability() != nil {
		am = wire.ResourceOf(rr[0].GetCapability())
	}
	err = s.mgr.Submit(ctx, rm.Submission{
		ID: wire.AppIDOf(sc.GetApplicationId()), Name: sc.GetApplicationName(), User: user(ctx), Queue: sc.GetQueue(),
		Type: sc.GetApplicationType(), Tags: sc.GetApplicationTags(), Priority: sc.GetPriority().GetPriority(), AMResource: am,
		MaxAttempts: sc.GetMaxAppAttempts(), UnmanagedAM: sc.GetUnmanagedAm(),
		KeepContainers: sc.GetKeepContainersAcrossApplicationAttempts(), Raw: raw,
	})
	if err != nil {
		return nil, err
	}
	return &yarnpb.SubmitApplicationResponseProto{}, nil
}

// usage is what an application's containers hold and held, now.
func (s *Service) usage(snap *state.Snapshot, a *records.Application) records.Usage {
	return records.UsageOf(snap.ContainersOfApp(a.ID), time.Now().UnixMilli())
}

func (s *Service) application(req interface {
	GetApplicationId() *yarnpb.ApplicationIdProto
}) (*records.Application, error) {
	if req.GetApplicationId() == nil {
		return nil, yarnerr.New(yarnerr.KindBadRequest, yarnerr.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	return s.mgr.Application(wire.AppIDOf(req.GetApplicationId()))
}

func (s *Service) getApplicationReport(ctx context.Context, req *yarnpb.GetApplicationReportRequestProto) (*yarnpb.GetApplicationReportResponseProto, error) {
	a, err := s.application(req)
	if err != nil {
		return nil, err
	}
	report := appReport(a, s.progressOf(a), s.mgr.QueuePath(a.Queue), s.usage(s.mgr.Snapshot(), a), s.proxyBase)
	// The owner of an unmanaged AM runs it itself, so it gets the AMRMToken
	// here while the attempt waits for it (LAUNCHED), as in YARN.
	if a.UnmanagedAM && s.amTokens != nil && user(ctx) == a.User {
		id := records.AttemptID{App: a.ID, ID: a.CurrentAttempt}
		if att := s.mgr.Snapshot().Attempt(id); att != nil && att.State == records.AttemptLaunched {
			if report.AmRmToken, err = s.amTokens.Issue(id); err != nil {
				return nil, err
			}
		}
	}
	return &yarnpb.GetApplicationReportResponseProto{ApplicationReport: report}, nil
}

func (s *Service) getApplications(ctx context.Context, req *yarnpb.GetApplicationsRequestProto) (*yarnpb.GetApplicationsResponseProto, error) {
	f := state.ApplicationFilter{
		Queues: req.GetQueues(), Users: req.GetUsers(), Types: req.GetApplicationTypes(), Tags: req.GetApplicationTags(),
		Name: req.GetName(), StartedBegin: req.GetStartBegin(), StartedEnd: req.GetStartEnd(),
		FinishedBegin: req.GetFinishBegin(), FinishedEnd: req.GetFinishEnd(), Limit: int(min(req.GetLimit(), 1<<31-1)),
	}
	// A queue is named by its leaf name or its full path (reports give the
	// path, so the path must find them too).
	for i, name := range f.Queues {
		if q, ok := s.mgr.Queues().Queue(name); ok {
			f.Queues[i] = q.Name
		}
	}
	// Values outside the enum are dropped, as Java's protobuf drops them;
	// none left is every state.
	for _, st := range req.GetApplicationStates() {
		if s, ok := appStateOf(st); ok {
			f.States = append(f.States, s)
		}
	}
	if req.GetScope() == yarnpb.ApplicationsRequestScopeProto_OWN {
		f.Users = []string{user(ctx)}
	}
	resp := &yarnpb.GetApplicationsResponseProto{}
	snap := s.mgr.Snapshot()
	for _, a := range snap.Applications(f) {
		resp.Applications = append(resp.Applications, appReport(a, s.progressOf(a), s.mgr.QueuePath(a.Queue), s.usage(snap, a), s.proxyBase))
	}
	return resp, nil
}

func (s *Service) forceKillApplication(ctx context.Context, req *yarnpb.KillApplicationRequestProto) (*yarnpb.KillApplicationResponseProto, error) {
	if req.GetApplicationId() == nil {
		return nil, yarnerr.New(yarnerr.KindBadRequest, yarnerr.ClassApplicationIDNotProvided, "ApplicationId is not provided")
	}
	done, err := s.mgr.Kill(ctx, wire.AppIDOf(req.GetApplicationId()), user(ctx), req.GetDiagnostics())
	if err != nil {
		return nil, err
	}
	return &yarnpb.KillApplicationResponseProto{IsKillCompleted: proto.Bool(done)}, nil
}

func (s *Service) getClusterMetrics(ctx context.Context, _ *yarnpb.GetClusterMetricsRequestProto) (*yarnpb.GetClusterMetricsResponseProto, error) {
	counts := map[records.NodeState]int32{}
	nodes := s.mgr.Snapshot().Nodes()
	for _, n := range nodes {
		counts[n.State]++
	}
	return &yarnpb.GetClusterMetricsResponseProto{ClusterMetrics: &yarnpb.YarnClusterMetricsProto{
		NumNodeManagers: proto.Int32(counts[records.NodeRunning]), NumActiveNms: proto.Int32(counts[records.NodeRunning]),
		NumDecommissionedNms: proto.Int32(counts[records.NodeDecommissioned]), NumLostNms: proto.Int32(counts[records.NodeLost]),
		NumUnhealthyNms: proto.Int32(counts[records.NodeUnhealthy]), NumRebootedNms: proto.Int32(counts[records.NodeRebooted]),
		NumDecommissioningNms: proto.Int32(counts[records.NodeDecommissioning]), NumShutdownNms: proto.Int32(counts[records.NodeShutdown]),
	}}, nil
}

func (s *Service) getClusterNodes(ctx context.Context, req *yarnpb.GetClusterNodesRequestProto) (*yarnpb.GetClusterNodesResponseProto, error) {
	// As ClientRMService: no states (after Java's protobuf dropped values
	// it does not know) is every state.
	var states []records.NodeState
	for _, st := range req.GetNodeStates() {
		if s, ok := nodeStateOf(st); ok {
			states = append(states, s)
		}
	}
	resp := &yarnpb.GetClusterNodesResponseProto{}
	now := time.Now().UnixMilli()
	for _, n := range s.mgr.Snapshot().Nodes(states...) {
		resp.NodeReports = append(resp.NodeReports, wire.NodeReport(n, now))
	}
	return resp, nil
}

func (s *Service) getQueueInfo(ctx context.Context, req *yarnpb.GetQueueInfoRequestProto) (*yarnpb.GetQueueInfoResponseProto, error) {
	q, ok := s.mgr.Queues().Queue(req.GetQueueName())
	if !ok {
		// As ClientRMService: an unknown queue is an answer without a
		// QueueInfo, not an error — the client's retry policy would retry
		// an IOException forever; on none, `yarn queue -status` prints
		// "Cannot get queue from RM by queueName = …, please check."
		return &yarnpb.GetQueueInfoResponseProto{}, nil
	}
	return &yarnpb.GetQueueInfoResponseProto{QueueInfo: s.queueInfo(s.mgr.Snapshot(), q,
		req.GetIncludeApplications(), req.GetIncludeChildQueues(), req.GetRecursive())}, nil
}

func (s *Service) getQueueUserAcls(ctx context.Context, _ *yarnpb.GetQueueUserAclsInfoRequestProto) (*yarnpb.GetQueueUserAclsInfoResponseProto, error) {
	u := user(ctx)
	queues := s.mgr.Queues()
	resp := &yarnpb.GetQueueUserAclsInfoResponseProto{}
	for _, q := range queues.Queues() {
		info := &yarnpb.QueueUserACLInfoProto{QueueName: proto.String(q.Name)}
		if queues.Allowed(q, u, quota.SubmitApplications) {
			info.UserAcls = append(info.UserAcls, yarnpb.QueueACLProto_QACL_SUBMIT_APPLICATIONS)
		}
		if queues.Allowed(q, u, quota.AdministerQueue) {
			info.UserAcls = append(info.UserAcls, yarnpb.QueueACLProto_QACL_ADMINISTER_QUEUE)
		}
		resp.QueueUserAcls = append(resp.QueueUserAcls, info)
	}
	return resp, nil
}

func (s *Service) getApplicationAttempts(ctx context.Context, req *yarnpb.GetApplicationAttemptsRequestProto) (*yarnpb.GetApplicationAttemptsResponseProto, error) {
	a, err := s.application(req)
	if err != nil {
		return nil, err
	}
	resp := &yarnpb.GetApplicationAttemptsResponseProto{}
	for _, att := range s.mgr.Snapshot().AttemptsOf(a.ID) {
		resp.ApplicationAttempts = append(resp.ApplicationAttempts, attemptReport(att, s.proxyBase))
	}
	return resp, nil
}

// attempt finds an attempt, telling an unknown application apart from an
// unknown attempt as YARN does.
func (s *Service) attempt(snap *state.Snapshot, p *yarnpb.ApplicationAttemptIdProto) (*records.Attempt, error) {
	if p == nil {
		return nil, yarnerr.BadRequest("ApplicationAttemptId is not provided")
	}
	id := wire.AttemptIDOf(p)
	if snap.Application(id.App) == nil {
		return nil, yarnerr.ApplicationNotFound(id.App.String())
	}
	att := snap.Attempt(id)
	if att == nil {
		return nil, yarnerr.AttemptNotFound(id.String())
	}
	return att, nil
}

func (s *Service) getApplicationAttemptReport(ctx context.Context, req *yarnpb.GetApplicationAttemptReportRequestProto) (*yarnpb.GetApplicationAttemptReportResponseProto, error) {
	att, err := s.attempt(s.mgr.Snapshot(), req.GetApplicationAttemptId())
	if err != nil {
		return nil, err
	}
	return &yarnpb.GetApplicationAttemptReportResponseProto{ApplicationAttemptReport: attemptReport(att, s.proxyBase)}, nil
}

func (s *Service) getContainers(ctx context.Context, req *yarnpb.GetContainersRequestProto) (*yarnpb.GetContainersResponseProto, error) {
	snap := s.mgr.Snapshot()
	att, err := s.attempt(snap, req.GetApplicationAttemptId())
	if err != nil {
		return nil, err
	}
	resp := &yarnpb.GetContainersResponseProto{}
	user := appUser(snap, att.ID.App)
	for _, c := range snap.ContainersOfAttempt(att.ID) {
		resp.Containers = append(resp.Containers, containerReport(c, user))
	}
	return resp, nil
}

func (s *Service) getContainerReport(ctx context.Context, req *yarnpb.GetContainerReportRequestProto) (*yarnpb.GetContainerReportResponseProto, error) {
	if req.GetContainerId() == nil {
		return nil, yarnerr.BadRequest("ContainerId is not provided")
	}
	snap := s.mgr.Snapshot()
	id := wire.ContainerIDOf(req.GetContainerId())
	if _, err := s.attempt(snap, wire.AttemptID(id.Attempt)); err != nil {
		return nil, err
	}
	c := snap.Container(id)
	if c == nil {
		return nil, yarnerr.ContainerNotFound(id.String())
	}
	return &yarnpb.GetContainerReportResponseProto{ContainerReport: containerReport(c, appUser(snap, id.Attempt.App))}, nil
}

// appUser is the user an application runs as, whose containers' logs its
// links name; empty when the application is gone.
func appUser(snap *state.Snapshot, id records.ApplicationID) string {
	if a := snap.Application(id); a != nil {
		return a.User
	}
	return ""
}

func (s *Service) moveApplicationAcrossQueues(ctx context.Context, req *yarnpb.MoveApplicationAcrossQueuesRequestProto) (*yarnpb.MoveApplicationAcrossQueuesResponseProto, error) {
	if err := s.mgr.Move(ctx, wire.AppIDOf(req.GetApplicationId()), user(ctx), req.GetTargetQueue()); err != nil {
		return nil, err
	}
	return &yarnpb.MoveApplicationAcrossQueuesResponseProto{}, nil
}

func (s *Service) updateApplicationPriority(ctx context.Context, req *yarnpb.UpdateApplicationPriorityRequestProto) (*yarnpb.UpdateApplicationPriorityResponseProto, error) {
	p, err := s.mgr.UpdatePriority(ctx, wire.AppIDOf(req.GetApplicationId()), user(ctx), req.GetApplicationPriority().GetPriority())
	if err != nil {
		return nil, err
	}
	return &yarnpb.UpdateApplicationPriorityResponseProto{ApplicationPriority: &yarnpb.PriorityProto{Priority: proto.Int32(p)}}, nil
}

func (s *Service) getDelegationToken(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
	c := ipc.CallerFrom(ctx)
	if c != nil && c.Auth == ipc.AuthToken {
		// As in YARN: a token cannot be used to obtain further tokens.
		return nil, ipc.Errorf(ipc.ClassIOException, "Delegation Token can be issued only with kerberos or web authentication")
	}
	renewer := req.GetRenewer()
	if i := strings.IndexAny(renewer, "/@"); i >= 0 {
		renewer = renewer[:i] // the short name, as HadoopKerberosName gives it
	}
	id, pw, err := s.tokens.Issue(user(ctx), renewer, c.RealUserOrEmpty())
	if err != nil {
		return nil, err
	}
	return &commonpb.GetDelegationTokenResponseProto{Token: &commonpb.TokenProto{
		Identifier: id, Password: pw, Kind: proto.String(DelegationTokenKind), Service: proto.String(""),
	}}, nil
}

func (s *Service) renewDelegationToken(ctx context.Context, req *commonpb.RenewDelegationTokenRequestProto) (*commonpb.RenewDelegationTokenResponseProto, error) {
	exp, err := s.tokens.Renew(req.GetToken().GetIdentifier(), req.GetToken().GetPassword(), user(ctx))
	if err != nil {
		return nil, err
	}
	return &commonpb.RenewDelegationTokenResponseProto{NewExpiryTime: proto.Uint64(uint64(exp))}, nil
}

func (s *Service) cancelDelegationToken(ctx context.Context, req *commonpb.CancelDelegationTokenRequestProto) (*commonpb.CancelDelegationTokenResponseProto, error) {
	if err := s.tokens.Cancel(req.GetToken().GetIdentifier(), user(ctx)); err != nil {
		return nil, err
	}
	return &commonpb.CancelDelegationTokenResponseProto{}, nil
}

func (s *Service) getResourceTypeInfo(ctx context.Context, _ *yarnpb.GetAllResourceTypeInfoRequestProto) (*yarnpb.GetAllResourceTypeInfoResponseProto, error) {
	return &yarnpb.GetAllResourceTypeInfoResponseProto{ResourceTypeInfo: []*yarnpb.ResourceTypeInfoProto{
		{Name: proto.String("memory-mb"), Units: proto.String("Mi"), Type: yarnpb.ResourceTypesProto_COUNTABLE.Enum()},
		{Name: proto.String("vcores"), Units: proto.String(""), Type: yarnpb.ResourceTypesProto_COUNTABLE.Enum()},
	}}, nil
}

// Resource profiles are off, as they are by default in YARN
// (yarn.resourcemanager.resource-profiles.enabled): clients such as
// DistributedShell ask, catch YARNFeatureNotEnabledException, and go on.
const profilesDisabled = "Resource profile is not enabled, please enable resource profile feature before using its functions. (by setting yarn.resourcemanager.resource-profiles.enabled to true)"

func (s *Service) getResourceProfiles(ctx context.Context, _ *yarnpb.GetAllResourceProfilesRequestProto) (*yarnpb.GetAllResourceProfilesResponseProto, error) {
	return nil, ipc.Errorf(yarnerr.ClassYARNFeatureNotEnabled, profilesDisabled)
}

func (s *Service) getResourceProfile(ctx context.Context, _ *yarnpb.GetResourceProfileRequestProto) (*yarnpb.GetResourceProfileResponseProto, error) {
	return nil, ipc.Errorf(yarnerr.ClassYARNFeatureNotEnabled, profilesDisabled)
}
