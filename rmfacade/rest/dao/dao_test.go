package dao

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Samples transcribed from hadoop-yarn-site/src/site/markdown/
// ResourceManagerRest.md (Hadoop 3 edition). The documentation predates
// fields the RM now writes, so most samples are checked as a subset of what
// the DTOs write; the small ones must come out exactly.

const docClusterInfoJSON = `{
  "clusterInfo":
  {
    "id":1324053971963,
    "startedOn":1324053971963,
    "state":"STARTED",
    "haState":"ACTIVE",
    "rmStateStoreName":"org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore",
    "resourceManagerVersion":"3.0.0-SNAPSHOT",
    "resourceManagerBuildVersion":"3.0.0-SNAPSHOT from unknown by user1 source checksum 11111111111111111111111111111111",
    "resourceManagerVersionBuiltOn":"2016-01-01T01:00Z",
    "hadoopVersion":"3.0.0-SNAPSHOT",
    "hadoopBuildVersion":"3.0.0-SNAPSHOT from unknown by user1 source checksum 11111111111111111111111111111111",
    "hadoopVersionBuiltOn":"2016-01-01T01:00Z",
    "haZooKeeperConnectionState": "ResourceManager HA is not enabled."  }
}`

const docClusterInfoXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<clusterInfo>
  <id>1324053971963</id>
  <startedOn>1324053971963</startedOn>
  <state>STARTED</state>
  <haState>ACTIVE</haState>
  <rmStateStoreName>org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore</rmStateStoreName>
  <resourceManagerVersion>3.0.0-SNAPSHOT</resourceManagerVersion>
  <resourceManagerBuildVersion>3.0.0-SNAPSHOT from unknown by user1 source checksum 11111111111111111111111111111111</resourceManagerBuildVersion>
  <resourceManagerVersionBuiltOn>2016-01-01T01:00Z</resourceManagerVersionBuiltOn>
  <hadoopVersion>3.0.0-SNAPSHOT</hadoopVersion>
  <hadoopBuildVersion>3.0.0-SNAPSHOT from unknown by user1 source checksum 11111111111111111111111111111111</hadoopBuildVersion>
  <hadoopVersionBuiltOn>2016-01-01T01:00Z</hadoopVersionBuiltOn>
  <haZooKeeperConnectionState>ResourceManager HA is not enabled.</haZooKeeperConnectionState>
</clusterInfo>`

var clusterInfo = &ClusterInfo{
	ID: 1324053971963, StartedOn: 1324053971963, State: "STARTED", HAState: "ACTIVE",
	RMStateStoreName:              "org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore",
	ResourceManagerVersion:        "3.0.0-SNAPSHOT",
	ResourceManagerBuildVersion:   "3.0.0-SNAPSHOT from unknown by user1 source checksum 11111111111111111111111111111111",
	ResourceManagerVersionBuiltOn: "2016-01-01T01:00Z",
	HadoopVersion:                 "3.0.0-SNAPSHOT",
	HadoopBuildVersion:            "3.0.0-SNAPSHOT from unknown by user1 source checksum 11111111111111111111111111111111",
	HadoopVersionBuiltOn:          "2016-01-01T01:00Z",
	HAZooKeeperConnectionState:    "ResourceManager HA is not enabled.",
}

const docClusterMetricsJSON = `{
  "clusterMetrics":
  {
    "appsSubmitted":0, "appsCompleted":0, "appsPending":0, "appsRunning":0, "appsFailed":0, "appsKilled":0,
    "reservedMB":0, "availableMB":17408, "allocatedMB":0,
    "reservedVirtualCores":0, "availableVirtualCores":7, "allocatedVirtualCores":1,
    "containersAllocated":0, "containersReserved":0, "containersPending":0,
    "totalMB":17408, "totalVirtualCores":8, "totalNodes":1, "lostNodes":0, "unhealthyNodes":0,
    "decommissioningNodes":0, "decommissionedNodes":0, "rebootedNodes":0, "activeNodes":1, "shutdownNodes":0
  }
}`

const docClusterMetricsXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<clusterMetrics>
  <appsSubmitted>0</appsSubmitted><appsCompleted>0</appsCompleted><appsPending>0</appsPending>
  <appsRunning>0</appsRunning><appsFailed>0</appsFailed><appsKilled>0</appsKilled>
  <reservedMB>0</reservedMB><availableMB>17408</availableMB><allocatedMB>0</allocatedMB>
  <reservedVirtualCores>0</reservedVirtualCores><availableVirtualCores>7</availableVirtualCores>
  <allocatedVirtualCores>1</allocatedVirtualCores><containersAllocated>0</containersAllocated>
  <containersReserved>0</containersReserved><containersPending>0</containersPending>
  <totalMB>17408</totalMB><totalVirtualCores>8</totalVirtualCores><totalNodes>1</totalNodes>
  <lostNodes>0</lostNodes><unhealthyNodes>0</unhealthyNodes><decommissioningNodes>0</decommissioningNodes>
  <decommissionedNodes>0</decommissionedNodes><rebootedNodes>0</rebootedNodes><activeNodes>1</activeNodes>
  <shutdownNodes>0</shutdownNodes>
</clusterMetrics>`

var clusterMetrics = &ClusterMetricsInfo{
	AvailableMB: 17408, AvailableVirtualCores: 7, AllocatedVirtualCores: 1, TotalMB: 17408, TotalVirtualCores: 8,
	TotalNodes: 1, ActiveNodes: 1, RMSchedulerBusyPercent: -1,
	TotalUsedResourcesAcrossPartition:     NewResource(0, 1),
	TotalClusterResourcesAcrossPartition:  NewResource(17408, 8),
	TotalReservedResourcesAcrossPartition: NewResource(0, 0),
	CrossPartitionMetricsAvailable:        true,
}

// The first application of the documentation's /apps sample.
const docAppsJSON = `{
  "apps":
  {
    "app":
    [
      {
        "id": "application_1476912658570_0002",
        "user": "user2",
        "name": "word count",
        "queue": "default",
        "state": "FINISHED",
        "finalStatus": "SUCCEEDED",
        "progress": 100,
        "trackingUI": "History",
        "trackingUrl": "http://host.domain.com:8088/cluster/app/application_1476912658570_0002",
        "diagnostics": "...",
        "clusterId": 1476912658570,
        "applicationType": "MAPREDUCE",
        "applicationTags": "",
        "priority": -1,
        "startedTime": 1476913457320,
        "finishedTime": 1476913761898,
        "elapsedTime": 304578,
        "amContainerLogs": "http://host.domain.com:8042/node/containerlogs/container_1476912658570_0002_02_000001/user2",
        "amHostHttpAddress": "host.domain.com:8042",
        "allocatedMB": 0,
        "allocatedVCores": 0,
        "runningContainers": 0,
        "memorySeconds": 206464,
        "vcoreSeconds": 201,
        "queueUsagePercentage": 0,
        "clusterUsagePercentage": 0,
        "preemptedResourceMB": 0,
        "preemptedResourceVCores": 0,
        "numNonAMContainerPreempted": 0,
        "numAMContainerPreempted": 0,
        "logAggregationStatus": "DISABLED",
        "unmanagedApplication": false,
        "appNodeLabelExpression": "",
        "amNodeLabelExpression": ""
      }
    ]
  }
}`

const docAppsXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<apps>
    <app>
        <id>application_1476912658570_0002</id>
        <user>user2</user>
        <name>word count</name>
        <queue>default</queue>
        <state>FINISHED</state>
        <finalStatus>SUCCEEDED</finalStatus>
        <progress>100.0</progress>
        <trackingUI>History</trackingUI>
        <trackingUrl>http://host.domain.com:8088/cluster/app/application_1476912658570_0002</trackingUrl>
        <diagnostics>...</diagnostics>
        <clusterId>1476912658570</clusterId>
        <applicationType>YARN</applicationType>
        <applicationTags></applicationTags>
        <priority>-1</priority>
        <startedTime>1476913457320</startedTime>
        <finishedTime>1476913761898</finishedTime>
        <elapsedTime>304578</elapsedTime>
        <amContainerLogs>http://host.domain.com:8042/node/containerlogs/container_1476912658570_0002_02_000001/user2</amContainerLogs>
        <amHostHttpAddress>host.domain.com:8042</amHostHttpAddress>
        <allocatedMB>-1</allocatedMB>
        <allocatedVCores>-1</allocatedVCores>
        <runningContainers>-1</runningContainers>
        <memorySeconds>206464</memorySeconds>
        <vcoreSeconds>201</vcoreSeconds>
        <queueUsagePercentage>0.0</queueUsagePercentage>
        <clusterUsagePercentage>0.0</clusterUsagePercentage>
        <preemptedResourceMB>0</preemptedResourceMB>
        <preemptedResourceVCores>0</preemptedResourceVCores>
        <numNonAMContainerPreempted>0</numNonAMContainerPreempted>
        <numAMContainerPreempted>0</numAMContainerPreempted>
        <logAggregationStatus>DISABLED</logAggregationStatus>
        <unmanagedApplication>false</unmanagedApplication>
        <appNodeLabelExpression></appNodeLabelExpression>
        <amNodeLabelExpression></amNodeLabelExpression>
    </app>
</apps>`

var finishedApp = &AppInfo{
	ID: "application_1476912658570_0002", User: "user2", Name: "word count", Queue: "default",
	State: "FINISHED", FinalStatus: "SUCCEEDED", Progress: 100, TrackingUI: "History",
	TrackingURL:     "http://host.domain.com:8088/cluster/app/application_1476912658570_0002",
	Diagnostics:     "...",
	ClusterID:       1476912658570,
	ApplicationType: "MAPREDUCE", Priority: -1,
	StartedTime: 1476913457320, LaunchTime: 1476913458000, FinishedTime: 1476913761898, ElapsedTime: 304578,
	AMContainerLogs:   "http://host.domain.com:8042/node/containerlogs/container_1476912658570_0002_02_000001/user2",
	AMHostHTTPAddress: "host.domain.com:8042", AMRPCAddress: "host.domain.com:37311", MasterNodeID: "host.domain.com:45454",
	AllocatedMB: -1, AllocatedVCores: -1, ReservedMB: -1, ReservedVCores: -1, RunningContainers: -1,
	MemorySeconds: 206464, VcoreSeconds: 201,
	ResourceSecondsMap:   LongMap{{ResourceMemoryMB, 206464}, {ResourceVCores, 201}},
	LogAggregationStatus: "DISABLED", AppNodeLabelExpression: Ptr(""), AMNodeLabelExpression: Ptr(""),
	Timeouts: UnlimitedLifetime(),
}

const docAppAttemptsJSON = `{
   "appAttempts" : {
      "appAttempt" : [
         {
            "nodeId" : "host.domain.com:8041",
            "nodeHttpAddress" : "host.domain.com:8042",
            "startTime" : 1326381444693,
            "id" : 1,
            "logsLink" : "http://host.domain.com:8042/node/containerlogs/container_1326821518301_0005_01_000001/user1",
            "containerId" : "container_1326821518301_0005_01_000001"
         }
      ]
   }
}`

var appAttempts = &AppAttemptsInfo{AppAttempt: []*AppAttemptInfo{{
	ID: 1, StartTime: 1326381444693, ContainerID: "container_1326821518301_0005_01_000001",
	NodeHTTPAddress: "host.domain.com:8042", NodeID: "host.domain.com:8041",
	LogsLink:                 "http://host.domain.com:8042/node/containerlogs/container_1326821518301_0005_01_000001/user1",
	NodesBlacklistedBySystem: Ptr(""), AppAttemptID: "appattempt_1326821518301_0005_000001",
	ExportPorts: "null", AppAttemptState: "RUNNING",
}}}

const docNodesJSON = `{
  "nodes":
  {
    "node":
    [
      {
        "rack":"\/default-rack",
        "state":"RUNNING",
        "id":"host.domain.com:54158",
        "nodeHostName":"host.domain.com",
        "nodeHTTPAddress":"host.domain.com:8042",
        "lastHealthUpdate": 1476995346399,
        "version": "3.0.0-alpha2-SNAPSHOT",
        "healthReport":"",
        "numContainers":0,
        "usedMemoryMB":0,
        "availMemoryMB":8192,
        "usedVirtualCores":0,
        "availableVirtualCores":8,
        "resourceUtilization":
        {
          "nodePhysicalMemoryMB":1027,
          "nodeVirtualMemoryMB":1027,
          "nodeCPUUsage":0.016661113128066063,
          "aggregatedContainersPhysicalMemoryMB":0,
          "aggregatedContainersVirtualMemoryMB":0,
          "containersCPUUsage":0
        }
      }
    ]
  }
}`

const docNodeXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<node>
  <rack>/default-rack</rack>
  <state>RUNNING</state>
  <id>host.domain.com:54158</id>
  <nodeHostName>host.domain.com</nodeHostName>
  <nodeHTTPAddress>host.domain.com:8042</nodeHTTPAddress>
  <lastHealthUpdate>1476916746399</lastHealthUpdate>
  <version>3.0.0-SNAPSHOT</version>
  <healthReport></healthReport>
  <numContainers>0</numContainers>
  <usedMemoryMB>0</usedMemoryMB>
  <availMemoryMB>8192</availMemoryMB>
  <usedVirtualCores>0</usedVirtualCores>
  <availableVirtualCores>8</availableVirtualCores>
  <resourceUtilization>
    <nodePhysicalMemoryMB>968</nodePhysicalMemoryMB>
    <nodeVirtualMemoryMB>968</nodeVirtualMemoryMB>
    <nodeCPUUsage>0.01332889124751091</nodeCPUUsage>
    <aggregatedContainersPhysicalMemoryMB>0</aggregatedContainersPhysicalMemoryMB>
    <aggregatedContainersVirtualMemoryMB>0</aggregatedContainersVirtualMemoryMB>
    <containersCPUUsage>0.0</containersCPUUsage>
  </resourceUtilization>
</node>`

var docNode = &NodeInfo{
	Rack: "/default-rack", State: "RUNNING", ID: "host.domain.com:54158", NodeHostName: "host.domain.com",
	NodeHTTPAddress: "host.domain.com:8042", LastHealthUpdate: 1476995346399, Version: "3.0.0-alpha2-SNAPSHOT",
	AvailMemoryMB: 8192, AvailableVirtualCores: 8, MemUtilization: 12.5390625, CPUUtilization: 0.2082639,
	ResourceUtilization: &ResourceUtilizationInfo{NodePhysicalMemoryMB: 1027, NodeVirtualMemoryMB: 1027, NodeCPUUsage: 0.016661113128066063},
	UsedResource:        NewResource(0, 0), AvailableResource: NewResource(8192, 8), TotalResource: NewResourceInfo(8192, 8),
}

const docNewApplicationJSON = `{
  "application-id":"application_1404198295326_0003",
  "maximum-resource-capability":
    {
      "memory":8192,
      "vCores":32
    }
}`

const docNewApplicationXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<NewApplication>
  <application-id>application_1404198295326_0003</application-id>
  <maximum-resource-capability>
    <memory>8192</memory>
    <vCores>32</vCores>
  </maximum-resource-capability>
</NewApplication>`

const docRemoteExceptionXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<RemoteException>
  <exception>BadRequestException</exception>
  <message>java.lang.Exception: Only 'KILLED' is allowed as a target state.</message>
  <javaClassName>org.apache.hadoop.yarn.webapp.BadRequestException</javaClassName>
</RemoteException>`

// The start of the documentation's CapacityScheduler sample: root, queue a,
// its child a1 and a1's leaf a1a (a1b, a2 and b left out).
const docSchedulerJSON = `{
    "scheduler": {
        "schedulerInfo": {
            "capacity": 100.0,
            "maxCapacity": 100.0,
            "queueName": "root",
            "queues": {
                "queue": [
                    {
                        "absoluteCapacity": 10.5,
                        "absoluteMaxCapacity": 50.0,
                        "absoluteUsedCapacity": 0.0,
                        "capacity": 10.5,
                        "maxCapacity": 50.0,
                        "numApplications": 0,
                        "queueName": "a",
                        "queues": {
                            "queue": [
                                {
                                    "absoluteCapacity": 3.15,
                                    "absoluteMaxCapacity": 25.0,
                                    "absoluteUsedCapacity": 0.0,
                                    "capacity": 30.000002,
                                    "maxCapacity": 50.0,
                                    "numApplications": 0,
                                    "queueName": "a1",
                                    "queues": {
                                        "queue": [
                                            {
                                                "absoluteCapacity": 2.6775,
                                                "absoluteMaxCapacity": 25.0,
                                                "absoluteUsedCapacity": 0.0,
                                                "capacity": 85.0,
                                                "maxActiveApplications": 1,
                                                "maxActiveApplicationsPerUser": 1,
                                                "maxApplications": 267,
                                                "maxApplicationsPerUser": 267,
                                                "maxCapacity": 100.0,
                                                "numActiveApplications": 0,
                                                "numApplications": 0,
                                                "numContainers": 0,
                                                "numPendingApplications": 0,
                                                "queueName": "a1a",
                                                "resourcesUsed": {
                                                    "memory": 0,
                                                    "vCores": 0
                                                },
                                                "state": "RUNNING",
                                                "type": "capacitySchedulerLeafQueueInfo",
                                                "usedCapacity": 0.0,
                                                "usedResources": "<memory:0, vCores:0>",
                                                "userLimit": 100,
                                                "userLimitFactor": 1.0,
                                                "users": null
                                            }
                                        ]
                                    },
                                    "resourcesUsed": {
                                        "memory": 0,
                                        "vCores": 0
                                    },
                                    "state": "RUNNING",
                                    "usedCapacity": 0.0,
                                    "usedResources": "<memory:0, vCores:0>"
                                }
                            ]
                        },
                        "resourcesUsed": {
                            "memory": 0,
                            "vCores": 0
                        },
                        "state": "RUNNING",
                        "usedCapacity": 0.0,
                        "usedResources": "<memory:0, vCores:0>"
                    }
                ]
            },
            "type": "capacityScheduler",
            "usedCapacity": 0.0
        }
    }
}`

const docSchedulerXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<scheduler>
  <schedulerInfo xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="capacityScheduler">
    <capacity>100.0</capacity>
    <usedCapacity>0.0</usedCapacity>
    <maxCapacity>100.0</maxCapacity>
    <queueName>root</queueName>
    <queues>
      <queue>
        <capacity>10.5</capacity>
        <usedCapacity>0.0</usedCapacity>
        <maxCapacity>50.0</maxCapacity>
        <absoluteCapacity>10.5</absoluteCapacity>
        <absoluteMaxCapacity>50.0</absoluteMaxCapacity>
        <absoluteUsedCapacity>0.0</absoluteUsedCapacity>
        <numApplications>0</numApplications>
        <usedResources>&lt;memory:0, vCores:0&gt;</usedResources>
        <queueName>a</queueName>
        <state>RUNNING</state>
        <queues>
          <queue>
            <capacity>30.000002</capacity>
            <usedCapacity>0.0</usedCapacity>
            <maxCapacity>50.0</maxCapacity>
            <absoluteCapacity>3.15</absoluteCapacity>
            <absoluteMaxCapacity>25.0</absoluteMaxCapacity>
            <absoluteUsedCapacity>0.0</absoluteUsedCapacity>
            <numApplications>0</numApplications>
            <usedResources>&lt;memory:0, vCores:0&gt;</usedResources>
            <queueName>a1</queueName>
            <state>RUNNING</state>
            <queues>
              <queue xsi:type="capacitySchedulerLeafQueueInfo">
                <capacity>85.0</capacity>
                <usedCapacity>0.0</usedCapacity>
                <maxCapacity>100.0</maxCapacity>
                <absoluteCapacity>2.6775</absoluteCapacity>
                <absoluteMaxCapacity>25.0</absoluteMaxCapacity>
                <absoluteUsedCapacity>0.0</absoluteUsedCapacity>
                <numApplications>0</numApplications>
                <usedResources>&lt;memory:0, vCores:0&gt;</usedResources>
                <queueName>a1a</queueName>
                <state>RUNNING</state>
                <resourcesUsed>
                  <memory>0</memory>
                  <vCores>0</vCores>
                </resourcesUsed>
                <numActiveApplications>0</numActiveApplications>
                <numPendingApplications>0</numPendingApplications>
                <numContainers>0</numContainers>
                <maxApplications>267</maxApplications>
                <maxApplicationsPerUser>267</maxApplicationsPerUser>
                <maxActiveApplications>1</maxActiveApplications>
                <maxActiveApplicationsPerUser>1</maxActiveApplicationsPerUser>
                <userLimit>100</userLimit>
                <users/>
                <userLimitFactor>1.0</userLimitFactor>
              </queue>
            </queues>
            <resourcesUsed>
              <memory>0</memory>
              <vCores>0</vCores>
            </resourcesUsed>
          </queue>
        </queues>
        <resourcesUsed>
          <memory>0</memory>
          <vCores>0</vCores>
        </resourcesUsed>
      </queue>
    </queues>
  </schedulerInfo>
