package dao

import "encoding/xml"

// AppsInfo is GET /ws/v1/cluster/apps: {"apps":{"app":[...]}}, and
// {"apps":{}} (<apps/>) when no application matches.
type AppsInfo struct {
	XMLName xml.Name   `json:"-" xml:"apps"`
	App     []*AppInfo `json:"app,omitempty" xml:"app,omitempty"`
}

func (AppsInfo) jsonRoot() string { return "apps" }

// AppsStream is an AppsInfo whose applications are made while it is
// written: each is encoded and dropped before the next is made, so that
// answering with every application the RM retains holds one of them in
// memory at a time rather than all. A yielded AppInfo is valid until the
// next is asked for (the maker may reuse it). Write streams it as JSON; as
// XML it is collected first.
type AppsStream func(yield func(*AppInfo) bool)

func (AppsStream) jsonRoot() string { return "apps" }

// collect is the stream as an AppsInfo.
func (s AppsStream) collect() *AppsInfo {
	list := &AppsInfo{}
	for a := range s {
		kept := *a // a may be reused for the next
		list.App = append(list.App, &kept)
	}
	return list
}

// AppInfo is an application: GET /ws/v1/cluster/apps/{appid} as
// {"app":{...}}, and each element of AppsInfo.
//
// The RM fills the fields from startedTime on only for callers allowed to
// view the application; for others they stay zero, and the nullable ones
// (amContainerLogs, amHostHttpAddress, amRPCAddress, logAggregationStatus,
// resourceInfo) are left out.
type AppInfo struct {
	XMLName     xml.Name `json:"-" xml:"app"`
	ID          string   `json:"id" xml:"id"`
	User        string   `json:"user" xml:"user"`
	Name        string   `json:"name" xml:"name"`
	Queue       string   `json:"queue" xml:"queue"` // the full path in Hadoop 3.4 ("root.default")
	State       string   `json:"state" xml:"state"` // YarnApplicationState: NEW ... KILLED
	FinalStatus string   `json:"finalStatus" xml:"finalStatus"`
	Progress    Float32  `json:"progress" xml:"progress"`     // percent: 0.0 to 100.0
	TrackingUI  string   `json:"trackingUI" xml:"trackingUI"` // UNASSIGNED, ApplicationMaster or History
	// Left out while the application is NEW, NEW_SAVING, SUBMITTED or
	// ACCEPTED or has no tracking URL (trackingUI is then UNASSIGNED).
	TrackingURL     string `json:"trackingUrl,omitempty" xml:"trackingUrl,omitempty"`
	Diagnostics     string `json:"diagnostics" xml:"diagnostics"` // "" when there are none
	ClusterID       int64  `json:"clusterId" xml:"clusterId"`
	RMClusterID     string `json:"rmClusterId,omitempty" xml:"rmClusterId,omitempty"` // federation only
	ApplicationType string `json:"applicationType" xml:"applicationType"`
	ApplicationTags string `json:"applicationTags" xml:"applicationTags"` // comma-separated; "" when none
	Priority        int32  `json:"priority" xml:"priority"`
	StartedTime     int64  `json:"startedTime" xml:"startedTime"`
	LaunchTime      int64  `json:"launchTime" xml:"launchTime"` // 0 before the AM launches (-1 when unknown)
	FinishedTime    int64  `json:"finishedTime" xml:"finishedTime"`
	ElapsedTime     int64  `json:"elapsedTime" xml:"elapsedTime"`
	// The AM container's log URL and node, left out until it is allocated.
	AMContainerLogs   string `json:"amContainerLogs,omitempty" xml:"amContainerLogs,omitempty"`
	AMHostHTTPAddress string `json:"amHostHttpAddress,omitempty" xml:"amHostHttpAddress,omitempty"`
	// host:port the AM registered, left out until it has.
	AMRPCAddress string `json:"amRPCAddress,omitempty" xml:"amRPCAddress,omitempty"`
	// The AM container's node id; "" until allocated.
	MasterNodeID string `json:"masterNodeId" xml:"masterNodeId"`
	// Current usage; -1 each once the application has finished.
	AllocatedMB            int64   `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores        int64   `json:"allocatedVCores" xml:"allocatedVCores"`
	ReservedMB             int64   `json:"reservedMB" xml:"reservedMB"`
	ReservedVCores         int64   `json:"reservedVCores" xml:"reservedVCores"`
	RunningContainers      int32   `json:"runningContainers" xml:"runningContainers"`
	MemorySeconds          int64   `json:"memorySeconds" xml:"memorySeconds"`
	VcoreSeconds           int64   `json:"vcoreSeconds" xml:"vcoreSeconds"`
	QueueUsagePercentage   Float32 `json:"queueUsagePercentage" xml:"queueUsagePercentage"`
	ClusterUsagePercentage Float32 `json:"clusterUsagePercentage" xml:"clusterUsagePercentage"`
	// Resource-seconds by resource type (memory-mb, vcores); {} when none.
	ResourceSecondsMap          LongMap `json:"resourceSecondsMap" xml:"resourceSecondsMap"`
	PreemptedResourceMB         int64   `json:"preemptedResourceMB" xml:"preemptedResourceMB"`
	PreemptedResourceVCores     int64   `json:"preemptedResourceVCores" xml:"preemptedResourceVCores"`
	NumNonAMContainerPreempted  int32   `json:"numNonAMContainerPreempted" xml:"numNonAMContainerPreempted"`
	NumAMContainerPreempted     int32   `json:"numAMContainerPreempted" xml:"numAMContainerPreempted"`
	PreemptedMemorySeconds      int64   `json:"preemptedMemorySeconds" xml:"preemptedMemorySeconds"`
	PreemptedVcoreSeconds       int64   `json:"preemptedVcoreSeconds" xml:"preemptedVcoreSeconds"`
	PreemptedResourceSecondsMap LongMap `json:"preemptedResourceSecondsMap" xml:"preemptedResourceSecondsMap"`
	// The current attempt's outstanding requests (JSON array; in XML one
	// <resourceRequests> element each); left out when there are none.
	ResourceRequests     []ResourceRequestInfo `json:"resourceRequests,omitempty" xml:"resourceRequests,omitempty"`
	LogAggregationStatus string                `json:"logAggregationStatus,omitempty" xml:"logAggregationStatus,omitempty"` // DISABLED, NOT_START, ...
	UnmanagedApplication bool                  `json:"unmanagedApplication" xml:"unmanagedApplication"`
	// The submission's node label expressions: "" when the client sent
	// none through REST, null (nil, left out) when it sent none over RPC;
	// the AM's is null for unmanaged applications.
	AppNodeLabelExpression *string `json:"appNodeLabelExpression,omitempty" xml:"appNodeLabelExpression,omitempty"`
	AMNodeLabelExpression  *string `json:"amNodeLabelExpression,omitempty" xml:"amNodeLabelExpression,omitempty"`
	// Usage by partition, with the CapacityScheduler while an attempt is
	// in the scheduler; left out otherwise.
	ResourceInfo *ResourcesInfo `json:"resourceInfo,omitempty" xml:"resourceInfo,omitempty"`
	// Always set by the RM: without timeouts, one LIFETIME timeout with
	// expiryTime UNLIMITED and remainingTimeInSeconds -1.
	Timeouts *AppTimeoutsInfo `json:"timeouts,omitempty" xml:"timeouts,omitempty"`

	// Encoded, when set, is the application's JSON as AppendJSON wrote it
	// for an earlier answer, and the fields above are not filled: a JSON
	// stream writes it as it is. A maker sets it only for a JSON answer
	// (see PrefersXML); it is never encoded itself.
	Encoded []byte `json:"-" xml:"-"`
}

func (AppInfo) jsonRoot() string { return "app" }

// AppendJSON appends the application's JSON, as a listing writes it.
func (a *AppInfo) AppendJSON(b []byte) []byte { return a.appendJSON(b) }

// ResourceRequestInfo is an outstanding ResourceRequest of an application.
type ResourceRequestInfo struct {
	Priority             int32                     `json:"priority" xml:"priority"`
	AllocationRequestID  int64                     `json:"allocationRequestId" xml:"allocationRequestId"`
	ResourceName         string                    `json:"resourceName" xml:"resourceName"` // "*", a rack or a host
	Capability           ResourceInfo              `json:"capability" xml:"capability"`
	NumContainers        int32                     `json:"numContainers" xml:"numContainers"`
	RelaxLocality        bool                      `json:"relaxLocality" xml:"relaxLocality"`
	NodeLabelExpression  string                    `json:"nodeLabelExpression" xml:"nodeLabelExpression"`
	ExecutionTypeRequest *ExecutionTypeRequestInfo `json:"executionTypeRequest,omitempty" xml:"executionTypeRequest,omitempty"`
	PlacementConstraint  string                    `json:"placementConstraint,omitempty" xml:"placementConstraint,omitempty"`
	AllocationTags       []string                  `json:"allocationTags,omitempty" xml:"allocationTags,omitempty"`
}

// ExecutionTypeRequestInfo is a request's execution type.
type ExecutionTypeRequestInfo struct {
	ExecutionType        string `json:"executionType" xml:"executionType"` // GUARANTEED or OPPORTUNISTIC
	EnforceExecutionType bool   `json:"enforceExecutionType" xml:"enforceExecutionType"`
}

// AppTimeoutsInfo is an application's timeouts: {"timeout":[...]}.
type AppTimeoutsInfo struct {
	Timeout []AppTimeoutInfo `json:"timeout,omitempty" xml:"timeout,omitempty"`
}

// AppTimeoutInfo is one timeout.
type AppTimeoutInfo struct {
	Type                   string `json:"type" xml:"type"`                                     // LIFETIME
	ExpiryTime             string `json:"expiryTime" xml:"expiryTime"`                         // ISO 8601, or UNLIMITED
	RemainingTimeInSeconds int64  `json:"remainingTimeInSeconds" xml:"remainingTimeInSeconds"` // -1 when unlimited
}

// UnlimitedLifetime is the timeouts the RM reports for an application
// without any.
func UnlimitedLifetime() *AppTimeoutsInfo {
	return &AppTimeoutsInfo{Timeout: []AppTimeoutInfo{{Type: "LIFETIME", ExpiryTime: "UNLIMITED", RemainingTimeInSeconds: -1}}}
}

// AppAttemptsInfo is GET /ws/v1/cluster/apps/{appid}/appattempts:
// {"appAttempts":{"appAttempt":[...]}}.
type AppAttemptsInfo struct {
	XMLName    xml.Name          `json:"-" xml:"appAttempts"`
	AppAttempt []*AppAttemptInfo `json:"appAttempt,omitempty" xml:"appAttempt,omitempty"`
}

func (AppAttemptsInfo) jsonRoot() string { return "appAttempts" }

// AppAttemptInfo is one attempt. Before its AM container is allocated the
// container and node fields are "" (and nodesBlacklistedBySystem is left
// out).
type AppAttemptInfo struct {
	XMLName                  xml.Name `json:"-" xml:"appAttempt"`
	ID                       int32    `json:"id" xml:"id"` // the attempt number
	StartTime                int64    `json:"startTime" xml:"startTime"`
	FinishedTime             int64    `json:"finishedTime" xml:"finishedTime"`
	ContainerID              string   `json:"containerId" xml:"containerId"`
	NodeHTTPAddress          string   `json:"nodeHttpAddress" xml:"nodeHttpAddress"`
	NodeID                   string   `json:"nodeId" xml:"nodeId"`
	LogsLink                 string   `json:"logsLink" xml:"logsLink"`
	BlacklistedNodes         string   `json:"blacklistedNodes" xml:"blacklistedNodes"`
	NodesBlacklistedBySystem *string  `json:"nodesBlacklistedBySystem,omitempty" xml:"nodesBlacklistedBySystem,omitempty"`
	AppAttemptID             string   `json:"appAttemptId" xml:"appAttemptId"`
	// The AM container's exposed ports; the RM writes the string "null"
	// once the container is allocated without any, and "" before.
	ExportPorts     string `json:"exportPorts" xml:"exportPorts"`
	AppAttemptState string `json:"appAttemptState" xml:"appAttemptState"` // RMAppAttemptState: NEW ... KILLED
}

func (AppAttemptInfo) jsonRoot() string { return "appAttempt" }

// AppState is GET and PUT /ws/v1/cluster/apps/{appid}/state: written bare,
// {"state":"RUNNING"}, <appstate>. A PUT may carry diagnostics with the
// target state (only KILLED is allowed).
type AppState struct {
	XMLName     xml.Name `json:"-" xml:"appstate"`
	State       string   `json:"state" xml:"state"`
	Diagnostics string   `json:"diagnostics,omitempty" xml:"diagnostics,omitempty"`
}

func (AppState) javaClass() string { return daoPackage + "AppState" }

// AppQueue is GET and PUT /ws/v1/cluster/apps/{appid}/queue: written bare,
// {"queue":"root.default"}, <appqueue>.
type AppQueue struct {
	XMLName xml.Name `json:"-" xml:"appqueue"`
	Queue   string   `json:"queue" xml:"queue"`
}

func (AppQueue) javaClass() string { return daoPackage + "AppQueue" }

// AppPriority is GET and PUT /ws/v1/cluster/apps/{appid}/priority: written
// bare, {"priority":0}, <applicationpriority>.
type AppPriority struct {
	XMLName  xml.Name `json:"-" xml:"applicationpriority"`
	Priority int32    `json:"priority" xml:"priority"`
}

func (AppPriority) javaClass() string { return daoPackage + "AppPriority" }

// NewApplication is POST /ws/v1/cluster/apps/new-application: written bare,
// {"application-id":...,"maximum-resource-capability":{...}},
// <NewApplication>.
type NewApplication struct {
	XMLName                   xml.Name     `json:"-" xml:"NewApplication"`
	ApplicationID             string       `json:"application-id" xml:"application-id"`
	MaximumResourceCapability ResourceInfo `json:"maximum-resource-capability" xml:"maximum-resource-capability"`
}

const daoPackage = "org.apache.hadoop.yarn.server.resourcemanager.webapp.dao."
