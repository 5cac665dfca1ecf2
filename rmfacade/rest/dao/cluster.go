package dao

import "encoding/xml"

// ClusterInfo is GET /ws/v1/cluster and /ws/v1/cluster/info:
// {"clusterInfo":{...}}, <clusterInfo>.
type ClusterInfo struct {
	XMLName                       xml.Name `json:"-" xml:"clusterInfo"`
	ID                            int64    `json:"id" xml:"id"`               // the RM's start time, as the cluster timestamp
	StartedOn                     int64    `json:"startedOn" xml:"startedOn"` // ms since the epoch
	State                         string   `json:"state" xml:"state"`         // NOTINITED, INITED, STARTED, STOPPED
	HAState                       string   `json:"haState" xml:"haState"`     // INITIALIZING, ACTIVE, STANDBY, STOPPING
	RMStateStoreName              string   `json:"rmStateStoreName" xml:"rmStateStoreName"`
	ResourceManagerVersion        string   `json:"resourceManagerVersion" xml:"resourceManagerVersion"`
	ResourceManagerBuildVersion   string   `json:"resourceManagerBuildVersion" xml:"resourceManagerBuildVersion"`
	ResourceManagerVersionBuiltOn string   `json:"resourceManagerVersionBuiltOn" xml:"resourceManagerVersionBuiltOn"`
	HadoopVersion                 string   `json:"hadoopVersion" xml:"hadoopVersion"`
	HadoopBuildVersion            string   `json:"hadoopBuildVersion" xml:"hadoopBuildVersion"`
	HadoopVersionBuiltOn          string   `json:"hadoopVersionBuiltOn" xml:"hadoopVersionBuiltOn"`
	// Without HA the RM says "Could not find leader elector. Verify both HA
	// and automatic failover are enabled."
	HAZooKeeperConnectionState string `json:"haZooKeeperConnectionState" xml:"haZooKeeperConnectionState"`
	SubClusterID               string `json:"subClusterId,omitempty" xml:"subClusterId,omitempty"` // federation only
}

func (ClusterInfo) jsonRoot() string { return "clusterInfo" }

// ClusterMetricsInfo is GET /ws/v1/cluster/metrics: {"clusterMetrics":{...}}.
type ClusterMetricsInfo struct {
	XMLName                     xml.Name `json:"-" xml:"clusterMetrics"`
	AppsSubmitted               int32    `json:"appsSubmitted" xml:"appsSubmitted"`
	AppsCompleted               int32    `json:"appsCompleted" xml:"appsCompleted"`
	AppsPending                 int32    `json:"appsPending" xml:"appsPending"`
	AppsRunning                 int32    `json:"appsRunning" xml:"appsRunning"`
	AppsFailed                  int32    `json:"appsFailed" xml:"appsFailed"`
	AppsKilled                  int32    `json:"appsKilled" xml:"appsKilled"`
	ReservedMB                  int64    `json:"reservedMB" xml:"reservedMB"`
	AvailableMB                 int64    `json:"availableMB" xml:"availableMB"`
	AllocatedMB                 int64    `json:"allocatedMB" xml:"allocatedMB"`
	PendingMB                   int64    `json:"pendingMB" xml:"pendingMB"`
	ReservedVirtualCores        int64    `json:"reservedVirtualCores" xml:"reservedVirtualCores"`
	AvailableVirtualCores       int64    `json:"availableVirtualCores" xml:"availableVirtualCores"`
	AllocatedVirtualCores       int64    `json:"allocatedVirtualCores" xml:"allocatedVirtualCores"`
	PendingVirtualCores         int64    `json:"pendingVirtualCores" xml:"pendingVirtualCores"`
	ContainersAllocated         int32    `json:"containersAllocated" xml:"containersAllocated"`
	ContainersReserved          int32    `json:"containersReserved" xml:"containersReserved"`
	ContainersPending           int32    `json:"containersPending" xml:"containersPending"`
	TotalMB                     int64    `json:"totalMB" xml:"totalMB"`
	UtilizedMB                  int64    `json:"utilizedMB" xml:"utilizedMB"`
	TotalVirtualCores           int64    `json:"totalVirtualCores" xml:"totalVirtualCores"`
	UtilizedVirtualCores        int64    `json:"utilizedVirtualCores" xml:"utilizedVirtualCores"`
	UtilizedMBPercent           int32    `json:"utilizedMBPercent" xml:"utilizedMBPercent"`
	UtilizedVirtualCoresPercent int32    `json:"utilizedVirtualCoresPercent" xml:"utilizedVirtualCoresPercent"`
	RMSchedulerBusyPercent      int32    `json:"rmSchedulerBusyPercent" xml:"rmSchedulerBusyPercent"` // -1 when not measured
	TotalNodes                  int32    `json:"totalNodes" xml:"totalNodes"`
	LostNodes                   int32    `json:"lostNodes" xml:"lostNodes"`
	UnhealthyNodes              int32    `json:"unhealthyNodes" xml:"unhealthyNodes"`
	DecommissioningNodes        int32    `json:"decommissioningNodes" xml:"decommissioningNodes"`
	DecommissionedNodes         int32    `json:"decommissionedNodes" xml:"decommissionedNodes"`
	RebootedNodes               int32    `json:"rebootedNodes" xml:"rebootedNodes"`
	ActiveNodes                 int32    `json:"activeNodes" xml:"activeNodes"`
	ShutdownNodes               int32    `json:"shutdownNodes" xml:"shutdownNodes"`
	ContainerAssignedPerSecond  int32    `json:"containerAssignedPerSecond" xml:"containerAssignedPerSecond"`
	// The three totals are set with the CapacityScheduler (and
	// crossPartitionMetricsAvailable is then true); nil otherwise.
	TotalUsedResourcesAcrossPartition       *ResourceInfo `json:"totalUsedResourcesAcrossPartition,omitempty" xml:"totalUsedResourcesAcrossPartition,omitempty"`
	TotalClusterResourcesAcrossPartition    *ResourceInfo `json:"totalClusterResourcesAcrossPartition,omitempty" xml:"totalClusterResourcesAcrossPartition,omitempty"`
	TotalReservedResourcesAcrossPartition   *ResourceInfo `json:"totalReservedResourcesAcrossPartition,omitempty" xml:"totalReservedResourcesAcrossPartition,omitempty"`
	TotalAllocatedContainersAcrossPartition int32         `json:"totalAllocatedContainersAcrossPartition" xml:"totalAllocatedContainersAcrossPartition"`
	CrossPartitionMetricsAvailable          bool          `json:"crossPartitionMetricsAvailable" xml:"crossPartitionMetricsAvailable"`
	RMEventQueueSize                        int32         `json:"rmEventQueueSize" xml:"rmEventQueueSize"`
	SchedulerEventQueueSize                 int32         `json:"schedulerEventQueueSize" xml:"schedulerEventQueueSize"`
}

func (ClusterMetricsInfo) jsonRoot() string { return "clusterMetrics" }