</scheduler>`

// Fields the documentation shows that the RM no longer writes.
var docErrata = map[string]bool{
	"usedResources":                true, // a string, dropped from CapacitySchedulerQueueInfo
	"maxActiveApplications":        true, // Hadoop 2
	"maxActiveApplicationsPerUser": true,
}

func schedulerSample() *SchedulerTypeInfo {
	queue := func(path, name string, capacity, absCapacity, maxCapacity, absMax Float32) *CapacitySchedulerQueueInfo {
		return &CapacitySchedulerQueueInfo{
			QueuePath: path, QueueName: name, Capacity: capacity, AbsoluteCapacity: absCapacity,
			MaxCapacity: maxCapacity, AbsoluteMaxCapacity: absMax, Weight: -1, MaxParallelApps: math.MaxInt32,
			State: "RUNNING", ResourcesUsed: NewResourceInfo(0, 0), NodeLabels: []string{"*"},
			Capacities: QueueCapacitiesInfo{QueueCapacitiesByPartition: []PartitionQueueCapacitiesInfo{{
				Capacity: capacity, AbsoluteCapacity: absCapacity, MaxCapacity: maxCapacity, AbsoluteMaxCapacity: absMax,
				Weight: -1, ConfiguredMinResource: NewResourceInfo(0, 0), ConfiguredMaxResource: NewResourceInfo(0, 0),
				EffectiveMinResource: NewResourceInfo(0, 0), EffectiveMaxResource: NewResourceInfo(0, 0),
			}}},
			Resources: ResourcesInfo{ResourceUsagesByPartition: []PartitionResourcesInfo{{
				Used: NewResourceInfo(0, 0), Reserved: NewResourceInfo(0, 0), Pending: NewResourceInfo(0, 0),
			}}},
			MinEffectiveCapacity: NewResourceInfo(0, 0), MaxEffectiveCapacity: NewResourceInfo(0, 0),
			MaximumAllocation: NewResourceInfo(8192, 4),
			QueueAcls: QueueAclsInfo{QueueACL: []QueueAclInfo{
				{"ADMINISTER_QUEUE", "*"}, {"APPLICATION_MAX_PRIORITY", "*"}, {"SUBMIT_APP", "*"},
			}},
			OrderingPolicyInfo: "utilization", Mode: "percentage", QueueType: "parent",
			CreationMethod: "static", AutoCreationEligibility: "off",
		}
	}
	leaf := queue("root.a.a1.a1a", "a1a", 85, 2.6775, 100, 25)
	leaf.OrderingPolicyInfo, leaf.QueueType = "fifo", "leaf"
	leaf.LeafQueueInfo = &LeafQueueInfo{
		MaxApplications: 267, MaxApplicationsPerUser: 267, UserLimit: 100, UserLimitFactor: 1,
		ConfiguredMaxAMResourceLimit: 0.1, AMResourceLimit: NewResourceInfo(1024, 1),
		UsedAMResource: NewResourceInfo(0, 0), UserAMResourceLimit: NewResourceInfo(1024, 1),
		PreemptionDisabled: true, IntraQueuePreemptionDisabled: true,
		MaxApplicationLifetime: -1, DefaultApplicationLifetime: -1,
	}
	a1 := queue("root.a.a1", "a1", 30.000002, 3.15, 50, 25)
	a1.Queues = &CapacitySchedulerQueueInfoList{Queue: []*CapacitySchedulerQueueInfo{leaf}}
	a := queue("root.a", "a", 10.5, 10.5, 50, 50)
	a.Queues = &CapacitySchedulerQueueInfoList{Queue: []*CapacitySchedulerQueueInfo{a1}}
	return &SchedulerTypeInfo{SchedulerInfo: &CapacitySchedulerInfo{
		Capacity: 100, MaxCapacity: 100, Weight: -1, QueueName: "root", QueuePath: "root",
		MaxParallelApps:    math.MaxInt32,
		Queues:             &CapacitySchedulerQueueInfoList{Queue: []*CapacitySchedulerQueueInfo{a}},
		OrderingPolicyInfo: "utilization", Mode: "percentage", QueueType: "parent",
		CreationMethod: "static", AutoCreationEligibility: "off",
	}}
}

// TestDocSamples marshals populated DTOs and compares them with the
// documentation's samples: every field the documentation shows must be
// written under the same name, nesting and kind of JSON value (or XML
// element path), and the samples marked exact must come out as they are.
func TestDocSamples(t *testing.T) {
	cases := []struct {
		name              string
		v                 any
		docJSON, docXML   string
		exactJSON, exactX bool
	}{
		{"clusterInfo", clusterInfo, docClusterInfoJSON, docClusterInfoXML, true, true},
		{"clusterMetrics", clusterMetrics, docClusterMetricsJSON, docClusterMetricsXML, false, false},
		{"apps", &AppsInfo{App: []*AppInfo{finishedApp}}, docAppsJSON, docAppsXML, false, false},
		{"appAttempts", appAttempts, docAppAttemptsJSON, "", false, false},
		{"nodes", &NodesInfo{Node: []*NodeInfo{docNode}}, docNodesJSON, "", false, false},
		{"node", docNode, "", docNodeXML, false, false},
		{"new-application", &NewApplication{ApplicationID: "application_1404198295326_0003",
			MaximumResourceCapability: ResourceInfo{Memory: 8192, VCores: 32}}, docNewApplicationJSON, docNewApplicationXML, true, true},
		{"new-application with resource types", &NewApplication{ApplicationID: "application_1404198295326_0003",
			MaximumResourceCapability: NewResourceInfo(8192, 32)}, docNewApplicationJSON, docNewApplicationXML, false, false},
		{"appstate", &AppState{State: "ACCEPTED"}, `{"state":"ACCEPTED"}`,
			"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<appstate>\n  <state>ACCEPTED</state>\n</appstate>", true, true},
		{"appqueue", &AppQueue{Queue: "default"}, `{"queue":"default"}`,
			"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<appqueue>\n  <queue>default</queue>\n</appqueue>", true, true},
		{"apppriority", &AppPriority{Priority: 0}, `{"priority":0}`,
			"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<applicationpriority>\n  <priority>0</priority>\n</applicationpriority>", true, true},
		{"RemoteException", &RemoteExceptionData{Exception: "BadRequestException",
			Message:       "java.lang.Exception: Only 'KILLED' is allowed as a target state.",
			JavaClassName: ClassBadRequestException}, "", docRemoteExceptionXML, false, true},
		{"scheduler", schedulerSample(), docSchedulerJSON, docSchedulerXML, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.docJSON != "" {
				got, err := EncodeJSON(c.v)
				if err != nil {
					t.Fatal(err)
				}
				if c.exactJSON {
					var want bytes.Buffer
					if err := json.Compact(&want, []byte(c.docJSON)); err != nil {
						t.Fatal(err)
					}
					if got := string(got); got != want.String() {
						t.Errorf("JSON\n got %s\nwant %s", got, want.String())
					}
				}
				checkJSONShape(t, got, []byte(c.docJSON))
			}
			if c.docXML != "" {
				got, err := EncodeXML(c.v)
				if err != nil {
					t.Fatal(err)
				}
				if c.exactX {
					want := regexp.MustCompile(`>\s+<`).ReplaceAllString(strings.Replace(c.docXML, "?>\n", "?>", 1), "><")
					if string(got) != want {
						t.Errorf("XML\n got %s\nwant %s", got, want)
					}
				}
				checkXMLShape(t, got, c.docXML)
			}
		})
	}
}

// jsonShape records the kind of value at each path of a JSON document.
func jsonShape(v any, path string, out map[string]string) {
	switch v := v.(type) {
	case map[string]any:
		out[path] = "object"
		for k, x := range v {
			jsonShape(x, path+"/"+k, out)
		}
	case []any:
		out[path] = "array"
		for _, x := range v {
			jsonShape(x, path+"[]", out)
		}
	case string:
		out[path] = "string"
	case json.Number:
		out[path] = "number"
	case bool:
		out[path] = "bool"
	case nil:
		out[path] = "null"
	}
}

func checkJSONShape(t *testing.T, got, doc []byte) {
	t.Helper()
	parse := func(b []byte) map[string]string {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("%v in %s", err, b)
		}
		m := map[string]string{}
		jsonShape(v, "", m)
		return m
	}
	have, want := parse(got), parse(doc)
	for _, p := range sortedKeys(want) {
		if docErrata[p[strings.LastIndexByte(p, '/')+1:]] {
			continue
		}
		switch {
		case have[p] == "":
			t.Errorf("JSON lacks %s (%s in the documentation)", p, want[p])
		case want[p] != "null" && have[p] != want[p]:
			t.Errorf("JSON has %s as %s, the documentation as %s", p, have[p], want[p])
		}
	}
}

// xmlShape lists the element paths (and attributes, as @name) of an XML
// document.
func xmlShape(t *testing.T, doc string) map[string]bool {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	out := map[string]bool{}
	var stack []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%v in %s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			p := strings.Join(stack, "/")
			out[p] = true
			for _, a := range tok.Attr {
				if a.Name.Space != "xmlns" {
					out[p+"/@"+a.Name.Local+"="+a.Value] = true
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
}

func checkXMLShape(t *testing.T, got []byte, doc string) {
	t.Helper()
	have, want := xmlShape(t, string(got)), xmlShape(t, doc)
	for _, p := range sortedKeys(want) {
		if docErrata[p[strings.LastIndexByte(p, '/')+1:]] {
			continue
		}
		if !have[p] {
			t.Errorf("XML lacks %s", p)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The documentation's submission examples, verbatim.
const docSubmitJSON = `  {
    "application-id":"application_1404203615263_0001",
    "application-name":"test",
    "am-container-spec":
    {
      "local-resources":
      {
        "entry":
        [
          {
            "key":"AppMaster.jar",
            "value":
            {
              "resource":"hdfs://hdfs-namenode:9000/user/testuser/DistributedShell/demo-app/AppMaster.jar",
              "type":"FILE",
              "visibility":"APPLICATION",
              "size": 43004,
              "timestamp": 1405452071209
            }
          }
        ]
      },
      "commands":
      {
        "command":"{{JAVA_HOME}}/bin/java -Xmx10m org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster --container_memory 10 --container_vcores 1 --num_containers 1 --priority 0 1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr"
      },
      "environment":
      {
        "entry":
        [
          {
            "key": "DISTRIBUTEDSHELLSCRIPTTIMESTAMP",
            "value": "1405459400754"
          },
          {
            "key": "CLASSPATH",
            "value": "{{CLASSPATH}}<CPS>./*<CPS>{{HADOOP_CONF_DIR}}<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/*<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/lib/*<CPS>{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/*<CPS>{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/lib/*<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/*<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/lib/*<CPS>./log4j.properties"
          },
          {
            "key": "DISTRIBUTEDSHELLSCRIPTLEN",
            "value": "6"
          },
          {
            "key": "DISTRIBUTEDSHELLSCRIPTLOCATION",
            "value": "hdfs://hdfs-namenode:9000/user/testuser/demo-app/shellCommands"
          }
        ]
      }
    },
    "unmanaged-AM":false,
    "max-app-attempts":2,
    "resource":
    {
      "memory":1024,
      "vCores":1
    },
    "application-type":"YARN",
    "keep-containers-across-application-attempts":false,
    "log-aggregation-context":
    {
      "log-include-pattern":"file1",
      "log-exclude-pattern":"file2",
      "rolled-log-include-pattern":"file3",
      "rolled-log-exclude-pattern":"file4",
      "log-aggregation-policy-class-name":"org.apache.hadoop.yarn.server.nodemanager.containermanager.logaggregation.AllContainerLogAggregationPolicy",
      "log-aggregation-policy-parameters":""
    },
    "attempt-failures-validity-interval":3600000,
    "reservation-id":"reservation_1454114874_1",
    "am-black-listing-requests":
    {
      "am-black-listing-enabled":true,
      "disable-failure-threshold":0.01
    }
  }`

const docSubmitXML = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<application-submission-context>
  <application-id>application_1404204891930_0002</application-id>
  <application-name>test</application-name>
  <queue>testqueue</queue>
  <priority>3</priority>
  <am-container-spec>
    <local-resources>
      <entry>
        <key>example</key>
        <value>
          <resource>hdfs://hdfs-namenode:9000/user/testuser/DistributedShell/demo-app/AppMaster.jar</resource>
          <type>FILE</type>
          <visibility>APPLICATION</visibility>
          <size>43004</size>
          <timestamp>1405452071209</timestamp>
        </value>
      </entry>
    </local-resources>
    <environment>
      <entry>
        <key>DISTRIBUTEDSHELLSCRIPTTIMESTAMP</key>
        <value>1405459400754</value>
      </entry>
      <entry>
        <key>CLASSPATH</key>
        <value>{{CLASSPATH}}&lt;CPS&gt;./*&lt;CPS&gt;{{HADOOP_CONF_DIR}}&lt;CPS&gt;{{HADOOP_COMMON_HOME}}/share/hadoop/common/*&lt;CPS&gt;{{HADOOP_COMMON_HOME}}/share/hadoop/common/lib/*&lt;CPS&gt;{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/*&lt;CPS&gt;{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/lib/*&lt;CPS&gt;{{HADOOP_YARN_HOME}}/share/hadoop/yarn/*&lt;CPS&gt;{{HADOOP_YARN_HOME}}/share/hadoop/yarn/lib/*&lt;CPS&gt;./log4j.properties</value>
      </entry>
      <entry>
        <key>DISTRIBUTEDSHELLSCRIPTLEN</key>
        <value>6</value>
      </entry>
      <entry>
        <key>DISTRIBUTEDSHELLSCRIPTLOCATION</key>
        <value>hdfs://hdfs-namenode:9000/user/testuser/demo-app/shellCommands</value>
      </entry>
    </environment>
    <commands>
      <command>{{JAVA_HOME}}/bin/java -Xmx10m org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster --container_memory 10 --container_vcores 1 --num_containers 1 --priority 0 1&gt;&lt;LOG_DIR&gt;/AppMaster.stdout 2&gt;&lt;LOG_DIR&gt;/AppMaster.stderr</command>
    </commands>
    <service-data>
      <entry>
        <key>test</key>
        <value>dmFsdWUxMg</value>
      </entry>
    </service-data>
    <credentials>
      <tokens/>
      <secrets>
        <entry>
          <key>secret1</key>
          <value>c2VjcmV0MQ</value>
        </entry>
      </secrets>
    </credentials>
    <application-acls>
      <entry>
        <key>VIEW_APP</key>
        <value>testuser3, testuser4</value>
      </entry>
      <entry>
        <key>MODIFY_APP</key>
        <value>testuser1, testuser2</value>
      </entry>
    </application-acls>
  </am-container-spec>
  <unmanaged-AM>false</unmanaged-AM>
  <max-app-attempts>2</max-app-attempts>
  <resource>
    <memory>1024</memory>
    <vCores>1</vCores>
  </resource>
  <application-type>YARN</application-type>
  <keep-containers-across-application-attempts>false</keep-containers-across-application-attempts>
  <application-tags>
    <tag>tag 2</tag>
    <tag>tag1</tag>
  </application-tags>
  <log-aggregation-context>
    <log-include-pattern>file1</log-include-pattern>
    <log-exclude-pattern>file2</log-exclude-pattern>
    <rolled-log-include-pattern>file3</rolled-log-include-pattern>
    <rolled-log-exclude-pattern>file4</rolled-log-exclude-pattern>
    <log-aggregation-policy-class-name>org.apache.hadoop.yarn.server.nodemanager.containermanager.logaggregation.AllContainerLogAggregationPolicy</log-aggregation-policy-class-name>
    <log-aggregation-policy-parameters></log-aggregation-policy-parameters>
  </log-aggregation-context>
  <attempt-failures-validity-interval>3600000</attempt-failures-validity-interval>
  <reservation-id>reservation_1454114874_1</reservation-id>
  <am-black-listing-requests>
    <am-black-listing-enabled>true</am-black-listing-enabled>
    <disable-failure-threshold>0.01</disable-failure-threshold>
  </am-black-listing-requests>
</application-submission-context>`

