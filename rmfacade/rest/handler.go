// Package rest serves the ResourceManager's REST API (/ws/v1/cluster/...)
// and a small web UI on the RM web port, shaped as YARN's RMWebServices so
// that REST clients and scripts written for YARN work unchanged.
package rest

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"google.golang.org/protobuf/proto"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// HadoopVersion is the Hadoop version Weft reports itself compatible with.
const HadoopVersion = "3.4.1"

// Options configures the handler.
type Options struct {
	// WebAddr is the RM's web address as clients reach it, for the
	// tracking URLs through its proxy (empty: the AM's own URLs).
	WebAddr string
	Logger  *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Metrics, when set, serves Prometheus metrics at /prom (where
	// Hadoop 3's RM serves them with hadoop.prometheus.endpoint.enabled)
	// and /metrics.
	Metrics http.Handler
	// StateStore names the state store in cluster info's rmStateStoreName
	// (default Weft's embedded store).
	StateStore string
	// HA says the RM runs with leader election, for cluster info's
	// haZooKeeperConnectionState.
	HA bool
	// Asks, when set, gives what an attempt's AM has asked for and not
	// been granted: how many containers, and their resources in all. The
	// AMs' outstanding asks are not in the state store — the allocator
	// keeps them in memory, and AMs resend them after a restart — so
	// without it a queue's pending resources are only the AM containers
	// its ACCEPTED applications wait for.
	Asks func(attempt records.AttemptID) (containers int, resources records.Resource)
	// Progress, when set, gives what an attempt's AM last reported of its
	// progress (0 to 1), kept in memory by the AM service as YARN keeps
	// it; without it a running application's progress is its record's.
	Progress func(attempt records.AttemptID) (float32, bool)
}

// Applications is what the REST API and the web UI read and change: what
// a client reaches over IPC, and the RM's own facts that cluster info and
// the metrics report.
type Applications interface {
	rm.ClientService
	ClusterTimestamp() int64
	RemovedSinceStart() (finished, failed, killed int64)
}

type handler struct {
	mgr  Applications
	opts Options
	// encoded keeps finished applications' JSON between listings.
	encoded encodedApps
}

// NewHandler returns the RM web handler.
func NewHandler(mgr Applications, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StateStore == "" {
		opts.StateStore = "weft.rmfacade.state.BoltDurable"
	}
	h := &handler{mgr: mgr, opts: opts}
	r := mux.NewRouter()
	// Full paths on the root router rather than a subrouter: gorilla/mux
	// reports a method mismatch inside a subrouter as 404, not 405.
	api := routePrefix{r: r, prefix: "/ws/v1/cluster"}
	api.HandleFunc("", h.info).Methods(http.MethodGet)
	api.HandleFunc("/", h.info).Methods(http.MethodGet)
	api.HandleFunc("/info", h.info).Methods(http.MethodGet)
	api.HandleFunc("/metrics", h.metrics).Methods(http.MethodGet)
	api.HandleFunc("/scheduler", h.scheduler).Methods(http.MethodGet)
	api.HandleFunc("/apps", h.apps).Methods(http.MethodGet)
	api.HandleFunc("/apps", h.submit).Methods(http.MethodPost)
	api.HandleFunc("/apps/new-application", h.newApplication).Methods(http.MethodPost)
	api.HandleFunc("/apps/{appid}", h.app).Methods(http.MethodGet)
	api.HandleFunc("/apps/{appid}/state", h.appView(stateView)).Methods(http.MethodGet)
	api.HandleFunc("/apps/{appid}/state", h.killApp).Methods(http.MethodPut)
	api.HandleFunc("/apps/{appid}/queue", h.appView(h.queueView)).Methods(http.MethodGet)
	api.HandleFunc("/apps/{appid}/queue", h.update(h.queueView, h.moveApp)).Methods(http.MethodPut)
	api.HandleFunc("/apps/{appid}/priority", h.appView(priorityView)).Methods(http.MethodGet)
	api.HandleFunc("/apps/{appid}/priority", h.update(priorityView, h.prioritizeApp)).Methods(http.MethodPut)
	api.HandleFunc("/apps/{appid}/appattempts", h.appAttempts).Methods(http.MethodGet)
	api.HandleFunc("/nodes", h.nodes).Methods(http.MethodGet)
	api.HandleFunc("/nodes/{nodeid}", h.node).Methods(http.MethodGet)
	// On the root router: a subrouter with its own NotFoundHandler would
	// report a method mismatch as 404.
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, notFound("no such resource %s", r.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dao.Error(w, r, http.StatusMethodNotAllowed, "WebApplicationException", dao.ClassWebApplicationException,
			r.Method+" is not supported on "+r.URL.Path)
	})
	r.HandleFunc("/proxy/{appid}/", h.proxy)
	r.HandleFunc(isActivePath, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "I am Active!") })
	if opts.Metrics != nil {
		r.Handle("/prom", opts.Metrics).Methods(http.MethodGet)
		r.Handle("/metrics", opts.Metrics).Methods(http.MethodGet)
	}
	h.registerUI(r)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case len(req.RequestURI) > maxURIBytes:
			// Jetty under Hadoop's HttpServer2 refuses a request line
			// beyond hadoop.http.max.request.header.size.
			http.Error(w, "URI Too Long", http.StatusRequestURITooLong)
		case req.Method == http.MethodOptions:
			options(r, w, req)
		case req.Method == http.MethodHead:
			// Jersey answers HEAD wherever it answers GET, without the body
			// (net/http drops it for a HEAD request).
			get := req.Clone(req.Context())
			get.Method = http.MethodGet
			r.ServeHTTP(w, get)
		default:
			r.ServeHTTP(w, req)
		}
	})
}

