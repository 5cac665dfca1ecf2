// Package rest serves the ResourceManager's REST API (/ws/v1/cluster/...)
// and a small web UI on the RM web port, shaped as YARN's RMWebServices so
// that REST clients and scripts written for YARN work unchanged.
package rest

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"google.golang.org/protobuf/proto"

	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// HadoopVersion is the Hadoop version Weft reports itself compatible with.
const HadoopVersion = "3.4.1"

// Options configures the handler.
type Options struct {
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

type handler struct {
	mgr  *rm.Manager
	opts Options
}

// NewHandler returns the RM web handler.
func NewHandler(mgr *rm.Manager, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
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
	api.HandleFunc("/apps/{appid}/state", h.update(stateView, h.killApp)).Methods(http.MethodPut)
	api.HandleFunc("/apps/{appid}/queue", h.appView(queueView)).Methods(http.MethodGet)
	api.HandleFunc("/apps/{appid}/queue", h.update(queueView, h.moveApp)).Methods(http.MethodPut)
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
		writeError(w, r, &restError{status: http.StatusMethodNotAllowed, exception: "WebApplicationException",
			class: "javax.ws.rs.WebApplicationException", message: r.Method + " is not supported on " + r.URL.Path})
	})
	r.HandleFunc("/proxy/{appid}/", h.proxy)
	h.registerUI(r)
	return r
}

type routePrefix struct {
	r      *mux.Router
	prefix string
}

