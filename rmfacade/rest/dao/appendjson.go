package dao

import (
	"strconv"
	"unicode/utf8"
)

// jsonAppender is implemented by the DTOs a listing holds by the thousand
// (an RM keeps up to yarn.resourcemanager.max-completed-applications of
// them, and clients list them all): they append their JSON without
// encoding/json's reflection, which takes most of an unbounded
// /ws/v1/cluster/apps answer's time. The output is byte for byte what
// encoding/json writes for the same value with marshalJSONNoEscape's
// settings, as TestAppendJSONMatchesReflection checks; DTOs without it are
// encoded by reflection.
type jsonAppender interface {
	appendJSON(b []byte) []byte
}

// jsonStreamer is a listing written to the client while it is encoded,
// a chunk at a time, rather than built whole first: a list of every
// application the RM retains runs to megabytes. flush takes what has been
// appended so far and returns the buffer to go on with (emptied once
// written).
type jsonStreamer interface {
	streamJSON(b []byte, flush func([]byte) []byte) []byte
}

// keepAll is the flush of a listing built whole.
func keepAll(b []byte) []byte { return b }

// appendJSONString appends s quoted as marshalJSONNoEscape quotes it.
// Printable ASCII without quotes or backslashes, nearly every string an RM
// writes, is copied as it is; anything else goes through encoding/json, so
// escapes and invalid UTF-8 come out as it writes them.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			enc, _ := marshalJSONNoEscape(s)
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendReflected appends v encoded by reflection, for the rarely present
// nested parts of an appended DTO.
func appendReflected(b []byte, v any) []byte {
	enc, err := marshalJSONNoEscape(v)
	if err != nil {
		// Only a DTO with an unencodable value fails here, which the
		// reflection path would have reported; write null rather than a
		// broken document.
		return append(b, "null"...)
	}
	return append(b, enc...)
}

// jsonObject appends one object's members in order, writing the commas.
type jsonObject struct {
	b     []byte
	first bool
}

func openObject(b []byte) jsonObject { return jsonObject{b: append(b, '{'), first: true} }

func (o *jsonObject) key(name string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObject) str(name, v string) {
	o.key(name)
	o.b = appendJSONString(o.b, v)
}

// strOmitEmpty is a string member tagged omitempty.
func (o *jsonObject) strOmitEmpty(name, v string) {
	if v != "" {
		o.str(name, v)
	}
}

// strPtr is a *string member tagged omitempty: left out only when nil.
func (o *jsonObject) strPtr(name string, v *string) {
	if v != nil {
		o.str(name, *v)
	}
}

func (o *jsonObject) int(name string, v int64) {
	o.key(name)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObject) bool(name string, v bool) {
	o.key(name)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *jsonObject) float32(name string, v Float32) {
	o.key(name)
	o.b = append(o.b, jsonFloat(float64(v), 32)...)
}

func (o *jsonObject) longMap(name string, m LongMap) {
	o.key(name)
	o.b = m.appendJSON(o.b)
}

func (o *jsonObject) reflected(name string, v any) {
	o.key(name)
	o.b = appendReflected(o.b, v)
}

func (o *jsonObject) close() []byte { return append(o.b, '}') }

// appendJSON writes the map as Jersey does (see LongMap.MarshalJSON).
func (m LongMap) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, e := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"entry":{"key":`...)
		b = appendJSONString(b, e.Key)
		b = append(b, `,"value":"`...)
		b = strconv.AppendInt(b, e.Value, 10)
		b = append(b, '"', '}')
	}
	return append(b, '}')
}

func (a *AppsInfo) appendJSON(b []byte) []byte { return a.streamJSON(b, keepAll) }

// streamJSON appends the list, handing the buffer to flush after each
// application.
func (a *AppsInfo) streamJSON(b []byte, flush func([]byte) []byte) []byte {
	return AppsStream(func(yield func(*AppInfo) bool) {
		for _, app := range a.App {
			if !yield(app) {
				return
			}
		}
	}).streamJSON(b, flush)
}

