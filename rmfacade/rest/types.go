package rest

import "encoding/xml"

// Response shapes of the RM REST API, with the field names, nesting and
// XML element names of Hadoop's RMWebServices DAOs. JSON lists are wrapped
// as YARN does: {"apps":{"app":[...]}}, and an empty list is {"apps":null}.

type clusterInfoResponse struct {
	ClusterInfo clusterInfo `json:"clusterInfo"`
}

type clusterInfo struct {
	XMLName                    xml.Name `json:"-" xml:"clusterInfo"`
	ID                         int64    `json:"id" xml:"id"`
	StartedOn                  int64    `json:"startedOn" xml:"startedOn"`
	State                      string   `json:"state" xml:"state"`
	HAState                    string   `json:"haState" xml:"haState"`
	RMStateStoreName           string   `json:"rmStateStoreName" xml:"rmStateStoreName"`
	ResourceManagerVersion     string   `json:"resourceManagerVersion" xml:"resourceManagerVersion"`
	ResourceManagerBuild       string   `json:"resourceManagerBuildVersion" xml:"resourceManagerBuildVersion"`
	ResourceManagerBuiltOn     string   `json:"resourceManagerVersionBuiltOn" xml:"resourceManagerVersionBuiltOn"`
	HadoopVersion              string   `json:"hadoopVersion" xml:"hadoopVersion"`
	HadoopBuildVersion         string   `json:"hadoopBuildVersion" xml:"hadoopBuildVersion"`
	HadoopVersionBuiltOn       string   `json:"hadoopVersionBuiltOn" xml:"hadoopVersionBuiltOn"`
	HAZooKeeperConnectionState string   `json:"haZooKeeperConnectionState" xml:"haZooKeeperConnectionState"`
}

type clusterMetricsResponse struct {
	ClusterMetrics clusterMetrics `json:"clusterMetrics"`
}

type clusterMetrics struct {
	XMLName               xml.Name `json:"-" xml:"clusterMetrics"`
	AppsSubmitted         int      `json:"appsSubmitted" xml:"appsSubmitted"`
	AppsCompleted         int      `json:"appsCompleted" xml:"appsCompleted"`
	AppsPending           int      `json:"appsPending" xml:"appsPending"`
	AppsRunning           int      `json:"appsRunning" xml:"appsRunning"`
	AppsFailed            int      `json:"appsFailed" xml:"appsFailed"`
	AppsKilled            int      `json:"appsKilled" xml:"appsKilled"`
	ReservedMB            int64    `json:"reservedMB" xml:"reservedMB"`
	AvailableMB           int64    `json:"availableMB" xml:"availableMB"`
	AllocatedMB           int64    `json:"allocatedMB" xml:"allocatedMB"`
	ReservedVirtualCores  int64    `json:"reservedVirtualCores" xml:"reservedVirtualCores"`
	AvailableVirtualCores int64    `json:"availableVirtualCores" xml:"availableVirtualCores"`
	AllocatedVirtualCores int64    `json:"allocatedVirtualCores" xml:"allocatedVirtualCores"`
	ContainersAllocated   int      `json:"containersAllocated" xml:"containersAllocated"`
	ContainersReserved    int      `json:"containersReserved" xml:"containersReserved"`
	ContainersPending     int      `json:"containersPending" xml:"containersPending"`
	TotalMB               int64    `json:"totalMB" xml:"totalMB"`
	TotalVirtualCores     int64    `json:"totalVirtualCores" xml:"totalVirtualCores"`
	TotalNodes            int      `json:"totalNodes" xml:"totalNodes"`
	LostNodes             int      `json:"lostNodes" xml:"lostNodes"`
	UnhealthyNodes        int      `json:"unhealthyNodes" xml:"unhealthyNodes"`
	DecommissioningNodes  int      `json:"decommissioningNodes" xml:"decommissioningNodes"`
	DecommissionedNodes   int      `json:"decommissionedNodes" xml:"decommissionedNodes"`
	RebootedNodes         int      `json:"rebootedNodes" xml:"rebootedNodes"`
	ActiveNodes           int      `json:"activeNodes" xml:"activeNodes"`
	ShutdownNodes         int      `json:"shutdownNodes" xml:"shutdownNodes"`
}

type resourceInfo struct {
	Memory int64 `json:"memory" xml:"memory"`
	VCores int32 `json:"vCores" xml:"vCores"`
}

