package dao

import "math"

// ResourceInfo is a Resource: memory and vCores, then every resource type
// (memory-mb and vcores first) with its bounds. As an input (the "resource"
// of a submission) only memory and vCores are read.
type ResourceInfo struct {
	Memory               int64                     `json:"memory" xml:"memory"`
	VCores               int32                     `json:"vCores" xml:"vCores"`
	ResourceInformations *ResourceInformationsInfo `json:"resourceInformations,omitempty" xml:"resourceInformations,omitempty"`
}

// ResourceInformationsInfo lists a resource's types:
// {"resourceInformation":[...]}.
type ResourceInformationsInfo struct {
	ResourceInformation []ResourceInformation `json:"resourceInformation,omitempty" xml:"resourceInformation,omitempty"`
}

// ResourceInformation is one resource type's value
// (org.apache.hadoop.yarn.api.records.ResourceInformation, written through
// its getters, hence the alphabetical order).
type ResourceInformation struct {
	Attributes        StringMap `json:"attributes" xml:"attributes"`
	MaximumAllocation int64     `json:"maximumAllocation" xml:"maximumAllocation"`
	MinimumAllocation int64     `json:"minimumAllocation" xml:"minimumAllocation"`
	Name              string    `json:"name" xml:"name"`
	ResourceType      string    `json:"resourceType" xml:"resourceType"` // COUNTABLE
	Tags              []string  `json:"tags,omitempty" xml:"tags,omitempty"`
	Units             string    `json:"units" xml:"units"`
	Value             int64     `json:"value" xml:"value"`
}

// Resource type names and units of the two built-in types.
const (
	ResourceMemoryMB = "memory-mb"
	ResourceVCores   = "vcores"
	UnitsMemory      = "Mi"
	Countable        = "COUNTABLE"
)

// NewResourceInfo returns memory and vCores as the RM writes a Resource
// built from them: both built-in types, bounded by 0 and Long.MAX_VALUE.
// (Resources from the scheduler configuration, such as a queue's
// configuredMinResource, carry the scheduler's minimum and maximum
// allocation as bounds instead; set them on the result.)
func NewResourceInfo(memoryMB int64, vCores int32) ResourceInfo {
	return ResourceInfo{
		Memory: memoryMB,
		VCores: vCores,
		ResourceInformations: &ResourceInformationsInfo{ResourceInformation: []ResourceInformation{
			{Name: ResourceMemoryMB, ResourceType: Countable, Units: UnitsMemory, Value: memoryMB, MaximumAllocation: math.MaxInt64},
			{Name: ResourceVCores, ResourceType: Countable, Value: int64(vCores), MaximumAllocation: math.MaxInt64},
		}},
	}
}

// NewResource is NewResourceInfo for the pointer fields.
func NewResource(memoryMB int64, vCores int32) *ResourceInfo {
	r := NewResourceInfo(memoryMB, vCores)
	return &r
}

// ResourcesInfo is resource usage by node partition:
// {"resourceUsagesByPartition":[...]}.
type ResourcesInfo struct {
	ResourceUsagesByPartition []PartitionResourcesInfo `json:"resourceUsagesByPartition,omitempty" xml:"resourceUsagesByPartition,omitempty"`
}

// PartitionResourcesInfo is one partition's usage ("" is the default
// partition). The AM figures are left out (nil) for parent queues.
type PartitionResourcesInfo struct {
	PartitionName string        `json:"partitionName" xml:"partitionName"`
	Used          ResourceInfo  `json:"used" xml:"used"`
	Reserved      ResourceInfo  `json:"reserved" xml:"reserved"`
	Pending       ResourceInfo  `json:"pending" xml:"pending"`
	AMUsed        *ResourceInfo `json:"amUsed,omitempty" xml:"amUsed,omitempty"`
	AMLimit       *ResourceInfo `json:"amLimit,omitempty" xml:"amLimit,omitempty"`
	UserAMLimit   *ResourceInfo `json:"userAmLimit,omitempty" xml:"userAmLimit,omitempty"`
}

// ResourceUtilizationInfo is a node's measured utilization as its
// NodeManager reports it.
type ResourceUtilizationInfo struct {
	NodePhysicalMemoryMB                 int32   `json:"nodePhysicalMemoryMB" xml:"nodePhysicalMemoryMB"`
	NodeVirtualMemoryMB                  int32   `json:"nodeVirtualMemoryMB" xml:"nodeVirtualMemoryMB"`
	NodeCPUUsage                         Float64 `json:"nodeCPUUsage" xml:"nodeCPUUsage"`
	AggregatedContainersPhysicalMemoryMB int32   `json:"aggregatedContainersPhysicalMemoryMB" xml:"aggregatedContainersPhysicalMemoryMB"`
	AggregatedContainersVirtualMemoryMB  int32   `json:"aggregatedContainersVirtualMemoryMB" xml:"aggregatedContainersVirtualMemoryMB"`
	ContainersCPUUsage                   Float64 `json:"containersCPUUsage" xml:"containersCPUUsage"`
}