func request(method, contentType, body string) *http.Request {
	r := httptest.NewRequest(method, "/ws/v1/cluster/apps", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r
}

const (
	dsCommand = "{{JAVA_HOME}}/bin/java -Xmx10m org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster" +
		" --container_memory 10 --container_vcores 1 --num_containers 1 --priority 0 1><LOG_DIR>/AppMaster.stdout 2><LOG_DIR>/AppMaster.stderr"
	dsClasspath = "{{CLASSPATH}}<CPS>./*<CPS>{{HADOOP_CONF_DIR}}<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/*" +
		"<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/lib/*<CPS>{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/*" +
		"<CPS>{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/lib/*<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/*" +
		"<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/lib/*<CPS>./log4j.properties"
	appMasterJar = "hdfs://hdfs-namenode:9000/user/testuser/DistributedShell/demo-app/AppMaster.jar"
)

// TestReadDocSubmissions parses the documentation's submission bodies.
func TestReadDocSubmissions(t *testing.T) {
	env := StringMap{
		{"DISTRIBUTEDSHELLSCRIPTTIMESTAMP", "1405459400754"},
		{"CLASSPATH", dsClasspath},
		{"DISTRIBUTEDSHELLSCRIPTLEN", "6"},
		{"DISTRIBUTEDSHELLSCRIPTLOCATION", "hdfs://hdfs-namenode:9000/user/testuser/demo-app/shellCommands"},
	}
	logs := &LogAggregationContextInfo{
		LogIncludePattern: "file1", LogExcludePattern: "file2",
		RolledLogIncludePattern: "file3", RolledLogExcludePattern: "file4",
		LogAggregationPolicyClassName: "org.apache.hadoop.yarn.server.nodemanager.containermanager.logaggregation.AllContainerLogAggregationPolicy",
	}
	blacklisting := &AMBlackListingRequestInfo{AMBlackListingEnabled: true, DisableFailureThreshold: 0.01}
	cases := []struct {
		name, contentType, body string
		want                    *ApplicationSubmissionContextInfo
	}{
		{"json", "application/json", docSubmitJSON, &ApplicationSubmissionContextInfo{
			ApplicationID: "application_1404203615263_0001", ApplicationName: "test",
			Priority: -1, // absent: Priority.UNDEFINED
			AMContainerSpec: ContainerLaunchContextInfo{
				LocalResources: LocalResources{{"AppMaster.jar", LocalResourceInfo{
					Resource: appMasterJar, Type: "FILE", Visibility: "APPLICATION", Size: 43004, Timestamp: 1405452071209}}},
				Environment: env,
				Commands:    Commands{Command: []string{dsCommand}}, // a single command, sent bare
			},
			CancelTokensWhenComplete: true, MaxAppAttempts: 2, Resource: ResourceInfo{Memory: 1024, VCores: 1},
			ApplicationType: "YARN", LogAggregationContext: logs, AttemptFailuresValidityInterval: 3600000,
			ReservationID: "reservation_1454114874_1", AMBlackListingRequests: blacklisting,
		}},
		{"xml", "application/xml", docSubmitXML, &ApplicationSubmissionContextInfo{
			ApplicationID: "application_1404204891930_0002", ApplicationName: "test", Queue: "testqueue", Priority: 3,
			AMContainerSpec: ContainerLaunchContextInfo{
				LocalResources: LocalResources{{"example", LocalResourceInfo{
					Resource: appMasterJar, Type: "FILE", Visibility: "APPLICATION", Size: 43004, Timestamp: 1405452071209}}},
				Environment:     env,
				Commands:        Commands{Command: []string{dsCommand}},
				ServiceData:     StringMap{{"test", "dmFsdWUxMg"}},
				Credentials:     CredentialsInfo{Secrets: StringMap{{"secret1", "c2VjcmV0MQ"}}},
				ApplicationACLs: StringMap{{"VIEW_APP", "testuser3, testuser4"}, {"MODIFY_APP", "testuser1, testuser2"}},
			},
			CancelTokensWhenComplete: true, MaxAppAttempts: 2, Resource: ResourceInfo{Memory: 1024, VCores: 1},
			ApplicationType: "YARN", ApplicationTags: ApplicationTags{Tag: []string{"tag 2", "tag1"}},
			LogAggregationContext: logs, AttemptFailuresValidityInterval: 3600000,
			ReservationID: "reservation_1454114874_1", AMBlackListingRequests: blacklisting,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got ApplicationSubmissionContextInfo
			if err := Read(request(http.MethodPost, c.contentType, c.body), &got); err != nil {
				t.Fatal(err)
			}
			got.XMLName = xml.Name{}
			if !reflect.DeepEqual(&got, c.want) {
				g, _ := json.MarshalIndent(&got, "", " ")
				w, _ := json.MarshalIndent(c.want, "", " ")
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
			if s := string(DecodeBase64("dmFsdWUxMg")); s != "value12" {
				t.Errorf("service data decodes to %q", s)
			}
		})
	}
}

// TestReadLenient checks the liberties Jersey and JAXB allow a body.
func TestReadLenient(t *testing.T) {
	cases := []struct {
		name, contentType, body string
		check                   func(*testing.T, *ApplicationSubmissionContextInfo)
	}{
		{"quoted numbers and booleans", "application/json",
			`{"priority":"4","max-app-attempts":" 3 ","unmanaged-AM":"true","resource":{"memory":"2048","vCores":"2"},"attempt-failures-validity-interval":"+10"}`,
			func(t *testing.T, s *ApplicationSubmissionContextInfo) {
				if s.Priority != 4 || s.MaxAppAttempts != 3 || !s.UnmanagedAM || s.Resource.Memory != 2048 ||
					s.Resource.VCores != 2 || s.AttemptFailuresValidityInterval != 10 {
					t.Errorf("%+v", s)
				}
			}},
		{"unreadable number reads 0", "application/json", `{"priority":"abc","max-app-attempts":2.5}`,
			func(t *testing.T, s *ApplicationSubmissionContextInfo) {
				if s.Priority != 0 || s.MaxAppAttempts != 0 {
					t.Errorf("priority %d attempts %d", s.Priority, s.MaxAppAttempts)
				}
			}},
		{"single entries, repeated keys, numbers as strings", "application/json",
			`{"am-container-spec":{"environment":{"entry":{"key":"A","value":1}},"application-acls":{"entry":{"key":"VIEW_APP","value":"u"},"entry":{"key":"MODIFY_APP","value":"v"}},"commands":{"command":["a","b"]}},"application-tags":{"tag":"solo"}}`,
			func(t *testing.T, s *ApplicationSubmissionContextInfo) {
				spec := s.AMContainerSpec
				if !reflect.DeepEqual(spec.Environment, StringMap{{"A", "1"}}) ||
					!reflect.DeepEqual(spec.ApplicationACLs, StringMap{{"VIEW_APP", "u"}, {"MODIFY_APP", "v"}}) ||
					!reflect.DeepEqual(spec.Commands.Command, []string{"a", "b"}) ||
					!reflect.DeepEqual(s.ApplicationTags.Tag, []string{"solo"}) {
					t.Errorf("%+v", s)
				}
			}},
		{"unknown fields and nulls ignored, defaults kept", "application/json; charset=UTF-8",
			`{"application-name":null,"foo":{"bar":[1,2]},"queue":"q"}`,
			func(t *testing.T, s *ApplicationSubmissionContextInfo) {
				if s.ApplicationName != "" || s.Queue != "q" || s.Priority != -1 || !s.CancelTokensWhenComplete ||
					s.AttemptFailuresValidityInterval != -1 {
					t.Errorf("%+v", s)
				}
			}},
		{"xml whitespace and booleans", "application/xml",
			"<application-submission-context><priority> 2 </priority><unmanaged-AM>1</unmanaged-AM><cancel-tokens-when-complete>false</cancel-tokens-when-complete><queue> q </queue></application-submission-context>",
			func(t *testing.T, s *ApplicationSubmissionContextInfo) {
				if s.Priority != 2 || !s.UnmanagedAM || s.CancelTokensWhenComplete || s.Queue != " q " {
					t.Errorf("%+v", s)
				}
			}},
		{"xml in latin-1", "application/xml",
			"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><application-submission-context><application-name>caf\xe9</application-name></application-submission-context>",
			func(t *testing.T, s *ApplicationSubmissionContextInfo) {
				if s.ApplicationName != "café" {
					t.Errorf("name %q", s.ApplicationName)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s ApplicationSubmissionContextInfo
			if err := Read(request(http.MethodPost, c.contentType, c.body), &s); err != nil {
				t.Fatal(err)
			}
			c.check(t, &s)
		})
	}

	var st AppState
	if err := Read(request(http.MethodPut, "application/json", `{"state":"KILLED","diagnostics":"by me"}`), &st); err != nil ||
		st.State != "KILLED" || st.Diagnostics != "by me" {
		t.Errorf("AppState %+v, %v", st, err)
	}
	var q AppQueue
	if err := Read(request(http.MethodPut, "application/xml", `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<appqueue>
  <queue>test</queue>
</appqueue>`), &q); err != nil || q.Queue != "test" {
		t.Errorf("AppQueue %+v, %v", q, err)
	}
	var p AppPriority
	if err := Read(request(http.MethodPut, "application/json", `{"priority":8}`), &p); err != nil || p.Priority != 8 {
		t.Errorf("AppPriority %+v, %v", p, err)
	}
}

// TestReadErrors checks the statuses and RemoteExceptions of unreadable
// bodies against what the 3.4.1 RM answered.
func TestReadErrors(t *testing.T) {
	cases := []struct {
		name, contentType, body string
		status                  int
		message                 string // a prefix; "" for none
	}{
		{"no content type", "", `{"queue":"a"}`, 503,
			"com.sun.jersey.api.MessageException: A message body reader for Java class org.apache.hadoop.yarn.server.resourcemanager.webapp.dao.AppQueue, and Java type class org.apache.hadoop.yarn.server.resourcemanager.webapp.dao.AppQueue, and MIME media type application/octet-stream was not found.\n"},
		{"text/xml", "text/xml", `<appqueue><queue>a</queue></appqueue>`, 503, ""},
		{"text/plain", "text/plain", `x`, 503, ""},
		{"empty json", "application/json", ``, 400,
			"javax.xml.bind.UnmarshalException: Error creating JSON-based XMLStreamReader\n - with linked exception:\n[javax.xml.stream.XMLStreamException: JSON expression can not be empty!]"},
		{"empty xml", "application/xml", ` `, 400,
			"javax.xml.bind.UnmarshalException\n - with linked exception:\n[org.xml.sax.SAXParseException; lineNumber: 1; columnNumber: 1; Premature end of file.]"},
		{"bad json", "application/json", `{"queue":`, 400, "javax.xml.bind.UnmarshalException\n - with linked exception:\n[javax.xml.stream.XMLStreamException: "},
		{"json array", "application/json", `["a"]`, 400, "javax.xml.bind.UnmarshalException\n"},
		{"bad xml", "application/xml", `<appqueue><queue>a</appqueue>`, 400, "javax.xml.bind.UnmarshalException\n - with linked exception:\n[org.xml.sax.SAXParseException; "},
		// Exactly one document: trailing bytes or a second document are
		// refused whole, never half-read and acted on.
		{"json with trailing bytes", "application/json", `{"queue":"a"}garbage`, 400,
			"javax.xml.bind.UnmarshalException\n - with linked exception:\n[javax.xml.stream.XMLStreamException: "},
		{"two json documents", "application/json", `{"queue":"a"} {"queue":"b"}`, 400, "javax.xml.bind.UnmarshalException\n"},
		{"xml with trailing element", "application/xml", `<appqueue><queue>a</queue></appqueue><appqueue/>`, 400,
			"javax.xml.bind.UnmarshalException\n - with linked exception:\n[org.xml.sax.SAXParseException; Content is not allowed in trailing section."},
		{"xml with trailing text", "application/xml", `<appqueue><queue>a</queue></appqueue>x`, 400, "javax.xml.bind.UnmarshalException\n"},
		{"wrong xml root", "application/xml", `<foo><queue>default</queue></foo>`, 400,
			`javax.xml.bind.UnmarshalException: unexpected element (uri:"", local:"foo"). Expected elements are <{}NewApplication>,<{}application-submission-context>,`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var q AppQueue
			err := Read(request(http.MethodPut, c.contentType, c.body), &q)
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a *RequestError", err)
			}
			if re.Status != c.status || re.Exception != "WebApplicationException" || re.JavaClassName != ClassWebApplicationException {
				t.Errorf("got %d %s %s", re.Status, re.Exception, re.JavaClassName)
			}
			if !strings.HasPrefix(re.Message, c.message) || (c.message == "") != (re.Message == "") {
				t.Errorf("message %q, want %q…", re.Message, c.message)
			}
			w := httptest.NewRecorder()
			re.Write(w, request(http.MethodPut, "", ""))
			if w.Code != c.status || !strings.HasPrefix(w.Body.String(), `{"RemoteException":{"exception":"WebApplicationException",`) {
				t.Errorf("wrote %d %s", w.Code, w.Body)
			}
		})
	}
	if err := Read(request(http.MethodPut, "application/json", `{}`), AppQueue{}); err == nil {
		t.Error("Read into a non-pointer succeeded")
	}
}

// TestPrefersXML checks content negotiation against the 3.4.1 RM's
// choices.
func TestPrefersXML(t *testing.T) {
	cases := []struct {
		accept string
		xml    bool
	}{
		{"", false},
		{"*/*", false},
		{"application/json", false},
		{"application/xml", true},
		{"APPLICATION/XML", true},
		{"application/xml;q=0.5, application/json;q=0.9", false},
		{"application/json;q=0.5, application/xml", true},
		{"application/xml, application/json", true},
		{"application/json, application/xml", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true}, // a browser
		{"application/*", false},
		{"application/xml;q=0", true},
		{"*/*, application/xml", true}, // more specific first at equal quality
		{"application/json, text/javascript, */*; q=0.01", false},
		{"text/plain", false}, // nothing acceptable: the RM answers 500, Write JSON
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodGet, "/ws/v1/cluster/info", nil)
		if c.accept != "" {
			r.Header.Set("Accept", c.accept)
		}
		if got := PrefersXML(r); got != c.xml {
			t.Errorf("Accept %q: PrefersXML %v, want %v", c.accept, got, c.xml)
		}
	}
}