type appInfo struct {
	XMLName                xml.Name `json:"-" xml:"app"`
	ID                     string   `json:"id" xml:"id"`
	User                   string   `json:"user" xml:"user"`
	Name                   string   `json:"name" xml:"name"`
	Queue                  string   `json:"queue" xml:"queue"`
	State                  string   `json:"state" xml:"state"`
	FinalStatus            string   `json:"finalStatus" xml:"finalStatus"`
	Progress               float32  `json:"progress" xml:"progress"`
	TrackingUI             string   `json:"trackingUI" xml:"trackingUI"`
	TrackingURL            string   `json:"trackingUrl,omitempty" xml:"trackingUrl,omitempty"`
	Diagnostics            string   `json:"diagnostics" xml:"diagnostics"`
	ClusterID              int64    `json:"clusterId" xml:"clusterId"`
	ApplicationType        string   `json:"applicationType" xml:"applicationType"`
	ApplicationTags        string   `json:"applicationTags" xml:"applicationTags"`
	Priority               int32    `json:"priority" xml:"priority"`
	StartedTime            int64    `json:"startedTime" xml:"startedTime"`
	LaunchTime             int64    `json:"launchTime" xml:"launchTime"`
	FinishedTime           int64    `json:"finishedTime" xml:"finishedTime"`
	ElapsedTime            int64    `json:"elapsedTime" xml:"elapsedTime"`
	AMContainerLogs        string   `json:"amContainerLogs,omitempty" xml:"amContainerLogs,omitempty"`
	AMHostHTTPAddress      string   `json:"amHostHttpAddress,omitempty" xml:"amHostHttpAddress,omitempty"`
	AMRPCAddress           string   `json:"amRPCAddress,omitempty" xml:"amRPCAddress,omitempty"`
	AllocatedMB            int64    `json:"allocatedMB" xml:"allocatedMB"`
	AllocatedVCores        int64    `json:"allocatedVCores" xml:"allocatedVCores"`
	RunningContainers      int      `json:"runningContainers" xml:"runningContainers"`
	MemorySeconds          int64    `json:"memorySeconds" xml:"memorySeconds"`
	VcoreSeconds           int64    `json:"vcoreSeconds" xml:"vcoreSeconds"`
	QueueUsagePercentage   float32  `json:"queueUsagePercentage" xml:"queueUsagePercentage"`
	ClusterUsagePercentage float32  `json:"clusterUsagePercentage" xml:"clusterUsagePercentage"`
	PreemptedResourceMB    int64    `json:"preemptedResourceMB" xml:"preemptedResourceMB"`
	PreemptedVCores        int64    `json:"preemptedResourceVCores" xml:"preemptedResourceVCores"`
	NumNonAMPreempted      int      `json:"numNonAMContainerPreempted" xml:"numNonAMContainerPreempted"`
	NumAMPreempted         int      `json:"numAMContainerPreempted" xml:"numAMContainerPreempted"`
	LogAggregationStatus   string   `json:"logAggregationStatus" xml:"logAggregationStatus"`
	UnmanagedApplication   bool     `json:"unmanagedApplication" xml:"unmanagedApplication"`
	AppNodeLabelExpression string   `json:"appNodeLabelExpression,omitempty" xml:"appNodeLabelExpression,omitempty"`
	AMNodeLabelExpression  string   `json:"amNodeLabelExpression,omitempty" xml:"amNodeLabelExpression,omitempty"`
	SubmittedTime          int64    `json:"submittedTime" xml:"submittedTime"`
}

type appResponse struct {
	App *appInfo `json:"app"`
}

type appsList struct {
	App []*appInfo `json:"app"`
}

type appsResponse struct {
	XMLName xml.Name  `json:"-" xml:"apps"`
	Apps    *appsList `json:"apps" xml:"-"`
	// XMLApps carries the same list for XML, where there is no wrapper.
	XMLApps []*appInfo `json:"-" xml:"app"`
}

type appState struct {
	XMLName xml.Name `json:"-" xml:"appstate"`
	State   string   `json:"state" xml:"state"`
}

type appQueue struct {
	XMLName xml.Name `json:"-" xml:"appqueue"`
	Queue   string   `json:"queue" xml:"queue"`
}

type appPriority struct {
	XMLName  xml.Name `json:"-" xml:"applicationpriority"`
	Priority int32    `json:"priority" xml:"priority"`
}

type appAttemptInfo struct {
	XMLName                  xml.Name `json:"-" xml:"appAttempt"`
	ID                       int32    `json:"id" xml:"id"`
	StartTime                int64    `json:"startTime" xml:"startTime"`
	FinishedTime             int64    `json:"finishedTime" xml:"finishedTime"`
	ContainerID              string   `json:"containerId" xml:"containerId"`
	NodeHTTPAddress          string   `json:"nodeHttpAddress" xml:"nodeHttpAddress"`
	NodeID                   string   `json:"nodeId" xml:"nodeId"`
	LogsLink                 string   `json:"logsLink" xml:"logsLink"`
	BlacklistedNodes         string   `json:"blacklistedNodes" xml:"blacklistedNodes"`
	NodesBlacklistedBySystem string   `json:"nodesBlacklistedBySystem" xml:"nodesBlacklistedBySystem"`
	AppAttemptID             string   `json:"appAttemptId" xml:"appAttemptId"`
	AppAttemptState          string   `json:"appAttemptState" xml:"appAttemptState"`
}

