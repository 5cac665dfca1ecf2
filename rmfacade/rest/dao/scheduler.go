package dao

import "encoding/xml"

// SchedulerTypeInfo is GET /ws/v1/cluster/scheduler:
// {"scheduler":{"schedulerInfo":{"type":"capacityScheduler",...}}}, and in
// XML <scheduler><schedulerInfo xmlns:xsi="..." xsi:type="capacityScheduler">.
type SchedulerTypeInfo struct {
	XMLName       xml.Name      `json:"-" xml:"scheduler"`
	SchedulerInfo SchedulerInfo `json:"schedulerInfo,omitempty" xml:"schedulerInfo,omitempty"`
	SubClusterID  string        `json:"subClusterId,omitempty" xml:"subClusterId,omitempty"` // federation only
}

func (SchedulerTypeInfo) jsonRoot() string { return "scheduler" }

// SchedulerInfo is the configured scheduler's view; Weft has the
// CapacityScheduler's (*CapacitySchedulerInfo).
type SchedulerInfo interface{ xsiType() string }

// JAXB type names, the "type" (xsi:type) of the scheduler's polymorphic
// objects.
const (
	TypeCapacityScheduler = "capacityScheduler"
	TypeLeafQueue         = "capacitySchedulerLeafQueueInfo"
)

