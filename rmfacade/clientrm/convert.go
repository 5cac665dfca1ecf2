package clientrm

import (
	"google.golang.org/protobuf/proto"
	"strings"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/rmfacade/state"
)

// Conversions between records and their YARN wire form; ids and
// resources are protos/yarn/wire's.

func appStateProto(s records.AppState) *yarnpb.YarnApplicationStateProto {
	return yarnpb.YarnApplicationStateProto(yarnpb.YarnApplicationStateProto_value[string(s)]).Enum()
}

// appStateOf converts an application state of a request; ok is false for
// a value outside the enum, which Java's protobuf drops.
func appStateOf(p yarnpb.YarnApplicationStateProto) (s records.AppState, ok bool) {
	name, ok := yarnpb.YarnApplicationStateProto_name[int32(p)]
	return records.AppState(name), ok
}

func finalStatusProto(s records.FinalStatus) *yarnpb.FinalApplicationStatusProto {
	return yarnpb.FinalApplicationStatusProto(yarnpb.FinalApplicationStatusProto_value["APP_"+string(s)]).Enum()
}

func attemptStateProto(s records.AttemptState) *yarnpb.YarnApplicationAttemptStateProto {
	return yarnpb.YarnApplicationAttemptStateProto(yarnpb.YarnApplicationAttemptStateProto_value["APP_ATTEMPT_"+string(s)]).Enum()
}

// nodeStateOf converts a node state of a request; ok is false for a value
// outside the enum (a newer or a broken client), which Java's protobuf
// drops before the RM sees the request.
func nodeStateOf(p yarnpb.NodeStateProto) (s records.NodeState, ok bool) {
	name, ok := yarnpb.NodeStateProto_name[int32(p)]
	return records.NodeState(strings.TrimPrefix(name, "NS_")), ok
}

func containerStateProto(s records.ContainerState) *yarnpb.ContainerStateProto {
	return yarnpb.ContainerStateProto(yarnpb.ContainerStateProto_value["C_"+string(s)]).Enum()
}

func queueStateProto(s string) *yarnpb.QueueStateProto {
	v, ok := yarnpb.QueueStateProto_value["Q_"+s]
	if !ok {
		v = int32(yarnpb.QueueStateProto_Q_RUNNING)
	}
	return yarnpb.QueueStateProto(v).Enum()
}

// orNA renders an unknown string as YARN does.
func orNA(s string) string {
	if s == "" {
		return "N/A"
	}
	return s
}

// appReport renders an application as YARN's ApplicationReport.
// proxyBase is the RM web address's proxy prefix, where a managed AM's
// tracking URL points.
// progress is its AM's last report (Service.progressOf);
// queuePath is the full path of the application's queue (rm.Manager.QueuePath),
// u what its containers hold and held.
func appReport(a *records.Application, progress float32, queuePath string, u records.Usage, proxyBase string) *yarnpb.ApplicationReportProto {
	rpcPort := a.RPCPort
	if a.Host == "" {
		rpcPort = -1
	}
	r := &yarnpb.ApplicationReportProto{
		ApplicationId: wire.AppID(a.ID), User: proto.String(a.User), Queue: proto.String(queuePath), Name: proto.String(a.Name),
		Host: proto.String(orNA(a.Host)), RpcPort: proto.Int32(rpcPort),
		YarnApplicationState: appStateProto(a.State), TrackingUrl: proto.String(proxyBase + a.ID.String() + "/"),
		Diagnostics: proto.String(a.Diagnostics), StartTime: proto.Int64(a.StartTime), FinishTime: proto.Int64(a.FinishTime),
		LaunchTime: proto.Int64(a.LaunchTime), SubmitTime: proto.Int64(a.SubmitTime),
		FinalApplicationStatus: finalStatusProto(a.FinalStatus), OriginalTrackingUrl: proto.String(orNA(a.OriginalTrackingURL)),
		Progress: proto.Float32(progress), ApplicationType: proto.String(a.Type), ApplicationTags: a.Tags,
		UnmanagedApplication: proto.Bool(a.UnmanagedAM), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(a.Priority)},
		LogAggregationStatus: yarnpb.LogAggregationStatusProto_LOG_DISABLED.Enum(),
		AppResource_Usage: &yarnpb.ApplicationResourceUsageReportProto{
			NumUsedContainers: proto.Int32(u.Containers), NumReservedContainers: proto.Int32(0),
			UsedResources: wire.Resource(u.Allocated), ReservedResources: wire.Resource(records.Resource{}),
			NeededResources: wire.Resource(u.Allocated), MemorySeconds: proto.Int64(u.MemorySeconds), VcoreSeconds: proto.Int64(u.VcoreSeconds),
		},
	}
	if a.CurrentAttempt > 0 {
		r.CurrentApplicationAttemptId = wire.AttemptID(records.AttemptID{App: a.ID, ID: a.CurrentAttempt})
	}
	// As a 3.4 RM's report: a managed AM's tracking URL is always the
	// RM's proxy for it (which forwards to the AM's UI, then to the
	// history its AM named at the end); an unmanaged AM's is its own.
	if a.UnmanagedAM {
		r.TrackingUrl = proto.String(orNA(a.TrackingURL))
	}
	// Once its AM unregistered, the original tracking URL is the final
	// one it gave (the history), as RMAppAttemptImpl resets it then.
	if a.FinalStatus != records.FinalUndefined && a.FinalStatus != "" {
		r.OriginalTrackingUrl = proto.String(orNA(a.TrackingURL))
	}
	return r
}

