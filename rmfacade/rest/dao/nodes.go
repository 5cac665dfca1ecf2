package dao

import "encoding/xml"

// NodesInfo is GET /ws/v1/cluster/nodes: {"nodes":{"node":[...]}}, and
// {"nodes":{}} (<nodes/>) when none match.
type NodesInfo struct {
	XMLName xml.Name    `json:"-" xml:"nodes"`
	Node    []*NodeInfo `json:"node,omitempty" xml:"node,omitempty"`
}

func (NodesInfo) jsonRoot() string { return "nodes" }

// NodeInfo is a NodeManager: GET /ws/v1/cluster/nodes/{nodeid} as
// {"node":{...}}, and each element of NodesInfo. (There is no healthStatus
// since Hadoop 2.8, whatever the documentation shows.)
type NodeInfo struct {
	XMLName                    xml.Name `json:"-" xml:"node"`
	Rack                       string   `json:"rack" xml:"rack"`   // "/default-rack"
	State                      string   `json:"state" xml:"state"` // NodeState: NEW, RUNNING, UNHEALTHY, DECOMMISSIONING, DECOMMISSIONED, LOST, REBOOTED, SHUTDOWN
	ID                         string   `json:"id" xml:"id"`       // host:port
	NodeHostName               string   `json:"nodeHostName" xml:"nodeHostName"`
	NodeHTTPAddress            string   `json:"nodeHTTPAddress" xml:"nodeHTTPAddress"` // "" for a node that is not running
	LastHealthUpdate           int64    `json:"lastHealthUpdate" xml:"lastHealthUpdate"`
	Version                    string   `json:"version" xml:"version"`
	HealthReport               string   `json:"healthReport" xml:"healthReport"`
	NumContainers              int32    `json:"numContainers" xml:"numContainers"`
	UsedMemoryMB               int64    `json:"usedMemoryMB" xml:"usedMemoryMB"`
	AvailMemoryMB              int64    `json:"availMemoryMB" xml:"availMemoryMB"`
	UsedVirtualCores           int64    `json:"usedVirtualCores" xml:"usedVirtualCores"`
	AvailableVirtualCores      int64    `json:"availableVirtualCores" xml:"availableVirtualCores"`
	MemUtilization             Float32  `json:"memUtilization" xml:"memUtilization"` // percent of physical memory in use
	CPUUtilization             Float32  `json:"cpuUtilization" xml:"cpuUtilization"`
	NumRunningOpportContainers int32    `json:"numRunningOpportContainers" xml:"numRunningOpportContainers"`
	UsedMemoryOpportGB         int64    `json:"usedMemoryOpportGB" xml:"usedMemoryOpportGB"`
	UsedVirtualCoresOpport     int64    `json:"usedVirtualCoresOpport" xml:"usedVirtualCoresOpport"`
	NumQueuedContainers        int32    `json:"numQueuedContainers" xml:"numQueuedContainers"`
	// Left out when the node has no labels.
	NodeLabels          []string                 `json:"nodeLabels,omitempty" xml:"nodeLabels,omitempty"`
	AllocationTags      AllocationTagsInfo       `json:"allocationTags" xml:"allocationTags"`
	ResourceUtilization *ResourceUtilizationInfo `json:"resourceUtilization,omitempty" xml:"resourceUtilization,omitempty"`
	// Left out when the scheduler has no report of the node.
	UsedResource       *ResourceInfo      `json:"usedResource,omitempty" xml:"usedResource,omitempty"`
	AvailableResource  *ResourceInfo      `json:"availableResource,omitempty" xml:"availableResource,omitempty"`
	NodeAttributesInfo NodeAttributesInfo `json:"nodeAttributesInfo" xml:"nodeAttributesInfo"`
	TotalResource      ResourceInfo       `json:"totalResource" xml:"totalResource"`
	SubClusterID       string             `json:"subClusterId,omitempty" xml:"subClusterId,omitempty"` // federation only
}

func (NodeInfo) jsonRoot() string { return "node" }

// AllocationTagsInfo is a node's allocation tags; {} when none.
type AllocationTagsInfo struct {
	AllocationTagInfo []AllocationTagInfo `json:"allocationTagInfo,omitempty" xml:"allocationTagInfo,omitempty"`
}

// AllocationTagInfo counts the containers on a node with one tag.
type AllocationTagInfo struct {
	AllocationTag    string `json:"allocationTag" xml:"allocationTag"`
	AllocationsCount int64  `json:"allocationsCount" xml:"allocationsCount"`
}

// NodeAttributesInfo is a node's attributes; {} when none.
type NodeAttributesInfo struct {
	NodeAttributeInfo []NodeAttributeInfo `json:"nodeAttributeInfo,omitempty" xml:"nodeAttributeInfo,omitempty"`
}

// NodeAttributeInfo is one node attribute.
type NodeAttributeInfo struct {
	Prefix string `json:"prefix" xml:"prefix"`
	Name   string `json:"name" xml:"name"`
	Type   string `json:"type" xml:"type"`
	Value  string `json:"value" xml:"value"`
}