// maxURIBytes is the longest request URI served
// (hadoop.http.max.request.header.size, 64 KiB).
const maxURIBytes = 64 << 10

// options answers OPTIONS as Jersey does: 200 with the resource's methods
// in Allow (HEAD wherever GET, and OPTIONS), or the router's 404 for a
// resource that does not exist.
func options(r *mux.Router, w http.ResponseWriter, req *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := req.Clone(req.Context())
		probe.Method = m
		var match mux.RouteMatch
		if r.Match(probe, &match) && match.MatchErr == nil {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) == 0 {
		r.ServeHTTP(w, req) // not found, or no method at all
		return
	}
	w.Header().Set("Allow", strings.Join(append(allow, http.MethodOptions), ","))
	w.WriteHeader(http.StatusOK)
}

type routePrefix struct {
	r      *mux.Router
	prefix string
}

func (p routePrefix) HandleFunc(path string, f http.HandlerFunc) *mux.Route {
	return p.r.HandleFunc(p.prefix+path, f)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// staticUser is who a request naming no user acts as: Hadoop's
// StaticUserWebFilter (hadoop.http.staticuser.user) names anonymous
// requests so on an RM without Kerberos.
const staticUser = "dr.who"

// remoteUser is the caller under simple HTTP authentication: the
// user.name query parameter, as Hadoop's PseudoAuthenticationHandler reads
// it, or staticUser. Weft's
// ACLs then decide what it may do, as an RM's with yarn.acl.enable.
func remoteUser(r *http.Request) string {
	if u := r.URL.Query().Get("user.name"); u != "" {
		return u
	}
	return staticUser
}

func (h *handler) info(w http.ResponseWriter, r *http.Request) {
	ts := h.mgr.ClusterTimestamp()
	dao.Write(w, r, http.StatusOK, clusterInfo(ts, "ACTIVE", h.opts.StateStore, h.opts.HA))
}

func clusterInfo(startedOn int64, haState, store string, ha bool) *dao.ClusterInfo {
	// YARN's elector reports its ZooKeeper connection here; Weft's is a
	// Lease in the API server.
	conn := "ResourceManager HA is not enabled."
	if ha {
		conn = "Leader election through a Kubernetes Lease."
	}
	return &dao.ClusterInfo{ID: startedOn, StartedOn: startedOn, State: "STARTED", HAState: haState,
		RMStateStoreName: store, ResourceManagerVersion: HadoopVersion,
		ResourceManagerBuildVersion: HadoopVersion + " from weft", HadoopVersion: HadoopVersion,
		HadoopBuildVersion: HadoopVersion + " from weft", HAZooKeeperConnectionState: conn}
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	dao.Write(w, r, http.StatusOK, h.clusterMetrics(h.mgr.Snapshot()))
}

// clusterMetrics is /ws/v1/cluster/metrics over snap; the web UI's
// metrics bar shows the same.
func (h *handler) clusterMetrics(snap *state.Snapshot) *dao.ClusterMetricsInfo {
	m := &dao.ClusterMetricsInfo{RMSchedulerBusyPercent: -1}
	// The applications retention removed still count, as in YARN's
	// metrics since the RM started.
	finished, failed, killed := h.mgr.RemovedSinceStart()
	m.AppsSubmitted = int32(finished + failed + killed)
	m.AppsCompleted = m.AppsSubmitted
	m.AppsFailed, m.AppsKilled = int32(failed), int32(killed)
	for _, a := range snap.Applications(state.ApplicationFilter{}) {
		m.AppsSubmitted++
		switch a.State {
		case records.AppFinished:
			m.AppsCompleted++
		case records.AppFailed:
			m.AppsFailed++
			m.AppsCompleted++
		case records.AppKilled:
			m.AppsKilled++
			m.AppsCompleted++
		case records.AppRunning:
			m.AppsRunning++
		default:
			m.AppsPending++
		}
	}
	for _, n := range snap.Nodes() {
		m.TotalNodes++
		switch n.State {
		case records.NodeRunning, records.NodeNew:
			m.ActiveNodes++
			m.TotalMB += n.Capability.MemoryMB
			m.TotalVirtualCores += int64(n.Capability.VCores)
			m.AllocatedMB += n.Used.MemoryMB
			m.AllocatedVirtualCores += int64(n.Used.VCores)
			m.ContainersAllocated += n.NumContainers
		case records.NodeLost:
			m.LostNodes++
		case records.NodeUnhealthy:
			m.UnhealthyNodes++
		case records.NodeDecommissioning:
			m.DecommissioningNodes++
		case records.NodeDecommissioned:
			m.DecommissionedNodes++
		case records.NodeRebooted:
			m.RebootedNodes++
		case records.NodeShutdown:
			m.ShutdownNodes++
		}
	}
	m.AvailableMB, m.AvailableVirtualCores = m.TotalMB-m.AllocatedMB, m.TotalVirtualCores-m.AllocatedVirtualCores
	// The CapacityScheduler's totals over all partitions: Weft has the one
	// default partition, so they are the cluster's.
	m.CrossPartitionMetricsAvailable = true
	m.TotalUsedResourcesAcrossPartition = dao.NewResource(m.AllocatedMB, int32(m.AllocatedVirtualCores))
	m.TotalClusterResourcesAcrossPartition = dao.NewResource(m.TotalMB, int32(m.TotalVirtualCores))
	m.TotalReservedResourcesAcrossPartition = dao.NewResource(0, 0)
	m.TotalAllocatedContainersAcrossPartition = m.ContainersAllocated
	return m
}

func (h *handler) scheduler(w http.ResponseWriter, r *http.Request) {
	info := h.schedulerInfo(h.mgr.Snapshot())
	if info == nil {
		writeError(w, r, notFound("no root queue"))
		return
	}
	dao.Write(w, r, http.StatusOK, &dao.SchedulerTypeInfo{SchedulerInfo: info})
}

// schedulerInfo is /ws/v1/cluster/scheduler's schedulerInfo over snap, or
// nil when the tree has no root queue; the web UI's scheduler page draws
// the same.
func (h *handler) schedulerInfo(snap *state.Snapshot) *dao.CapacitySchedulerInfo {
	root, ok := h.mgr.Queues().Queue("root")
	if !ok {
		return nil
	}
	info := &dao.CapacitySchedulerInfo{Capacity: dao.Float32(root.Capacity), MaxCapacity: dao.Float32(root.MaxCapacity),
		QueueName: root.Name, QueuePath: root.Path, MaxParallelApps: 2147483647,
		Queues: &dao.CapacitySchedulerQueueInfoList{}}
	v := queueView{snap: snap, nowMs: h.opts.Now().UnixMilli()}
	for _, n := range snap.Nodes(records.NodeRunning) {
		v.cluster = v.cluster.Add(n.Capability)
	}
	for _, path := range root.Children {
		if child, ok := h.mgr.Queues().Queue(path); ok {
			info.Queues.Queue = append(info.Queues.Queue, h.queueInfo(v, child, 1, 1))
		}
	}
	return info
}

// queueView is what a queue subtree holds, for its scheduler page.
type queueView struct {
	snap *state.Snapshot
	// cluster is the running nodes' capacity; now the usage instant.
	cluster records.Resource
	nowMs   int64
}

// queueInfo renders a queue subtree as the CapacityScheduler does;
// parentAbs and parentAbsMax are the parent's absolute capacity and
// absolute maximum capacity as fractions of the cluster (a queue's
// absolute maximum is its maximum share of its parent's absolute maximum,
// as CSQueueUtils computes it, not of its parent's guarantee). Used capacities are by memory, as its default resource
// calculator measures them.
func (h *handler) queueInfo(v queueView, q *records.Queue, parentAbs, parentAbsMax float32) *dao.CapacitySchedulerQueueInfo {
	abs, absMax := parentAbs*q.Capacity/100, parentAbsMax*q.MaxCapacity/100
	info := &dao.CapacitySchedulerQueueInfo{Capacity: dao.Float32(q.Capacity), MaxCapacity: dao.Float32(q.MaxCapacity),
		AbsoluteCapacity: dao.Float32(abs * 100), AbsoluteMaxCapacity: dao.Float32(absMax * 100),
		QueueName: q.Name, QueuePath: q.Path, State: q.State, MaxParallelApps: 2147483647, QueueType: "parent"}
	max := h.mgr.MaximumAllocation()
	info.MaximumAllocation = dao.NewResourceInfo(max.MemoryMB, max.VCores)
	info.QueueAcls = dao.QueueAclsInfo{QueueACL: []dao.QueueAclInfo{{AccessType: "ADMINISTER_QUEUE", AccessControlList: aclOrNone(q.AdminACL)},
		{AccessType: "APPLICATION_MAX_PRIORITY", AccessControlList: "*"}, {AccessType: "SUBMIT_APP", AccessControlList: aclOrNone(q.SubmitACL)}}}
	var used, amUsed, pending records.Resource
	var leaf *dao.LeafQueueInfo
	if q.Leaf() {
		leaf = &dao.LeafQueueInfo{UserLimit: 100, UserLimitFactor: 1, MaxApplications: 10000, MaxApplicationsPerUser: 10000,
			IntraQueuePreemptionDisabled: true}
		if q.UserLimitPercent > 0 {
			leaf.UserLimit = dao.Float32(q.UserLimitPercent)
		}
		// Each user's applications, and what they hold.
		type userUse struct {
			info     dao.UserInfo
			used, am records.Resource
		}
		users := map[string]*userUse{}
		var names []string
		for _, a := range v.snap.Applications(state.ApplicationFilter{Queues: []string{q.Name}}) {
			if a.State.Terminal() {
				continue
			}
			info.NumApplications++
			u := users[a.User]
			if u == nil {
				u = &userUse{info: dao.UserInfo{Username: a.User, UserWeight: 1}}
				users[a.User] = u
				names = append(names, a.User)
			}
			if a.State == records.AppRunning {
				leaf.NumActiveApplications++
				u.info.NumActiveApplications++
				u.info.IsActive = true
			} else {
				leaf.NumPendingApplications++
				u.info.NumPendingApplications++
			}
			containers := v.snap.ContainersOfApp(a.ID)
			au := records.UsageOf(containers, v.nowMs)
			used = used.Add(au.Allocated)
			info.AllocatedContainers += int64(au.Containers)
			leaf.NumContainers += au.Containers
			var am records.Resource
			for _, c := range containers {
				if c.ID.ID == 1 && c.State != records.ContainerComplete {
					am = am.Add(c.Resource)
				}
			}
			amUsed = amUsed.Add(am)
			u.used, u.am = u.used.Add(au.Allocated), u.am.Add(am)
			// The users' own pending stays 0: the CapacityScheduler adds
			// asks to the queue's usage and metrics, not to its users'
			// (a 3.4.1 RM reports a user's pending 0 beside its queue's).
			n, r := h.pendingOf(a, containers)
			info.PendingContainers += n
			pending = pending.Add(r)
		}
		sort.Strings(names)
		for _, name := range names {
			u := users[name]
			u.info.ResourcesUsed = dao.NewResourceInfo(u.used.MemoryMB, u.used.VCores)
			u.info.AMResourceUsed = dao.NewResourceInfo(u.am.MemoryMB, u.am.VCores)
			u.info.Resources = partitionUsage(u.used, u.am, records.Resource{})
			leaf.Users.User = append(leaf.Users.User, u.info)
		}
		info.QueueType, info.LeafQueueInfo = "leaf", leaf
	} else {
		info.Queues = &dao.CapacitySchedulerQueueInfoList{}
		for _, path := range q.Children {
			if child, ok := h.mgr.Queues().Queue(path); ok {
				ci := h.queueInfo(v, child, abs, absMax)
				info.NumApplications += ci.NumApplications
				info.AllocatedContainers += ci.AllocatedContainers
				used = used.Add(records.Resource{MemoryMB: ci.ResourcesUsed.Memory, VCores: ci.ResourcesUsed.VCores})
				// A parent's pending is its children's, as a queue adds
				// each change of its pending to its parent's
				// (AbstractCSQueue.incPendingResource).
				info.PendingContainers += ci.PendingContainers
				if parts := ci.Resources.ResourceUsagesByPartition; len(parts) > 0 {
					pending = pending.Add(records.Resource{MemoryMB: parts[0].Pending.Memory, VCores: parts[0].Pending.VCores})
				}
				info.Queues.Queue = append(info.Queues.Queue, ci)
			}
		}
	}
	info.ResourcesUsed = dao.NewResourceInfo(used.MemoryMB, used.VCores)
	if v.cluster.MemoryMB > 0 {
		info.AbsoluteUsedCapacity = dao.Float32(float32(used.MemoryMB) / float32(v.cluster.MemoryMB) * 100)
		if abs > 0 {
			info.UsedCapacity = dao.Float32(float32(used.MemoryMB) / (abs * float32(v.cluster.MemoryMB)) * 100)
		}
	}
	info.Capacities = dao.QueueCapacitiesInfo{QueueCapacitiesByPartition: []dao.PartitionQueueCapacitiesInfo{{
		Capacity: info.Capacity, UsedCapacity: info.UsedCapacity, MaxCapacity: info.MaxCapacity, AbsoluteCapacity: info.AbsoluteCapacity,
		AbsoluteUsedCapacity: info.AbsoluteUsedCapacity, AbsoluteMaxCapacity: info.AbsoluteMaxCapacity, MaxAMLimitPercentage: 10,
		Weight: -1, NormalizedWeight: 0,
		ConfiguredMinResource: dao.NewResourceInfo(0, 0), ConfiguredMaxResource: dao.NewResourceInfo(0, 0),
		EffectiveMinResource: dao.NewResourceInfo(int64(abs*float32(v.cluster.MemoryMB)), int32(abs*float32(v.cluster.VCores))),
		EffectiveMaxResource: dao.NewResourceInfo(int64(parentAbs*q.MaxCapacity/100*float32(v.cluster.MemoryMB)),
			int32(parentAbs*q.MaxCapacity/100*float32(v.cluster.VCores))),
	}}}
	if leaf != nil {
		info.Resources = partitionUsage(used, amUsed, pending)
	} else {
		info.Resources = dao.ResourcesInfo{ResourceUsagesByPartition: []dao.PartitionResourcesInfo{{
			Used: info.ResourcesUsed, Reserved: dao.NewResourceInfo(0, 0), Pending: dao.NewResourceInfo(pending.MemoryMB, pending.VCores)}}}
	}
	return info
}

// pendingOf is what an unfinished application has asked for and not been
// granted, as the CapacityScheduler counts it into its queue's pending
// resources and pendingContainers (AppSchedulingInfo adds each
// outstanding ResourceRequest when the AM asks, and takes it off as
// containers are allocated): the outstanding asks of its current
// attempt's AM (Options.Asks), and, while an ACCEPTED application waits
// for it, its AM container — the AM's ResourceRequest, which YARN's RM
// places for the attempt when it is scheduled. An unmanaged AM runs
// outside the cluster: it waits for nothing.
func (h *handler) pendingOf(a *records.Application, containers []*records.Container) (n int64, r records.Resource) {
	if a.State.Terminal() || a.CurrentAttempt == 0 {
		return 0, r
	}
	attempt := records.AttemptID{App: a.ID, ID: a.CurrentAttempt}
	if h.opts.Asks != nil {
		asked, res := h.opts.Asks(attempt)
		n, r = int64(asked), res
	}
	if a.State == records.AppAccepted && !a.UnmanagedAM &&
		!slices.ContainsFunc(containers, func(c *records.Container) bool { return c.ID.ID == 1 && c.ID.Attempt == attempt }) {
		n, r = n+1, r.Add(a.AMResource)
	}
	return n, r
}

// partitionUsage is a leaf's, a user's or an application's usage in the
// default partition, the one Weft has.
func partitionUsage(used, amUsed, pending records.Resource) dao.ResourcesInfo {
	return dao.ResourcesInfo{ResourceUsagesByPartition: []dao.PartitionResourcesInfo{{
		Used: dao.NewResourceInfo(used.MemoryMB, used.VCores), Reserved: dao.NewResourceInfo(0, 0), Pending: dao.NewResourceInfo(pending.MemoryMB, pending.VCores),
		AMUsed: dao.NewResource(amUsed.MemoryMB, amUsed.VCores), AMLimit: dao.NewResource(0, 0), UserAMLimit: dao.NewResource(0, 0)}}}
}

// aclOrNone is an ACL as the RM lists it: " " for no one.
func aclOrNone(acl string) string {
	if acl == "" {
		return " "
	}
	return acl
}

func (h *handler) appInfo(a *records.Application) *dao.AppInfo {
	return h.appInfoIn(h.mgr.Snapshot(), a)
}

// appInfoIn is the REST application as of snap, so that a page showing
// many applications reads one view of the store.
func (h *handler) appInfoIn(snap *state.Snapshot, a *records.Application) *dao.AppInfo {
	return h.appInfoFrom(h.newAppView(snap), a)
}

// appView is what the applications of one answer are rendered from: one
// snapshot, one instant (every running application's elapsed time and
// resource-seconds are taken at it), and the queue paths looked up once
// each rather than once per application.
type appView struct {
	snap  *state.Snapshot
	nowMs int64
	paths map[string]string
	// byApp holds every container by application when the answer lists
	// many; nil, each application's are looked up.
	byApp map[records.ApplicationID][]*records.Container
}

func (h *handler) newAppView(snap *state.Snapshot) *appView {
	return &appView{snap: snap, nowMs: h.opts.Now().UnixMilli(), paths: map[string]string{}}
}

// manyApps is the listing size from which reading the whole container
// table once (ContainersByApp) beats a lookup per application: a lookup
// costs about as much as reading a dozen containers in a pass, so with
// 100,000 containers the pass costs a few milliseconds more than the
// lookups at this size and saves ten times that at 10,000 applications.
const manyApps = 1000

func (v *appView) containersOf(id records.ApplicationID) []*records.Container {
	if v.byApp != nil {
		return v.byApp[id]
	}
	return v.snap.ContainersOfApp(id)
}

func (h *handler) queuePathIn(v *appView, name string) string {
	p, ok := v.paths[name]
	if !ok {
		p = h.mgr.QueuePath(name)
		v.paths[name] = p
	}
	return p
}

// appInfoFrom is the REST application as v shows it.
func (h *handler) appInfoFrom(v *appView, a *records.Application) *dao.AppInfo {
	info := &dao.AppInfo{}
	h.fillAppInfo(v, a, info)
	return info
}

// fillAppInfo overwrites info with the REST application as v shows it,
// so that a listing made while it is written reuses one AppInfo.
func (h *handler) fillAppInfo(v *appView, a *records.Application, info *dao.AppInfo) {
	end := a.FinishTime
	if end == 0 {
		end = v.nowMs
	}
	*info = dao.AppInfo{ID: a.ID.String(), User: a.User, Name: a.Name, Queue: h.queuePathIn(v, a.Queue), State: string(a.State),
		FinalStatus: string(a.FinalStatus), Progress: dao.Float32(a.Progress * 100), TrackingUI: "UNASSIGNED", Diagnostics: a.Diagnostics,
		ClusterID: a.ID.ClusterTimestamp, ApplicationType: a.Type, ApplicationTags: strings.Join(a.Tags, ","), Priority: a.Priority,
		StartedTime: a.StartTime, LaunchTime: a.LaunchTime, FinishedTime: a.FinishTime, ElapsedTime: end - a.StartTime,
		LogAggregationStatus: "DISABLED", UnmanagedApplication: a.UnmanagedAM,
		PreemptedResourceSecondsMap: dao.LongMap{{Key: "memory-mb", Value: 0}, {Key: "vcores", Value: 0}},
		Timeouts:                    dao.UnlimitedLifetime()}
	if h.opts.Progress != nil && a.AMReportsProgress() {
		if p, ok := h.opts.Progress(records.AttemptID{App: a.ID, ID: a.CurrentAttempt}); ok {
			info.Progress = dao.Float32(p * 100)
		}
	}
	containers := v.containersOf(a.ID)
	u := records.UsageOf(containers, v.nowMs)
	info.RunningContainers, info.AllocatedMB, info.AllocatedVCores = u.Containers, u.Allocated.MemoryMB, int64(u.Allocated.VCores)
	info.MemorySeconds, info.VcoreSeconds = u.MemorySeconds, u.VcoreSeconds
	info.ResourceSecondsMap = dao.LongMap{{Key: "memory-mb", Value: u.MemorySeconds}, {Key: "vcores", Value: u.VcoreSeconds}}
	if !a.UnmanagedAM {
		info.AMNodeLabelExpression = dao.Ptr("") // the default partition, as the RM fills it for a submission over RPC
	}
	if !a.State.Terminal() && a.CurrentAttempt > 0 {
		// Usage by partition while the attempt is in the scheduler: Weft
		// has the default partition only.
		var am records.Resource
		for _, c := range containers {
			if c.ID.ID == 1 && c.ID.Attempt.ID == a.CurrentAttempt && c.State != records.ContainerComplete {
				am = c.Resource
			}
		}
		_, pending := h.pendingOf(a, containers)
		usage := partitionUsage(u.Allocated, am, pending)
		info.ResourceInfo = &usage
	}
	// Preemption victims (notified or killed), as the RM counts them.
	for _, c := range containers {
		if c.PreemptDeadline == 0 {
			continue
		}
		if c.ID.ID == 1 {
			info.NumAMContainerPreempted++
		} else {
			info.NumNonAMContainerPreempted++
		}
		info.PreemptedResourceMB += c.Resource.MemoryMB
		info.PreemptedResourceVCores += int64(c.Resource.VCores)
	}
	if a.Host != "" {
		info.AMRPCAddress = a.Host + ":" + strconv.Itoa(int(a.RPCPort))
	}
	// The AM container's node serves its logs, as a NodeManager does.
	if a.CurrentAttempt > 0 {
		am := records.ContainerID{Attempt: records.AttemptID{App: a.ID, ID: a.CurrentAttempt}, ID: 1}
		if i := slices.IndexFunc(containers, func(c *records.Container) bool { return c.ID == am }); i >= 0 && containers[i].NodeHTTP != "" {
			c := containers[i]
			info.AMHostHTTPAddress = c.NodeHTTP
			info.AMContainerLogs = c.LogsURL(a.User)
		}
	}
	if a.State.Terminal() {
		// A finished application holds nothing; the RM reports -1.
		info.AllocatedMB, info.AllocatedVCores, info.ReservedMB, info.ReservedVCores, info.RunningContainers = -1, -1, -1, -1, -1
	}
	info.TrackingUI, info.TrackingURL = h.tracking(a)
}

// tracking is an application's tracking UI and URL as a 3.4 RM gives
// them: none ("UNASSIGNED") until an AM registers; then the RM's proxy
// for it ("ApplicationMaster", "History" once it ended), which forwards
// to what the AM named; for one that ended without an AM, the RM's own
// page. An unmanaged AM's URL is its own.
func (h *handler) tracking(a *records.Application) (ui, url string) {
	registered := a.LaunchTime != 0 || a.OriginalTrackingURL != ""
	ui = "ApplicationMaster"
	if a.State.Terminal() {
		ui = "History"
	}
	switch {
	case h.opts.WebAddr == "" || a.UnmanagedAM:
		if a.TrackingURL == "" {
			return "UNASSIGNED", ""
		}
		return ui, a.TrackingURL
	case registered:
		return ui, "http://" + h.opts.WebAddr + "/proxy/" + a.ID.String() + "/"
	case a.State.Terminal():
		return ui, "http://" + h.opts.WebAddr + "/cluster/app/" + a.ID.String()
	}
	return "UNASSIGNED", ""
}

// appFilter parses the /apps query as YARN does, rejecting bad values.
func appFilter(r *http.Request) (state.ApplicationFilter, error) {
	q := r.URL.Query()
	var f state.ApplicationFilter
	list := func(name string) []string {
		var out []string
		for _, v := range q[name] {
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
		}
		return out
	}
	for _, s := range append(list("states"), list("state")...) {
		st := records.AppState(strings.ToUpper(s))
		valid := false
		for _, known := range records.AllAppStates {
			valid = valid || known == st
		}
		if !valid {
			return f, badRequest("Invalid application-state %s specified. It should be one of %v", s, records.AllAppStates)
		}
		f.States = append(f.States, st)
	}
	f.Users, f.Queues = list("user"), list("queue")
	f.Types, f.Tags = list("applicationTypes"), list("applicationTags")
	f.Name = q.Get("name")
	num := func(name string) (int64, error) {
		v := q.Get(name)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, badRequest("%s must be greater than 0", name)
		}
		return n, nil
	}
	var err error
	var limit int64
	if limit, err = num("limit"); err != nil {
		return f, err
	}
	if q.Get("limit") != "" && limit == 0 {
		return f, badRequest("limit value must be greater then 0")
	}
	f.Limit = int(limit)
	for name, dst := range map[string]*int64{"startedTimeBegin": &f.StartedBegin, "startedTimeEnd": &f.StartedEnd,
		"finishedTimeBegin": &f.FinishedBegin, "finishedTimeEnd": &f.FinishedEnd} {
		if *dst, err = num(name); err != nil {
			return f, err
		}
	}
	if f.StartedEnd > 0 && f.StartedBegin > f.StartedEnd {
		return f, badRequest("startedTimeEnd must be greater than startTimeBegin")
	}
	if f.FinishedEnd > 0 && f.FinishedBegin > f.FinishedEnd {
		return f, badRequest("finishedTimeEnd must be greater than finishedTimeBegin")
	}
	return f, nil
}