func attemptReport(a *records.Attempt, proxyBase string) *yarnpb.ApplicationAttemptReportProto {
	r := &yarnpb.ApplicationAttemptReportProto{
		ApplicationAttemptId: wire.AttemptID(a.ID), Host: proto.String(orNA(a.Host)), RpcPort: proto.Int32(a.RPCPort),
		TrackingUrl: proto.String(proxyBase + a.ID.App.String() + "/"), Diagnostics: proto.String(a.Diagnostics),
		YarnApplicationAttemptState: attemptStateProto(a.State), OriginalTrackingUrl: proto.String(orNA(a.OriginalTrackingURL)),
		StartTime: proto.Int64(a.StartTime), FinishTime: proto.Int64(a.FinishTime),
	}
	if a.Host == "" {
		r.RpcPort = proto.Int32(-1)
	}
	if id, err := records.ParseContainerID(a.AMContainer); err == nil {
		r.AmContainerId = wire.ContainerID(id)
	}
	return r
}

func containerReport(c *records.Container, user string) *yarnpb.ContainerReportProto {
	return &yarnpb.ContainerReportProto{
		ContainerId: wire.ContainerID(c.ID), Resource: wire.Resource(c.Resource),
		NodeId: wire.NodeID(c.Node), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(c.Priority)},
		CreationTime: proto.Int64(c.StartTime), FinishTime: proto.Int64(c.FinishTime), DiagnosticsInfo: proto.String(c.Diagnostics),
		LogUrl: proto.String(c.LogsURL(user)), ContainerExitStatus: proto.Int32(c.ExitStatus), ContainerState: containerStateProto(c.State),
		NodeHttpAddress: proto.String(c.NodeHTTP),
	}
}

// queueStats counts a queue's applications by state.
func queueStats(apps []*records.Application) *yarnpb.QueueStatisticsProto {
	var submitted, running, pending, completed, killed, failed int64
	for _, a := range apps {
		submitted++
		switch a.State {
		case records.AppRunning:
			running++
		case records.AppFinished:
			completed++
		case records.AppKilled:
			killed++
		case records.AppFailed:
			failed++
		default:
			pending++
		}
	}
	return &yarnpb.QueueStatisticsProto{NumAppsSubmitted: proto.Int64(submitted), NumAppsRunning: proto.Int64(running),
		NumAppsPending: proto.Int64(pending), NumAppsCompleted: proto.Int64(completed), NumAppsKilled: proto.Int64(killed),
		NumAppsFailed: proto.Int64(failed)}
}

// queueInfo renders a queue as YARN's QueueInfo. Capacities are fractions
// of the parent, as the CapacityScheduler reports them over RPC.
// Preemption is enabled, as on a CapacityScheduler whose preemption
// monitor runs (`yarn queue -status` prints "Preemption : enabled"):
// Weft reclaims a queue's guarantee from the queues that borrowed it; it
// does not preempt within a queue (intra-queue preemption disabled), and
// the REST scheduler view says the same.
func (s *Service) queueInfo(snap *state.Snapshot, q *records.Queue, withApps, withChildren, recursive bool) *yarnpb.QueueInfoProto {
	apps := snap.Applications(state.ApplicationFilter{Queues: []string{q.Name}})
	info := &yarnpb.QueueInfoProto{
		QueueName: proto.String(q.Name), QueuePath: proto.String(q.Path), Capacity: proto.Float32(q.Capacity / 100),
		MaximumCapacity: proto.Float32(q.MaxCapacity / 100), CurrentCapacity: proto.Float32(0), State: queueStateProto(q.State),
		AccessibleNodeLabels: []string{"*"}, PreemptionDisabled: proto.Bool(false), IntraQueuePreemptionDisabled: proto.Bool(true),
		QueueStatistics: queueStats(apps), SchedulerType: proto.String("CapacityScheduler"), Weight: proto.Float32(-1),
		MaxParallelApps: proto.Int32(2147483647),
	}
	if withApps {
		for _, a := range apps {
			info.Applications = append(info.Applications, appReport(a, s.progressOf(a), q.Path, s.usage(snap, a), s.proxyBase))
		}
	}
	if withChildren {
		for _, path := range q.Children {
			if child, ok := s.mgr.Queues().Queue(path); ok {
				info.ChildQueues = append(info.ChildQueues, s.queueInfo(snap, child, withApps && recursive, recursive, recursive))
			}
		}
	}
	return info
}