// CapacitySchedulerInfo is the CapacityScheduler's root queue and its tree.
// Its type, capacityScheduler, is written first ("type" in JSON, xsi:type
// in XML).
type CapacitySchedulerInfo struct {
	Capacity                          Float32                         `json:"capacity" xml:"capacity"`
	UsedCapacity                      Float32                         `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity                       Float32                         `json:"maxCapacity" xml:"maxCapacity"`
	Weight                            Float32                         `json:"weight" xml:"weight"` // -1.0 unless weights are configured
	NormalizedWeight                  Float32                         `json:"normalizedWeight" xml:"normalizedWeight"`
	QueueCapacityVectorInfo           *QueueCapacityVectorInfo        `json:"queueCapacityVectorInfo,omitempty" xml:"queueCapacityVectorInfo,omitempty"`
	QueueName                         string                          `json:"queueName" xml:"queueName"` // root
	QueuePath                         string                          `json:"queuePath" xml:"queuePath"` // root
	MaxParallelApps                   int32                           `json:"maxParallelApps" xml:"maxParallelApps"`
	IsAbsoluteResource                bool                            `json:"isAbsoluteResource" xml:"isAbsoluteResource"`
	Queues                            *CapacitySchedulerQueueInfoList `json:"queues,omitempty" xml:"queues,omitempty"`
	Capacities                        *QueueCapacitiesInfo            `json:"capacities,omitempty" xml:"capacities,omitempty"`
	Health                            *CapacitySchedulerHealthInfo    `json:"health,omitempty" xml:"health,omitempty"`
	MaximumAllocation                 *ResourceInfo                   `json:"maximumAllocation,omitempty" xml:"maximumAllocation,omitempty"`
	QueueAcls                         *QueueAclsInfo                  `json:"queueAcls,omitempty" xml:"queueAcls,omitempty"`
	QueuePriority                     int32                           `json:"queuePriority" xml:"queuePriority"`
	OrderingPolicyInfo                string                          `json:"orderingPolicyInfo" xml:"orderingPolicyInfo"` // utilization
	Mode                              string                          `json:"mode" xml:"mode"`                             // percentage, absolute or weight
	QueueType                         string                          `json:"queueType" xml:"queueType"`                   // parent
	CreationMethod                    string                          `json:"creationMethod" xml:"creationMethod"`         // static
	AutoCreationEligibility           string                          `json:"autoCreationEligibility" xml:"autoCreationEligibility"`
	DefaultNodeLabelExpression        string                          `json:"defaultNodeLabelExpression,omitempty" xml:"defaultNodeLabelExpression,omitempty"`
	AutoQueueTemplateProperties       AutoQueueTemplatePropertiesInfo `json:"autoQueueTemplateProperties" xml:"autoQueueTemplateProperties"`
	AutoQueueParentTemplateProperties AutoQueueTemplatePropertiesInfo `json:"autoQueueParentTemplateProperties" xml:"autoQueueParentTemplateProperties"`
	AutoQueueLeafTemplateProperties   AutoQueueTemplatePropertiesInfo `json:"autoQueueLeafTemplateProperties" xml:"autoQueueLeafTemplateProperties"`
}

func (CapacitySchedulerInfo) xsiType() string { return TypeCapacityScheduler }

// MarshalJSON writes the scheduler with its "type" first.
func (s CapacitySchedulerInfo) MarshalJSON() ([]byte, error) {
	type plain CapacitySchedulerInfo
	return withType(TypeCapacityScheduler, plain(s))
}

// CapacitySchedulerQueueInfoList is a parent queue's children:
// {"queue":[...]}.
type CapacitySchedulerQueueInfoList struct {
	Queue []*CapacitySchedulerQueueInfo `json:"queue,omitempty" xml:"queue,omitempty"`
}

// CapacitySchedulerQueueInfo is a queue below root. A parent queue has
// Queues; a leaf queue has LeafQueueInfo instead, which makes its type
// capacitySchedulerLeafQueueInfo ("type" first in JSON, xsi:type in XML)
// and appends the leaf's fields.
type CapacitySchedulerQueueInfo struct {
	QueuePath                         string                          `json:"queuePath" xml:"queuePath"` // root.a.a1
	Capacity                          Float32                         `json:"capacity" xml:"capacity"`
	UsedCapacity                      Float32                         `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity                       Float32                         `json:"maxCapacity" xml:"maxCapacity"`
	AbsoluteCapacity                  Float32                         `json:"absoluteCapacity" xml:"absoluteCapacity"`
	AbsoluteMaxCapacity               Float32                         `json:"absoluteMaxCapacity" xml:"absoluteMaxCapacity"`
	AbsoluteUsedCapacity              Float32                         `json:"absoluteUsedCapacity" xml:"absoluteUsedCapacity"`
	Weight                            Float32                         `json:"weight" xml:"weight"`
	NormalizedWeight                  Float32                         `json:"normalizedWeight" xml:"normalizedWeight"`
	NumApplications                   int32                           `json:"numApplications" xml:"numApplications"`
	MaxParallelApps                   int32                           `json:"maxParallelApps" xml:"maxParallelApps"`
	QueueName                         string                          `json:"queueName" xml:"queueName"` // a1
	IsAbsoluteResource                bool                            `json:"isAbsoluteResource" xml:"isAbsoluteResource"`
	State                             string                          `json:"state" xml:"state"` // RUNNING, STOPPED, DRAINING
	Queues                            *CapacitySchedulerQueueInfoList `json:"queues,omitempty" xml:"queues,omitempty"`
	ResourcesUsed                     ResourceInfo                    `json:"resourcesUsed" xml:"resourcesUsed"`
	HideReservationQueues             bool                            `json:"hideReservationQueues" xml:"hideReservationQueues"`
	NodeLabels                        []string                        `json:"nodeLabels,omitempty" xml:"nodeLabels,omitempty"` // accessible labels: ["*"]
	AllocatedContainers               int64                           `json:"allocatedContainers" xml:"allocatedContainers"`
	ReservedContainers                int64                           `json:"reservedContainers" xml:"reservedContainers"`
	PendingContainers                 int64                           `json:"pendingContainers" xml:"pendingContainers"`
	Capacities                        QueueCapacitiesInfo             `json:"capacities" xml:"capacities"`
	Resources                         ResourcesInfo                   `json:"resources" xml:"resources"`
	MinEffectiveCapacity              ResourceInfo                    `json:"minEffectiveCapacity" xml:"minEffectiveCapacity"`
	MaxEffectiveCapacity              ResourceInfo                    `json:"maxEffectiveCapacity" xml:"maxEffectiveCapacity"`
	MaximumAllocation                 ResourceInfo                    `json:"maximumAllocation" xml:"maximumAllocation"`
	QueueAcls                         QueueAclsInfo                   `json:"queueAcls" xml:"queueAcls"`
	QueuePriority                     int32                           `json:"queuePriority" xml:"queuePriority"`
	OrderingPolicyInfo                string                          `json:"orderingPolicyInfo" xml:"orderingPolicyInfo"` // fifo for leaves, utilization for parents
	AutoCreateChildQueueEnabled       bool                            `json:"autoCreateChildQueueEnabled" xml:"autoCreateChildQueueEnabled"`
	LeafQueueTemplate                 LeafQueueTemplateInfo           `json:"leafQueueTemplate" xml:"leafQueueTemplate"`
	Mode                              string                          `json:"mode" xml:"mode"`
	QueueType                         string                          `json:"queueType" xml:"queueType"` // parent or leaf
	CreationMethod                    string                          `json:"creationMethod" xml:"creationMethod"`
	AutoCreationEligibility           string                          `json:"autoCreationEligibility" xml:"autoCreationEligibility"`
	DefaultNodeLabelExpression        string                          `json:"defaultNodeLabelExpression,omitempty" xml:"defaultNodeLabelExpression,omitempty"`
	AutoQueueTemplateProperties       AutoQueueTemplatePropertiesInfo `json:"autoQueueTemplateProperties" xml:"autoQueueTemplateProperties"`
	AutoQueueParentTemplateProperties AutoQueueTemplatePropertiesInfo `json:"autoQueueParentTemplateProperties" xml:"autoQueueParentTemplateProperties"`
	AutoQueueLeafTemplateProperties   AutoQueueTemplatePropertiesInfo `json:"autoQueueLeafTemplateProperties" xml:"autoQueueLeafTemplateProperties"`
	*LeafQueueInfo
}