func (p routePrefix) HandleFunc(path string, f http.HandlerFunc) *mux.Route {
	return p.r.HandleFunc(p.prefix+path, f)
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// remoteUser is the caller under simple HTTP authentication: the
// user.name query parameter, as Hadoop's PseudoAuthenticationHandler reads it.
func remoteUser(r *http.Request) string { return r.URL.Query().Get("user.name") }

func (h *handler) info(w http.ResponseWriter, r *http.Request) {
	ts := h.mgr.ClusterTimestamp()
	info := clusterInfo{ID: ts, StartedOn: h.mgr.StartedAt(), State: "STARTED", HAState: "ACTIVE",
		RMStateStoreName: "weft.rmfacade.state.BoltDurable", ResourceManagerVersion: HadoopVersion, ResourceManagerBuild: HadoopVersion + " from weft",
		ResourceManagerBuiltOn: "", HadoopVersion: HadoopVersion, HadoopBuildVersion: HadoopVersion + " from weft", HAZooKeeperConnectionState: "ResourceManager HA is not enabled."}
	write(w, r, http.StatusOK, clusterInfoResponse{ClusterInfo: info}, info)
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	snap := h.mgr.Snapshot()
	var m clusterMetrics
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
			m.ContainersAllocated += int(n.NumContainers)
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
	write(w, r, http.StatusOK, clusterMetricsResponse{ClusterMetrics: m}, m)
}

func (h *handler) scheduler(w http.ResponseWriter, r *http.Request) {
	snap := h.mgr.Snapshot()
	root, ok := h.mgr.Queues().Queue("root")
	if !ok {
		writeError(w, r, notFound("no root queue"))
		return
	}
	info := h.queueInfo(snap, root, 1)
	info.Type = "capacityScheduler"
	write(w, r, http.StatusOK, schedulerResponse{Scheduler: schedulerWrap{SchedulerInfo: info}},
		struct {
			XMLName struct{}   `xml:"scheduler"`
			Info    *queueInfo `xml:"schedulerInfo"`
		}{Info: info})
}

// queueInfo renders a queue subtree; parentAbs is the parent's absolute
// capacity as a fraction of the cluster.
func (h *handler) queueInfo(snap *state.Snapshot, q *records.Queue, parentAbs float32) *queueInfo {
	abs := parentAbs * q.Capacity / 100
	info := &queueInfo{Capacity: q.Capacity, MaxCapacity: q.MaxCapacity, AbsoluteCapacity: abs * 100,
		AbsoluteMaxCapacity: parentAbs * q.MaxCapacity, QueueName: q.Name, QueuePath: q.Path, State: q.State}
	if q.Leaf() {
		info.Type = "capacitySchedulerLeafQueueInfo"
		for _, a := range snap.Applications(state.ApplicationFilter{Queues: []string{q.Name}}) {
			if a.State.Terminal() {
				continue
			}
			info.NumApplications++
			if a.State == records.AppRunning {
				info.NumActiveApps++
			} else {
				info.NumPendingApps++
			}
		}
		return info
	}
	info.Queues = &queuesList{}
	for _, path := range q.Children {
		if child, ok := h.mgr.Queues().Queue(path); ok {
			ci := h.queueInfo(snap, child, abs)
			info.NumApplications += ci.NumApplications
			info.Queues.Queue = append(info.Queues.Queue, ci)
		}
	}
	return info
}

func (h *handler) appInfo(a *records.Application) *appInfo {
	end := a.FinishTime
	if end == 0 {
		end = h.opts.Now().UnixMilli()
	}
	info := &appInfo{ID: a.ID.String(), User: a.User, Name: a.Name, Queue: a.Queue, State: string(a.State),
		FinalStatus: string(a.FinalStatus), Progress: a.Progress * 100, TrackingUI: "UNASSIGNED", Diagnostics: a.Diagnostics,
		ClusterID: a.ID.ClusterTimestamp, ApplicationType: a.Type, ApplicationTags: strings.Join(a.Tags, ","), Priority: a.Priority,
		StartedTime: a.StartTime, LaunchTime: a.LaunchTime, FinishedTime: a.FinishTime, ElapsedTime: end - a.StartTime,
		LogAggregationStatus: "DISABLED", UnmanagedApplication: a.UnmanagedAM, SubmittedTime: a.SubmitTime}
	if a.Host != "" {
		info.AMRPCAddress = fmt.Sprintf("%s:%d", a.Host, a.RPCPort)
	}
	switch {
	case a.State.Terminal() && a.TrackingURL != "":
		info.TrackingUI, info.TrackingURL = "History", a.TrackingURL
	case a.TrackingURL != "":
		info.TrackingUI, info.TrackingURL = "ApplicationMaster", a.TrackingURL
	}
	return info
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
	var out []*appInfo
	for _, a := range h.mgr.Snapshot().Applications(f) {
		if len(finals) == 0 || finals[string(a.FinalStatus)] {
			out = append(out, h.appInfo(a))
		}
	}
	resp := appsResponse{XMLApps: out}
	if len(out) > 0 {
		resp.Apps = &appsList{App: out}
	}
	write(w, r, http.StatusOK, resp, resp)
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
	info := h.appInfo(a)
	write(w, r, http.StatusOK, appResponse{App: info}, info)
}

// Views of one application field, for GET and for the answer to a PUT.
func stateView(a *records.Application) any    { return appState{State: string(a.State)} }
func queueView(a *records.Application) any    { return appQueue{Queue: a.Queue} }
func priorityView(a *records.Application) any { return appPriority{Priority: a.Priority} }

// appView serves GET of one application field.
func (h *handler) appView(view func(*records.Application) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, err := h.application(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		v := view(a)
		write(w, r, http.StatusOK, v, v)
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
		if user == "" {
			writeError(w, r, unauthenticated())
			return
		}
		if err := change(r, a, user); err != nil {
			writeError(w, r, err)
			return
		}
		if a, err = h.application(r); err != nil {
			writeError(w, r, err)
			return
		}
		v := view(a)
		write(w, r, http.StatusOK, v, v)
	}
}

func (h *handler) killApp(r *http.Request, a *records.Application, user string) error {
	var target appState
	if err := decode(r, &target); err != nil {
		return err
	}
	if strings.ToUpper(target.State) != string(records.AppKilled) {
		return badRequest("Only '%s' is allowed as a target state.", records.AppKilled)
	}
	diag := r.URL.Query().Get("diagnostics")
	if diag == "" {
		diag = fmt.Sprintf("Application %s was killed by user %s", a.ID, user)
	}
	_, err := h.mgr.Kill(r.Context(), a.ID, user, diag)
	return err
}

func (h *handler) moveApp(r *http.Request, a *records.Application, user string) error {
	var target appQueue
	if err := decode(r, &target); err != nil {
		return err
	}
	return h.mgr.Move(r.Context(), a.ID, user, target.Queue)
}

func (h *handler) prioritizeApp(r *http.Request, a *records.Application, user string) error {
	var target appPriority
	if err := decode(r, &target); err != nil {
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
	var list []*appAttemptInfo
	for _, att := range h.mgr.Snapshot().AttemptsOf(a.ID) {
		list = append(list, &appAttemptInfo{ID: att.ID.ID, StartTime: att.StartTime, FinishedTime: att.FinishTime,
			ContainerID: att.AMContainer, AppAttemptID: att.ID.String(), AppAttemptState: string(att.State)})
	}
	resp := appAttemptsResponse{AppAttempts: appAttemptsList{AppAttempt: list}, XMLAttempts: list}
	write(w, r, http.StatusOK, resp, resp)
}

func (h *handler) newApplication(w http.ResponseWriter, r *http.Request) {
	if remoteUser(r) == "" {
		writeError(w, r, unauthenticated())
		return
	}
	id := h.mgr.NewApplicationID()
	max := h.mgr.MaximumAllocation()
	resp := newApplication{ApplicationID: id.String(), MaxCapability: resourceInfo{Memory: max.MemoryMB, VCores: max.VCores}}
	write(w, r, http.StatusOK, resp, resp)
}

func (h *handler) submit(w http.ResponseWriter, r *http.Request) {
	user := remoteUser(r)
	if user == "" {
		writeError(w, r, unauthenticated())
		return
	}
	var sc submissionContext
	if err := decode(r, &sc); err != nil {
		writeError(w, r, err)
		return
	}
	id, err := records.ParseApplicationID(sc.ApplicationID)
	if err != nil {
		writeError(w, r, badRequest("Invalid ApplicationId: %s", sc.ApplicationID))
		return
	}
	pb, err := sc.toProto(id)
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
		Type: pb.GetApplicationType(), Tags: pb.GetApplicationTags(), Priority: sc.Priority,
		AMResource: records.Resource{MemoryMB: sc.Resource.Memory, VCores: sc.Resource.VCores}, MaxAttempts: sc.MaxAppAttempts,
		UnmanagedAM: sc.UnmanagedAM, KeepContainers: sc.KeepContainers, Raw: raw})
	if err != nil {
		writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "http://"+r.Host+"/ws/v1/cluster/apps/"+id.String())
	w.WriteHeader(http.StatusAccepted)
}

