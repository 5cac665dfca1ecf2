// Package wire is the one mapping between the YARN records of
// protos/yarn/records and their protobuf form (protos/hadoop/yarn): ids,
// resources and node ids, as the RM's protocols and the node plugin's
// ContainerManagementProtocol carry them. The records stay plain values
// that know no wire format; everything that speaks one converts here, so
// the RM and the node plugin cannot drift apart on what an id is.
package wire

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
)

// AppID is an application id in its wire form.
func AppID(id records.ApplicationID) *yarnpb.ApplicationIdProto {
	return &yarnpb.ApplicationIdProto{Id: proto.Int32(id.ID), ClusterTimestamp: proto.Int64(id.ClusterTimestamp)}
}

// AppIDOf decodes an application id; nil is the zero id.
func AppIDOf(p *yarnpb.ApplicationIdProto) records.ApplicationID {
	return records.ApplicationID{ClusterTimestamp: p.GetClusterTimestamp(), ID: p.GetId()}
}

// AttemptID is an application attempt id in its wire form.
func AttemptID(id records.AttemptID) *yarnpb.ApplicationAttemptIdProto {
	return &yarnpb.ApplicationAttemptIdProto{ApplicationId: AppID(id.App), AttemptId: proto.Int32(id.ID)}
}

// AttemptIDOf decodes an application attempt id.
func AttemptIDOf(p *yarnpb.ApplicationAttemptIdProto) records.AttemptID {
	return records.AttemptID{App: AppIDOf(p.GetApplicationId()), ID: p.GetAttemptId()}
}

// ContainerID is a container id in its wire form. Both its attempt and
// the deprecated app_id field carry the application, as Hadoop's
// ContainerIdPBImpl still writes them.
func ContainerID(id records.ContainerID) *yarnpb.ContainerIdProto {
	return &yarnpb.ContainerIdProto{AppId: AppID(id.Attempt.App), AppAttemptId: AttemptID(id.Attempt), Id: proto.Int64(id.ID)}
}

// ContainerIDOf decodes a container id. The application is the attempt's;
// an id whose attempt names none falls back to the deprecated app_id
// field, which old clients set.
func ContainerIDOf(p *yarnpb.ContainerIdProto) records.ContainerID {
	att := p.GetAppAttemptId()
	app := att.GetApplicationId()
	if app == nil {
		app = p.GetAppId()
	}
	return records.ContainerID{Attempt: records.AttemptID{App: AppIDOf(app), ID: att.GetAttemptId()}, ID: p.GetId()}
}

// Resource is a resource in its wire form: memory in MB and vcores.
func Resource(r records.Resource) *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(r.MemoryMB), VirtualCores: proto.Int32(r.VCores)}
}

// ResourceOf decodes a resource's memory and vcores.
func ResourceOf(p *yarnpb.ResourceProto) records.Resource {
	return records.Resource{MemoryMB: p.GetMemory(), VCores: p.GetVirtualCores()}
}

// NodeID is a node id, host:port as YARN's NodeId.toString writes it, in
// its wire form. A malformed id is kept whole as the host, with port 0,
// as a report of it should still name it; SplitNodeID says what is wrong.
func NodeID(id string) *yarnpb.NodeIdProto {
	host, port, _ := SplitNodeID(id)
	return &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(port)}
}

// NodeIDString is the host:port form of a wire node id.
func NodeIDString(p *yarnpb.NodeIdProto) string {
	return p.GetHost() + ":" + strconv.FormatInt(int64(p.GetPort()), 10)
}

// SplitNodeID splits host:port at its last colon. YARN's
// NodeId.fromString refuses an id with more than one colon; this keeps a
// host holding colons (an IPv6 literal) whole instead. On an error, host
// is the whole id and port 0.
func SplitNodeID(id string) (host string, port int32, err error) {
	i := strings.LastIndexByte(id, ':')
	if i < 0 {
		return id, 0, fmt.Errorf("node id %q: no port", id)
	}
	p, err := strconv.ParseInt(id[i+1:], 10, 32)
	if err != nil || p < 0 {
		return id, 0, fmt.Errorf("node id %q: invalid port %q", id, id[i+1:])
	}
	return id[:i], int32(p), nil
}

// NodeState is a node state in its wire form.
func NodeState(s records.NodeState) *yarnpb.NodeStateProto {
	return yarnpb.NodeStateProto(yarnpb.NodeStateProto_value["NS_"+string(s)]).Enum()
}

// NodeReport is a node as `yarn node -list` and an AM's allocate response
// (updatedNodes) carry it.
func NodeReport(n *records.Node, nowMs int64) *yarnpb.NodeReportProto {
	r := &yarnpb.NodeReportProto{
		NodeId: &yarnpb.NodeIdProto{Host: proto.String(n.Host), Port: proto.Int32(n.Port)}, HttpAddress: proto.String(n.HTTPAddress),
		RackName: proto.String(n.Rack), Used: Resource(n.Used), Capability: Resource(n.Capability),
		NumContainers: proto.Int32(n.NumContainers), NodeState: NodeState(n.State), HealthReport: proto.String(n.HealthReport),
		LastHealthReportTime: proto.Int64(n.LastHealthUpdate), NodeLabels: n.Labels,
	}
	// A decommissioning node's timeout is the seconds left to its deadline
	// (YARN-6483), by which an AM such as Spark's drains its executors.
	if n.State == records.NodeDecommissioning && n.DecommissionDeadline != 0 {
		left := max(0, (n.DecommissionDeadline-nowMs+999)/1000)
		r.DecommissioningTimeout = proto.Uint32(uint32(left))
	}
	// What `yarn node -status` prints as "Resource Utilization by Node" and
	// "by Containers" (virtual memory: as physical, nodes run without swap).
	if u := n.Utilization; u != nil {
		r.NodeUtilization = &yarnpb.ResourceUtilizationProto{Pmem: proto.Int32(int32(u.PhysicalMemoryMB)),
			Vmem: proto.Int32(int32(u.PhysicalMemoryMB)), Cpu: proto.Float32(float32(u.CPU))}
		r.ContainersUtilization = &yarnpb.ResourceUtilizationProto{Pmem: proto.Int32(int32(u.ContainersPhysicalMemoryMB)),
			Vmem: proto.Int32(int32(u.ContainersPhysicalMemoryMB)), Cpu: proto.Float32(float32(u.ContainersVCores))}
	}
	return r
}