type appAttemptsList struct {
	AppAttempt []*appAttemptInfo `json:"appAttempt"`
}

type appAttemptsResponse struct {
	XMLName     xml.Name          `json:"-" xml:"appAttempts"`
	AppAttempts appAttemptsList   `json:"appAttempts" xml:"-"`
	XMLAttempts []*appAttemptInfo `json:"-" xml:"appAttempt"`
}

type newApplication struct {
	XMLName       xml.Name     `json:"-" xml:"NewApplication"`
	ApplicationID string       `json:"application-id" xml:"application-id"`
	MaxCapability resourceInfo `json:"maximum-resource-capability" xml:"maximum-resource-capability"`
}

type nodeInfo struct {
	XMLName               xml.Name     `json:"-" xml:"node"`
	Rack                  string       `json:"rack" xml:"rack"`
	State                 string       `json:"state" xml:"state"`
	ID                    string       `json:"id" xml:"id"`
	NodeHostName          string       `json:"nodeHostName" xml:"nodeHostName"`
	NodeHTTPAddress       string       `json:"nodeHTTPAddress" xml:"nodeHTTPAddress"`
	LastHealthUpdate      int64        `json:"lastHealthUpdate" xml:"lastHealthUpdate"`
	Version               string       `json:"version" xml:"version"`
	HealthReport          string       `json:"healthReport" xml:"healthReport"`
	NumContainers         int32        `json:"numContainers" xml:"numContainers"`
	UsedMemoryMB          int64        `json:"usedMemoryMB" xml:"usedMemoryMB"`
	AvailMemoryMB         int64        `json:"availMemoryMB" xml:"availMemoryMB"`
	UsedVirtualCores      int32        `json:"usedVirtualCores" xml:"usedVirtualCores"`
	AvailableVirtualCores int32        `json:"availableVirtualCores" xml:"availableVirtualCores"`
	NodeLabels            []string     `json:"nodeLabels,omitempty" xml:"nodeLabels,omitempty"`
	TotalResource         resourceInfo `json:"totalResource" xml:"totalResource"`
	UsedResource          resourceInfo `json:"usedResource" xml:"usedResource"`
	AvailableResource     resourceInfo `json:"availableResource" xml:"availableResource"`
}

type nodeResponse struct {
	Node *nodeInfo `json:"node"`
}

type nodesList struct {
	Node []*nodeInfo `json:"node"`
}

type nodesResponse struct {
	XMLName  xml.Name    `json:"-" xml:"nodes"`
	Nodes    *nodesList  `json:"nodes" xml:"-"`
	XMLNodes []*nodeInfo `json:"-" xml:"node"`
}

// Scheduler: the CapacityScheduler's view, which YARN tools parse.
type schedulerResponse struct {
	XMLName   xml.Name      `json:"-" xml:"scheduler"`
	Scheduler schedulerWrap `json:"scheduler" xml:"schedulerInfo"`
}

type schedulerWrap struct {
	SchedulerInfo *queueInfo `json:"schedulerInfo"`
}

type queueInfo struct {
	Type                 string       `json:"type,omitempty" xml:"type,attr,omitempty"`
	Capacity             float32      `json:"capacity" xml:"capacity"`
	UsedCapacity         float32      `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity          float32      `json:"maxCapacity" xml:"maxCapacity"`
	AbsoluteCapacity     float32      `json:"absoluteCapacity" xml:"absoluteCapacity"`
	AbsoluteMaxCapacity  float32      `json:"absoluteMaxCapacity" xml:"absoluteMaxCapacity"`
	AbsoluteUsedCapacity float32      `json:"absoluteUsedCapacity" xml:"absoluteUsedCapacity"`
	NumApplications      int          `json:"numApplications" xml:"numApplications"`
	NumActiveApps        int          `json:"numActiveApplications" xml:"numActiveApplications"`
	NumPendingApps       int          `json:"numPendingApplications" xml:"numPendingApplications"`
	QueueName            string       `json:"queueName" xml:"queueName"`
	QueuePath            string       `json:"queuePath" xml:"queuePath"`
	State                string       `json:"state" xml:"state"`
	ResourcesUsed        resourceInfo `json:"resourcesUsed" xml:"resourcesUsed"`
	Queues               *queuesList  `json:"queues,omitempty" xml:"queues,omitempty"`
}

type queuesList struct {
	Queue []*queueInfo `json:"queue" xml:"queue"`
}

// remoteException is YARN's REST error body.
type remoteException struct {
	XMLName       xml.Name `json:"-" xml:"RemoteException"`
	Exception     string   `json:"exception" xml:"exception"`
	Message       string   `json:"message" xml:"message"`
	JavaClassName string   `json:"javaClassName" xml:"javaClassName"`
}

type remoteExceptionResponse struct {
	RemoteException remoteException `json:"RemoteException"`
}