// TestWrite checks what Write and Error put on the wire.
func TestWrite(t *testing.T) {
	cases := []struct {
		name   string
		accept string
		status int
		v      any
		ctype  string
		body   string
	}{
		{"empty apps json", "", 200, &AppsInfo{}, ContentTypeJSON, `{"apps":{}}`},
		{"empty apps xml", "application/xml", 200, &AppsInfo{}, ContentTypeXML, xmlHeader + `<apps/>`},
		{"empty nodes", "application/json", 200, NodesInfo{}, ContentTypeJSON, `{"nodes":{}}`},
		{"bare appstate", "", 202, &AppState{State: "ACCEPTED"}, ContentTypeJSON, `{"state":"ACCEPTED"}`},
		{"no body", "application/xml", 202, nil, ContentTypeXML, ``},
		{"html not escaped", "", 200, &AppState{State: "<&>\u2028"}, ContentTypeJSON, "{\"state\":\"<&>\u2028\"}"},
		{"JAXB text escaping", "application/xml", 200, &AppQueue{Queue: "q\"a'b<c>d&e\tf\ng\rh"}, ContentTypeXML,
			xmlHeader + "<appqueue><queue>q&quot;a'b&lt;c&gt;d&amp;e\tf\ng&#xD;h</queue></appqueue>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/ws/v1/cluster/apps", nil)
			if c.accept != "" {
				r.Header.Set("Accept", c.accept)
			}
			w := httptest.NewRecorder()
			Write(w, r, c.status, c.v)
			if w.Code != c.status || w.Header().Get("Content-Type") != c.ctype || w.Body.String() != c.body {
				t.Errorf("got %d %q %s\nwant %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body, c.status, c.ctype, c.body)
			}
		})
	}

	// Error renders the RemoteException exactly as the RM did for a bad
	// application id.
	for _, accept := range []string{"application/json", "application/xml"} {
		r := httptest.NewRequest(http.MethodGet, "/ws/v1/cluster/apps/garbage", nil)
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		Error(w, r, http.StatusBadRequest, "BadRequestException", ClassBadRequestException,
			"java.lang.IllegalArgumentException: Invalid ApplicationId prefix: garbage. The valid ApplicationId should start with prefix application")
		want := readGolden(t, "error-badrequest.json")
		if accept == "application/xml" {
			want = readGolden(t, "error-badrequest.xml")
		}
		if w.Code != 400 || !bytes.Equal(w.Body.Bytes(), want) {
			t.Errorf("Error (%s) wrote %d %s\nwant %s", accept, w.Code, w.Body, want)
		}
	}
	// The RM leaves out a null message.
	w := httptest.NewRecorder()
	Error(w, httptest.NewRequest(http.MethodGet, "/", nil), 503, "UndeclaredThrowableException", "java.lang.reflect.UndeclaredThrowableException", "")
	if want := `{"RemoteException":{"exception":"UndeclaredThrowableException","javaClassName":"java.lang.reflect.UndeclaredThrowableException"}}`; w.Body.String() != want {
		t.Errorf("got %s, want %s", w.Body, want)
	}
}