func (s AppsStream) appendJSON(b []byte) []byte { return s.streamJSON(b, keepAll) }

// streamJSON appends the list as AppsInfo's, {} when empty, handing the
// buffer to flush after each application.
func (s AppsStream) streamJSON(b []byte, flush func([]byte) []byte) []byte {
	o := openObject(b)
	n := 0
	for app := range s {
		if n == 0 {
			o.key("app")
			o.b = append(o.b, '[')
		} else {
			o.b = append(o.b, ',')
		}
		n++
		switch {
		case app == nil:
			o.b = append(o.b, "null"...)
		case app.Encoded != nil:
			o.b = flush(append(o.b, app.Encoded...))
		default:
			o.b = flush(app.appendJSON(o.b))
		}
	}
	if n > 0 {
		o.b = append(o.b, ']')
	}
	return o.close()
}

// appendJSON writes the application's members in AppInfo's field order,
// as encoding/json does.
func (a *AppInfo) appendJSON(b []byte) []byte {
	o := openObject(b)
	o.str("id", a.ID)
	o.str("user", a.User)
	o.str("name", a.Name)
	o.str("queue", a.Queue)
	o.str("state", a.State)
	o.str("finalStatus", a.FinalStatus)
	o.float32("progress", a.Progress)
	o.str("trackingUI", a.TrackingUI)
	o.strOmitEmpty("trackingUrl", a.TrackingURL)
	o.str("diagnostics", a.Diagnostics)
	o.int("clusterId", a.ClusterID)
	o.strOmitEmpty("rmClusterId", a.RMClusterID)
	o.str("applicationType", a.ApplicationType)
	o.str("applicationTags", a.ApplicationTags)
	o.int("priority", int64(a.Priority))
	o.int("startedTime", a.StartedTime)
	o.int("launchTime", a.LaunchTime)
	o.int("finishedTime", a.FinishedTime)
	o.int("elapsedTime", a.ElapsedTime)
	o.strOmitEmpty("amContainerLogs", a.AMContainerLogs)
	o.strOmitEmpty("amHostHttpAddress", a.AMHostHTTPAddress)
	o.strOmitEmpty("amRPCAddress", a.AMRPCAddress)
	o.str("masterNodeId", a.MasterNodeID)
	o.int("allocatedMB", a.AllocatedMB)
	o.int("allocatedVCores", a.AllocatedVCores)
	o.int("reservedMB", a.ReservedMB)
	o.int("reservedVCores", a.ReservedVCores)
	o.int("runningContainers", int64(a.RunningContainers))
	o.int("memorySeconds", a.MemorySeconds)
	o.int("vcoreSeconds", a.VcoreSeconds)
	o.float32("queueUsagePercentage", a.QueueUsagePercentage)
	o.float32("clusterUsagePercentage", a.ClusterUsagePercentage)
	o.longMap("resourceSecondsMap", a.ResourceSecondsMap)
	o.int("preemptedResourceMB", a.PreemptedResourceMB)
	o.int("preemptedResourceVCores", a.PreemptedResourceVCores)
	o.int("numNonAMContainerPreempted", int64(a.NumNonAMContainerPreempted))
	o.int("numAMContainerPreempted", int64(a.NumAMContainerPreempted))
	o.int("preemptedMemorySeconds", a.PreemptedMemorySeconds)
	o.int("preemptedVcoreSeconds", a.PreemptedVcoreSeconds)
	o.longMap("preemptedResourceSecondsMap", a.PreemptedResourceSecondsMap)
	if len(a.ResourceRequests) > 0 {
		o.reflected("resourceRequests", a.ResourceRequests)
	}
	o.strOmitEmpty("logAggregationStatus", a.LogAggregationStatus)
	o.bool("unmanagedApplication", a.UnmanagedApplication)
	o.strPtr("appNodeLabelExpression", a.AppNodeLabelExpression)
	o.strPtr("amNodeLabelExpression", a.AMNodeLabelExpression)
	if a.ResourceInfo != nil {
		o.key("resourceInfo")
		o.b = a.ResourceInfo.appendJSON(o.b)
	}
	if a.Timeouts != nil {
		o.key("timeouts")
		o.b = a.Timeouts.appendJSON(o.b)
	}
	return o.close()
}