func (h *handler) nodeInfo(n *records.Node) *nodeInfo {
	avail := records.Resource{MemoryMB: n.Capability.MemoryMB - n.Used.MemoryMB, VCores: n.Capability.VCores - n.Used.VCores}
	return &nodeInfo{Rack: n.Rack, State: string(n.State), ID: n.ID, NodeHostName: n.Host, NodeHTTPAddress: n.HTTPAddress,
		LastHealthUpdate: n.LastHealthUpdate, Version: HadoopVersion, HealthReport: n.HealthReport, NumContainers: n.NumContainers,
		UsedMemoryMB: n.Used.MemoryMB, AvailMemoryMB: avail.MemoryMB, UsedVirtualCores: n.Used.VCores, AvailableVirtualCores: avail.VCores,
		NodeLabels: n.Labels, TotalResource: resourceInfo{Memory: n.Capability.MemoryMB, VCores: n.Capability.VCores},
		UsedResource: resourceInfo{Memory: n.Used.MemoryMB, VCores: n.Used.VCores}, AvailableResource: resourceInfo{Memory: avail.MemoryMB, VCores: avail.VCores}}
}

func (h *handler) nodes(w http.ResponseWriter, r *http.Request) {
	var states []records.NodeState
	for _, s := range strings.Split(r.URL.Query().Get("states"), ",") {
		if s = strings.ToUpper(strings.TrimSpace(s)); s != "" {
			states = append(states, records.NodeState(s))
		}
	}
	var out []*nodeInfo
	for _, n := range h.mgr.Snapshot().Nodes(states...) {
		out = append(out, h.nodeInfo(n))
	}
	resp := nodesResponse{XMLNodes: out}
	if len(out) > 0 {
		resp.Nodes = &nodesList{Node: out}
	}
	write(w, r, http.StatusOK, resp, resp)
}

func (h *handler) node(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["nodeid"]
	n := h.mgr.Snapshot().Node(id)
	if n == nil {
		writeError(w, r, notFound("nodeId, %s, is not found", id))
		return
	}
	info := h.nodeInfo(n)
	write(w, r, http.StatusOK, nodeResponse{Node: info}, info)
}

// proxy sends a browser to the application's own UI once its AM names
// one, and to the RM's application page before that.
func (h *handler) proxy(w http.ResponseWriter, r *http.Request) {
	a, err := h.application(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	target := "/cluster/app/" + a.ID.String()
	if a.OriginalTrackingURL != "" && !a.State.Terminal() {
		target = a.OriginalTrackingURL
	}
	http.Redirect(w, r, target, http.StatusFound)
}