func (q CapacitySchedulerQueueInfo) xsiType() string {
	if q.LeafQueueInfo != nil {
		return TypeLeafQueue
	}
	return ""
}

// MarshalJSON writes the queue, a leaf with its "type" first.
func (q CapacitySchedulerQueueInfo) MarshalJSON() ([]byte, error) {
	type plain CapacitySchedulerQueueInfo
	return withType(q.xsiType(), plain(q))
}

// LeafQueueInfo holds the fields CapacitySchedulerLeafQueueInfo adds to a
// queue.
type LeafQueueInfo struct {
	NumActiveApplications        int32        `json:"numActiveApplications" xml:"numActiveApplications"`
	NumPendingApplications       int32        `json:"numPendingApplications" xml:"numPendingApplications"`
	NumContainers                int32        `json:"numContainers" xml:"numContainers"`
	MaxApplications              int32        `json:"maxApplications" xml:"maxApplications"`
	MaxApplicationsPerUser       int32        `json:"maxApplicationsPerUser" xml:"maxApplicationsPerUser"`
	UserLimit                    Float32      `json:"userLimit" xml:"userLimit"`
	Users                        UsersInfo    `json:"users" xml:"users"` // {} when no user has applications
	UserLimitFactor              Float32      `json:"userLimitFactor" xml:"userLimitFactor"`
	ConfiguredMaxAMResourceLimit Float32      `json:"configuredMaxAMResourceLimit" xml:"configuredMaxAMResourceLimit"`
	AMResourceLimit              ResourceInfo `json:"AMResourceLimit" xml:"AMResourceLimit"`
	UsedAMResource               ResourceInfo `json:"usedAMResource" xml:"usedAMResource"`
	UserAMResourceLimit          ResourceInfo `json:"userAMResourceLimit" xml:"userAMResourceLimit"`
	PreemptionDisabled           bool         `json:"preemptionDisabled" xml:"preemptionDisabled"`
	IntraQueuePreemptionDisabled bool         `json:"intraQueuePreemptionDisabled" xml:"intraQueuePreemptionDisabled"`
	DefaultPriority              int32        `json:"defaultPriority" xml:"defaultPriority"`
	IsAutoCreatedLeafQueue       bool         `json:"isAutoCreatedLeafQueue" xml:"isAutoCreatedLeafQueue"`
	MaxApplicationLifetime       int64        `json:"maxApplicationLifetime" xml:"maxApplicationLifetime"`         // -1: none
	DefaultApplicationLifetime   int64        `json:"defaultApplicationLifetime" xml:"defaultApplicationLifetime"` // -1: none
}