func (t *AppTimeoutsInfo) appendJSON(b []byte) []byte {
	o := openObject(b)
	if len(t.Timeout) > 0 {
		o.key("timeout")
		o.b = append(o.b, '[')
		for i, to := range t.Timeout {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			e := openObject(o.b)
			e.str("type", to.Type)
			e.str("expiryTime", to.ExpiryTime)
			e.int("remainingTimeInSeconds", to.RemainingTimeInSeconds)
			o.b = e.close()
		}
		o.b = append(o.b, ']')
	}
	return o.close()
}

// appendJSON writes the map as Jersey does (see StringMap.MarshalJSON).
func (m StringMap) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, e := range m {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"entry":{"key":`...)
		b = appendJSONString(b, e.Key)
		b = append(b, `,"value":`...)
		b = appendJSONString(b, e.Value)
		b = append(b, '}')
	}
	return append(b, '}')
}

func (r *ResourceInfo) appendJSON(b []byte) []byte {
	o := openObject(b)
	o.int("memory", r.Memory)
	o.int("vCores", int64(r.VCores))
	if r.ResourceInformations != nil {
		o.key("resourceInformations")
		infos := openObject(o.b)
		if list := r.ResourceInformations.ResourceInformation; len(list) > 0 {
			infos.key("resourceInformation")
			infos.b = append(infos.b, '[')
			for i := range list {
				if i > 0 {
					infos.b = append(infos.b, ',')
				}
				infos.b = list[i].appendJSON(infos.b)
			}
			infos.b = append(infos.b, ']')
		}
		o.b = infos.close()
	}
	return o.close()
}

func (r *ResourceInformation) appendJSON(b []byte) []byte {
	o := openObject(b)
	o.key("attributes")
	o.b = r.Attributes.appendJSON(o.b)
	o.int("maximumAllocation", r.MaximumAllocation)
	o.int("minimumAllocation", r.MinimumAllocation)
	o.str("name", r.Name)
	o.str("resourceType", r.ResourceType)
	if len(r.Tags) > 0 {
		o.key("tags")
		o.b = append(o.b, '[')
		for i, t := range r.Tags {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = appendJSONString(o.b, t)
		}
		o.b = append(o.b, ']')
	}
	o.str("units", r.Units)
	o.int("value", r.Value)
	return o.close()
}

func (r *ResourcesInfo) appendJSON(b []byte) []byte {
	o := openObject(b)
	if len(r.ResourceUsagesByPartition) > 0 {
		o.key("resourceUsagesByPartition")
		o.b = append(o.b, '[')
		for i := range r.ResourceUsagesByPartition {
			if i > 0 {
				o.b = append(o.b, ',')
			}
			o.b = r.ResourceUsagesByPartition[i].appendJSON(o.b)
		}
		o.b = append(o.b, ']')
	}
	return o.close()
}

func (p *PartitionResourcesInfo) appendJSON(b []byte) []byte {
	o := openObject(b)
	o.str("partitionName", p.PartitionName)
	o.resource("used", &p.Used)
	o.resource("reserved", &p.Reserved)
	o.resource("pending", &p.Pending)
	o.resourceOmitNil("amUsed", p.AMUsed)
	o.resourceOmitNil("amLimit", p.AMLimit)
	o.resourceOmitNil("userAmLimit", p.UserAMLimit)
	return o.close()
}

func (o *jsonObject) resource(name string, r *ResourceInfo) {
	o.key(name)
	o.b = r.appendJSON(o.b)
}

// resourceOmitNil is a *ResourceInfo member tagged omitempty.
func (o *jsonObject) resourceOmitNil(name string, r *ResourceInfo) {
	if r != nil {
		o.resource(name, r)
	}
}