func TestStatusFor(t *testing.T) {
	for class, want := range map[string]int{
		ClassNotFoundException:                    404,
		ClassBadRequestException:                  400,
		ClassForbiddenException:                   403,
		ClassAuthorizationException:               401,
		ClassIllegalArgumentException:             400,
		ClassIOException:                          404,
		ClassWebApplicationException:              503,
		ClassYarnException:                        503,
		"java.lang.NullPointerException":          503,
		"java.lang.UnsupportedOperationException": 400,
	} {
		if got := StatusFor(class); got != want {
			t.Errorf("StatusFor(%s) = %d, want %d", class, got, want)
		}
	}
}

func TestJavaFloat(t *testing.T) {
	cases := []struct {
		v    float64
		bits int
		want string
	}{
		{0, 32, "0.0"},
		{math.Copysign(0, -1), 32, "-0.0"},
		{100, 32, "100.0"},
		{-1, 32, "-1.0"},
		{60.000004, 32, "60.000004"},
		{13.890396, 32, "13.890396"},
		{8.333334, 32, "8.333334"},
		{float64(float32(0.1)), 32, "0.1"},
		{2.6775, 32, "2.6775"},
		{0.001, 32, "0.001"},
		{0.000999, 32, "9.99E-4"},
		{9999999, 32, "9999999.0"},
		{1e7, 32, "1.0E7"},
		{1.5e10, 32, "1.5E10"},
		{123456.7, 32, "123456.7"},
		{0.5, 64, "0.5"},
		{0.016661113128066063, 64, "0.016661113128066063"},
		{12345678.9, 64, "1.23456789E7"},
		{math.MaxFloat32, 32, "3.4028235E38"},
		{math.NaN(), 32, "NaN"},
		{math.Inf(1), 64, "INF"},
		{math.Inf(-1), 32, "-INF"},
	}
	for _, c := range cases {
		if got := javaFloat(c.v, c.bits); got != c.want {
			t.Errorf("javaFloat(%v, %d) = %s, want %s", c.v, c.bits, got, c.want)
		}
	}
	for v, want := range map[Float32]string{100: "100.0", Float32(math.NaN()): `"NaN"`, Float32(math.Inf(1)): `"INF"`} {
		if got, _ := json.Marshal(v); string(got) != want {
			t.Errorf("Float32 %v as JSON: %s, want %s", v, got, want)
		}
	}
	var f Float32
	if err := json.Unmarshal([]byte(`"NaN"`), &f); err != nil || !math.IsNaN(float64(f)) {
		t.Errorf("reading \"NaN\": %v %v", f, err)
	}
}