// QueueCapacitiesInfo is a queue's capacities by node partition:
// {"queueCapacitiesByPartition":[...]}.
type QueueCapacitiesInfo struct {
	QueueCapacitiesByPartition []PartitionQueueCapacitiesInfo `json:"queueCapacitiesByPartition,omitempty" xml:"queueCapacitiesByPartition,omitempty"`
}

// PartitionQueueCapacitiesInfo is a queue's capacities in one partition
// ("" is the default partition), in percent.
type PartitionQueueCapacitiesInfo struct {
	PartitionName           string                   `json:"partitionName" xml:"partitionName"`
	QueueCapacityVectorInfo *QueueCapacityVectorInfo `json:"queueCapacityVectorInfo,omitempty" xml:"queueCapacityVectorInfo,omitempty"`
	Capacity                Float32                  `json:"capacity" xml:"capacity"`
	UsedCapacity            Float32                  `json:"usedCapacity" xml:"usedCapacity"`
	MaxCapacity             Float32                  `json:"maxCapacity" xml:"maxCapacity"`
	AbsoluteCapacity        Float32                  `json:"absoluteCapacity" xml:"absoluteCapacity"`
	AbsoluteUsedCapacity    Float32                  `json:"absoluteUsedCapacity" xml:"absoluteUsedCapacity"`
	AbsoluteMaxCapacity     Float32                  `json:"absoluteMaxCapacity" xml:"absoluteMaxCapacity"`
	MaxAMLimitPercentage    Float32                  `json:"maxAMLimitPercentage" xml:"maxAMLimitPercentage"`
	Weight                  Float32                  `json:"weight" xml:"weight"`
	NormalizedWeight        Float32                  `json:"normalizedWeight" xml:"normalizedWeight"`
	// Configured bounds carry the scheduler's minimum and maximum
	// allocation as their resource types' bounds.
	ConfiguredMinResource ResourceInfo `json:"configuredMinResource" xml:"configuredMinResource"`
	ConfiguredMaxResource ResourceInfo `json:"configuredMaxResource" xml:"configuredMaxResource"`
	EffectiveMinResource  ResourceInfo `json:"effectiveMinResource" xml:"effectiveMinResource"`
	EffectiveMaxResource  ResourceInfo `json:"effectiveMaxResource" xml:"effectiveMaxResource"`
}

// QueueCapacityVectorInfo is a queue's configured capacity vector, e.g.
// "[memory-mb=60.0%,vcores=60.0%]" with an entry per resource.
type QueueCapacityVectorInfo struct {
	ConfiguredCapacityVector string                         `json:"configuredCapacityVector" xml:"configuredCapacityVector"`
	CapacityVectorEntries    []QueueCapacityVectorEntryInfo `json:"capacityVectorEntries,omitempty" xml:"capacityVectorEntries,omitempty"`
}

// QueueCapacityVectorEntryInfo is one resource of a capacity vector.
type QueueCapacityVectorEntryInfo struct {
	ResourceName  string `json:"resourceName" xml:"resourceName"`
	ResourceValue string `json:"resourceValue" xml:"resourceValue"` // "60.0%"
}

// UsersInfo is a leaf queue's active users: {"user":[...]}.
type UsersInfo struct {
	User []UserInfo `json:"user,omitempty" xml:"user,omitempty"`
}