func (h *handler) apps(w http.ResponseWriter, r *http.Request) {
	f, err := appFilter(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	finals := map[string]bool{}
	for _, s := range strings.Split(r.URL.Query().Get("finalStatus"), ",") {
		if s != "" {
			finals[strings.ToUpper(s)] = true
		}
	}
	v := h.newAppView(h.mgr.Snapshot())
	apps := v.snap.Applications(f)
	if len(apps) >= manyApps {
		v.byApp = v.snap.ContainersByApp()
	}
	// A finished application's JSON is kept from one listing to the next
	// (encodedApps); an XML answer is collected from the fields instead.
	asJSON := !dao.PrefersXML(r)
	// Made while written: every application the RM retains may be listed.
	dao.Write(w, r, http.StatusOK, dao.AppsStream(func(yield func(*dao.AppInfo) bool) {
		var info dao.AppInfo
		for _, a := range apps {
			if len(finals) > 0 && !finals[string(a.FinalStatus)] {
				continue
			}
			if containers := v.containersOf(a.ID); asJSON && encodable(a, containers) {
				queue := h.queuePathIn(v, a.Queue)
				if b := h.encoded.get(a, containers, queue); b != nil {
					info = dao.AppInfo{Encoded: b}
				} else {
					h.fillAppInfo(v, a, &info)
					b = info.AppendJSON(nil)
					h.encoded.put(a, containers, queue, b)
					info = dao.AppInfo{Encoded: b}
				}
			} else {
				h.fillAppInfo(v, a, &info)
			}
			if !yield(&info) {
				return
			}
		}
	}))
	h.encoded.sweep(v.snap)
}

// application resolves the {appid} path variable.
func (h *handler) application(r *http.Request) (*records.Application, error) {
	raw := mux.Vars(r)["appid"]
	id, err := records.ParseApplicationID(raw)
	if err != nil {
		return nil, badRequest("Invalid ApplicationId: %s", raw)
	}
	a := h.mgr.Snapshot().Application(id)
	if a == nil {
		return nil, notFound("app with id: %s not found", raw)
	}
	return a, nil
}

func (h *handler) app(w http.ResponseWriter, r *http.Request) {
	a, err := h.application(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	dao.Write(w, r, http.StatusOK, h.appInfo(a))
}

// Views of one application field, for GET and for the answer to a PUT.
func stateView(a *records.Application) any    { return &dao.AppState{State: string(a.State)} }
func priorityView(a *records.Application) any { return &dao.AppPriority{Priority: a.Priority} }

// queueView answers with the queue's full path, as Hadoop 3.4 does.
func (h *handler) queueView(a *records.Application) any {
	return &dao.AppQueue{Queue: h.mgr.QueuePath(a.Queue)}
}

// appView serves GET of one application field.
func (h *handler) appView(view func(*records.Application) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := h.application(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		dao.Write(w, r, http.StatusOK, view(a))
	}
}

// update serves a PUT that changes an application: the caller must name
// itself (user.name), change applies the request body, and the answer is
// view of the application as stored afterwards.
func (h *handler) update(view func(*records.Application) any,
	change func(r *http.Request, a *records.Application, user string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := h.application(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		user := remoteUser(r)
		if err := change(r, a, user); err != nil {
			writeError(w, r, err)
			return
		}
		if a, err = h.application(r); err != nil {
			writeError(w, r, err)
			return
		}
		dao.Write(w, r, http.StatusOK, view(a))
	}
}

// killApp is RMWebServices.updateAppState: KILLED is the only target; an
// application KILLED already answers 200 with its state, any other is
// killed and answers 202 with the state the kill found (the RM's kill is
// asynchronous, so a client polls the state resource) and a Location
// header naming that resource.
func (h *handler) killApp(w http.ResponseWriter, r *http.Request) {
	a, err := h.application(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	user := remoteUser(r)
	var target dao.AppState
	if err := dao.Read(r, &target); err != nil {
		writeError(w, r, err)
		return
	}
	if strings.ToUpper(target.State) != string(records.AppKilled) {
		writeError(w, r, badRequest("Only '%s' is allowed as a target state.", records.AppKilled))
		return
	}
	if a.State == records.AppKilled {
		dao.Write(w, r, http.StatusOK, stateView(a))
		return
	}
	diag := r.URL.Query().Get("diagnostics")
	if diag == "" {
		diag = fmt.Sprintf("Application %s was killed by user %s", a.ID, user)
	}
	if _, err := h.mgr.Kill(r.Context(), a.ID, user, diag); err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "http://"+r.Host+r.URL.RequestURI())
	dao.Write(w, r, http.StatusAccepted, stateView(a))
}

func (h *handler) moveApp(r *http.Request, a *records.Application, user string) error {
	var target dao.AppQueue
	if err := dao.Read(r, &target); err != nil {
		return err
	}
	return h.mgr.Move(r.Context(), a.ID, user, target.Queue)
}

func (h *handler) prioritizeApp(r *http.Request, a *records.Application, user string) error {
	var target dao.AppPriority
	if err := dao.Read(r, &target); err != nil {
		return err
	}
	_, err := h.mgr.UpdatePriority(r.Context(), a.ID, user, target.Priority)
	return err
}

func (h *handler) appAttempts(w http.ResponseWriter, r *http.Request) {
	a, err := h.application(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	resp := &dao.AppAttemptsInfo{}
	snap := h.mgr.Snapshot()
	for _, att := range snap.AttemptsOf(a.ID) {
		info := &dao.AppAttemptInfo{ID: att.ID.ID, StartTime: att.StartTime, FinishedTime: att.FinishTime,
			ContainerID: att.AMContainer, AppAttemptID: att.ID.String(), AppAttemptState: string(att.State)}
		// Where its AM container ran, as YARN's AppAttemptInfo reads its
		// master container: for a finished attempt too, whose logs are
		// where a user looks first.
		if c := snap.Container(records.ContainerID{Attempt: att.ID, ID: 1}); c != nil && c.Node != "" {
			info.NodeID, info.NodeHTTPAddress, info.LogsLink = c.Node, c.NodeHTTP, c.LogsURL(a.User)
		}
		resp.AppAttempt = append(resp.AppAttempt, info)
	}
	dao.Write(w, r, http.StatusOK, resp)
}

func (h *handler) newApplication(w http.ResponseWriter, r *http.Request) {
	id := h.mgr.NewApplicationID()
	max := h.mgr.MaximumAllocation()
	dao.Write(w, r, http.StatusOK, &dao.NewApplication{ApplicationID: id.String(), MaximumResourceCapability: dao.NewResourceInfo(max.MemoryMB, max.VCores)})
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	user := remoteUser(r)
	sc := dao.NewApplicationSubmissionContextInfo()
	if err := dao.Read(r, sc); err != nil {
		writeError(w, r, err)
		return
	}
	id, err := records.ParseApplicationID(sc.ApplicationID)
	if err != nil {
		writeError(w, r, badRequest("Invalid ApplicationId: %s", sc.ApplicationID))
		return
	}
	pb, err := submissionProto(sc, id)
	if err != nil {
		writeError(w, r, badRequest("%v", err))
		return
	}
	raw, err := proto.Marshal(pb)
	if err != nil {
		writeError(w, r, err)
		return
	}
	err = h.mgr.Submit(r.Context(), rm.Submission{ID: id, Name: pb.GetApplicationName(), User: user, Queue: pb.GetQueue(),
		Type: pb.GetApplicationType(), Tags: pb.GetApplicationTags(), Priority: max(sc.Priority, 0),
		AMResource: records.Resource{MemoryMB: sc.Resource.Memory, VCores: sc.Resource.VCores}, MaxAttempts: sc.MaxAppAttempts,
		UnmanagedAM: sc.UnmanagedAM, KeepContainers: sc.KeepContainers, Raw: raw})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "http://"+r.Host+"/ws/v1/cluster/apps/"+id.String())
	w.WriteHeader(http.StatusAccepted)
}

func (h *handler) nodeInfo(n *records.Node) *dao.NodeInfo {
	avail := records.Resource{MemoryMB: n.Capability.MemoryMB - n.Used.MemoryMB, VCores: n.Capability.VCores - n.Used.VCores}
	return &dao.NodeInfo{Rack: n.Rack, State: string(n.State), ID: n.ID, NodeHostName: n.Host, NodeHTTPAddress: n.HTTPAddress,
		LastHealthUpdate: n.LastHealthUpdate, Version: HadoopVersion, HealthReport: n.HealthReport, NumContainers: n.NumContainers,
		UsedMemoryMB: n.Used.MemoryMB, AvailMemoryMB: avail.MemoryMB, UsedVirtualCores: int64(n.Used.VCores), AvailableVirtualCores: int64(avail.VCores),
		NodeLabels: n.Labels, TotalResource: dao.NewResourceInfo(n.Capability.MemoryMB, n.Capability.VCores),
		UsedResource: dao.NewResource(n.Used.MemoryMB, n.Used.VCores), AvailableResource: dao.NewResource(avail.MemoryMB, avail.VCores),
		ResourceUtilization: resourceUtilization(n.Utilization)}
}

// resourceUtilization is the node's measured use as a real RM shows what
// its NodeManager last reported (nodeUtilization and the containers'), or
// nil where no agent measures the node. Kubernetes nodes run without swap,
// so the virtual memory in use is the physical.
func resourceUtilization(u *records.NodeUtilization) *dao.ResourceUtilizationInfo {
	if u == nil {
		return nil
	}
	return &dao.ResourceUtilizationInfo{
		NodePhysicalMemoryMB: int32(u.PhysicalMemoryMB), NodeVirtualMemoryMB: int32(u.PhysicalMemoryMB), NodeCPUUsage: dao.Float64(u.CPU),
		AggregatedContainersPhysicalMemoryMB: int32(u.ContainersPhysicalMemoryMB), AggregatedContainersVirtualMemoryMB: int32(u.ContainersPhysicalMemoryMB),
		ContainersCPUUsage: dao.Float64(u.ContainersVCores)}
}

func (h *handler) nodes(w http.ResponseWriter, r *http.Request) {
	var states []records.NodeState
	for _, s := range strings.Split(r.URL.Query().Get("states"), ",") {
		if s = strings.ToUpper(strings.TrimSpace(s)); s != "" {
			states = append(states, records.NodeState(s))
		}
	}
	resp := &dao.NodesInfo{}
	for _, n := range h.mgr.Snapshot().Nodes(states...) {
		resp.Node = append(resp.Node, h.nodeInfo(n))
	}
	dao.Write(w, r, http.StatusOK, resp)
}

func (h *handler) node(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["nodeid"]
	n := h.mgr.Snapshot().Node(id)
	if n == nil {
		writeError(w, r, notFound("nodeId, %s, is not found", id))
		return
	}
	dao.Write(w, r, http.StatusOK, h.nodeInfo(n))
}

// proxy sends a browser to the application's own UI once its AM names
// one; once it ended, to the history its AM named when it unregistered
// (a JobHistory or Spark History Server page), as YARN's proxy follows the
// final tracking URL; to the RM's application page otherwise.
func (h *handler) proxy(w http.ResponseWriter, r *http.Request) {
	a, err := h.application(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	target := "/cluster/app/" + a.ID.String()
	switch {
	case !a.State.Terminal():
		if a.OriginalTrackingURL != "" {
			target = a.OriginalTrackingURL
		}
	default:
		if att := h.mgr.Snapshot().Attempt(records.AttemptID{App: a.ID, ID: a.CurrentAttempt}); att != nil && att.TrackingURL != "" {
			target = att.TrackingURL
		}
	}
	http.Redirect(w, r, target, http.StatusFound)
}