func TestDecodeBase64(t *testing.T) {
	for in, want := range map[string]string{
		"dmFsdWUxMg":     "value12",
		"c2VjcmV0MQ":     "secret1",
		"c2VjcmV0MQ==":   "secret1",
		"c2Vj\r\ncmV0MQ": "secret1",
		"-_8=":           "\xfb\xff",
		"":               "",
	} {
		if got := string(DecodeBase64(in)); got != want {
			t.Errorf("DecodeBase64(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTags checks that every response field has the same name and
// omission in JSON and XML, and that each wrapped root's JSON name is its
// XML element.
func TestTags(t *testing.T) {
	roots := []any{
		ClusterInfo{}, ClusterMetricsInfo{}, AppsInfo{}, AppInfo{}, AppAttemptsInfo{}, AppAttemptInfo{},
		NodesInfo{}, NodeInfo{}, SchedulerTypeInfo{}, CapacitySchedulerInfo{}, RemoteExceptionData{},
		AppState{}, AppQueue{}, AppPriority{}, NewApplication{}, ApplicationSubmissionContextInfo{},
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] {
			return
		}
		seen[ty] = true
		for i := 0; i < ty.NumField(); i++ {
			f := ty.Field(i)
			if f.Name == "XMLName" {
				continue
			}
			walk(f.Type)
			if f.Anonymous {
				continue
			}
			jn, jo, _ := strings.Cut(f.Tag.Get("json"), ",")
			xn, xo, _ := strings.Cut(f.Tag.Get("xml"), ",")
			if xo == "attr,omitempty" && xn == "xsi:"+jn {
				continue
			}
			if jn != xn || jo != xo {
				t.Errorf("%s.%s: json %q, xml %q", ty.Name(), f.Name, f.Tag.Get("json"), f.Tag.Get("xml"))
			}
		}
	}
	for _, r := range roots {
		walk(reflect.TypeOf(r))
		if jr, ok := r.(jsonRooted); ok {
			if x := xmlRootName(reflect.TypeOf(r)); jr.jsonRoot() != x {
				t.Errorf("%T: JSON root %q, XML root %q", r, jr.jsonRoot(), x)
			}
		}
	}
	walk(reflect.TypeOf(CapacitySchedulerQueueInfo{}))
}