// UserInfo is one user's use of a leaf queue.
type UserInfo struct {
	Username               string        `json:"username" xml:"username"`
	ResourcesUsed          ResourceInfo  `json:"resourcesUsed" xml:"resourcesUsed"`
	NumPendingApplications int32         `json:"numPendingApplications" xml:"numPendingApplications"`
	NumActiveApplications  int32         `json:"numActiveApplications" xml:"numActiveApplications"`
	AMResourceUsed         ResourceInfo  `json:"AMResourceUsed" xml:"AMResourceUsed"`
	UserResourceLimit      ResourceInfo  `json:"userResourceLimit" xml:"userResourceLimit"`
	Resources              ResourcesInfo `json:"resources" xml:"resources"`
	UserWeight             Float32       `json:"userWeight" xml:"userWeight"`
	IsActive               bool          `json:"isActive" xml:"isActive"`
}

// QueueAclsInfo is a queue's ACLs: {"queueAcl":[...]}.
type QueueAclsInfo struct {
	QueueACL []QueueAclInfo `json:"queueAcl,omitempty" xml:"queueAcl,omitempty"`
}

// QueueAclInfo is one ACL; the RM lists ADMINISTER_QUEUE,
// APPLICATION_MAX_PRIORITY and SUBMIT_APP, "*" for everyone and " " for
// no one.
type QueueAclInfo struct {
	AccessType        string `json:"accessType" xml:"accessType"`
	AccessControlList string `json:"accessControlList" xml:"accessControlList"`
}

// LeafQueueTemplateInfo is a queue's auto-created leaf template; {} when
// none.
type LeafQueueTemplateInfo struct {
	Property []ConfItem `json:"property,omitempty" xml:"property,omitempty"`
}

// AutoQueueTemplatePropertiesInfo is a queue's auto-queue template
// properties, shaped like LeafQueueTemplateInfo; {} when none.
type AutoQueueTemplatePropertiesInfo = LeafQueueTemplateInfo

// ConfItem is one configuration property of a template.
type ConfItem struct {
	Name  string `json:"name" xml:"name"`
	Value string `json:"value" xml:"value"`
}

// CapacitySchedulerHealthInfo is the scheduler's last allocation,
// release, preemption and reservation, and its last run's counts.
type CapacitySchedulerHealthInfo struct {
	LastRun        int64                  `json:"lastrun" xml:"lastrun"`
	OperationsInfo []OperationInformation `json:"operationsInfo,omitempty" xml:"operationsInfo,omitempty"`
	LastRunDetails []LastRunDetails       `json:"lastRunDetails,omitempty" xml:"lastRunDetails,omitempty"`
}

// OperationInformation is the last operation of one kind (last-allocation,
// last-release, last-preemption, last-reservation); "N/A" where unknown.
type OperationInformation struct {
	Operation   string `json:"operation" xml:"operation"`
	NodeID      string `json:"nodeId" xml:"nodeId"`
	ContainerID string `json:"containerId" xml:"containerId"`
	Queue       string `json:"queue" xml:"queue"`
}

// LastRunDetails counts one kind of operation (releases, allocations,
// reservations) in the scheduler's last run.
type LastRunDetails struct {
	Operation string       `json:"operation" xml:"operation"`
	Count     int64        `json:"count" xml:"count"`
	Resources ResourceInfo `json:"resources" xml:"resources"`
}

// withType writes v's JSON object with "type" first, as Jersey writes the
// xsi:type of a subclass; typ "" writes v as it is.
func withType(typ string, v any) ([]byte, error) {
	b, err := marshalJSONNoEscape(v)
	if err != nil || typ == "" {
		return b, err
	}
	head := `{"type":"` + typ + `"`
	if string(b) == "{}" {
		return []byte(head + "}"), nil
	}
	return append([]byte(head+","), b[1:]...), nil
}
