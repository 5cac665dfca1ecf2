package yarnpb

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
)

// Expected values were read from Apache Hadoop's yarn_protos.proto,
// yarn_service_protos.proto, yarn_security_token.proto and Security.proto
// (3.4.2). Any change here breaks wire compatibility with Hadoop clients.
func TestFieldDescriptorsMatchHadoop(t *testing.T) {
	tests := []struct {
		msg      proto.Message
		field    protoreflect.Name
		number   protoreflect.FieldNumber
		card     protoreflect.Cardinality
		kind     protoreflect.Kind
		typeName protoreflect.FullName // message or enum type, if any
		def      any                   // declared default, nil when none
	}{
		{&ApplicationSubmissionContextProto{}, "application_id", 1, protoreflect.Optional, protoreflect.MessageKind, "hadoop.yarn.ApplicationIdProto", nil},
		{&ApplicationSubmissionContextProto{}, "application_name", 2, protoreflect.Optional, protoreflect.StringKind, "", "N/A"},
		{&ApplicationSubmissionContextProto{}, "queue", 3, protoreflect.Optional, protoreflect.StringKind, "", "default"},
		{&ApplicationSubmissionContextProto{}, "am_container_spec", 5, protoreflect.Optional, protoreflect.MessageKind, "hadoop.yarn.ContainerLaunchContextProto", nil},
		{&ApplicationSubmissionContextProto{}, "cancel_tokens_when_complete", 6, protoreflect.Optional, protoreflect.BoolKind, "", true},
		{&ApplicationSubmissionContextProto{}, "applicationType", 10, protoreflect.Optional, protoreflect.StringKind, "", "YARN"},
		{&ApplicationSubmissionContextProto{}, "attempt_failures_validity_interval", 13, protoreflect.Optional, protoreflect.Int64Kind, "", int64(-1)},
		{&ApplicationSubmissionContextProto{}, "am_container_resource_request", 17, protoreflect.Repeated, protoreflect.MessageKind, "hadoop.yarn.ResourceRequestProto", nil},
		{&ApplicationSubmissionContextProto{}, "application_scheduling_properties", 19, protoreflect.Repeated, protoreflect.MessageKind, "hadoop.yarn.StringStringMapProto", nil},
		{&ApplicationReportProto{}, "client_to_am_token", 7, protoreflect.Optional, protoreflect.MessageKind, "hadoop.common.TokenProto", nil},
		{&ApplicationReportProto{}, "yarn_application_state", 8, protoreflect.Optional, protoreflect.EnumKind, "hadoop.yarn.YarnApplicationStateProto", nil},
		{&ApplicationReportProto{}, "diagnostics", 10, protoreflect.Optional, protoreflect.StringKind, "", "N/A"},
		{&ApplicationReportProto{}, "app_resource_Usage", 14, protoreflect.Optional, protoreflect.MessageKind, "hadoop.yarn.ApplicationResourceUsageReportProto", nil},
		{&ApplicationReportProto{}, "progress", 17, protoreflect.Optional, protoreflect.FloatKind, "", nil},
		{&ApplicationReportProto{}, "applicationTags", 20, protoreflect.Repeated, protoreflect.StringKind, "", nil},
		{&ApplicationReportProto{}, "rmClusterId", 29, protoreflect.Optional, protoreflect.StringKind, "", nil},
		{&ApplicationTimeoutProto{}, "application_timeout_type", 1, protoreflect.Required, protoreflect.EnumKind, "hadoop.yarn.ApplicationTimeoutTypeProto", nil},
		{&ContainerIdProto{}, "app_attempt_id", 2, protoreflect.Optional, protoreflect.MessageKind, "hadoop.yarn.ApplicationAttemptIdProto", nil},
		{&ContainerIdProto{}, "id", 3, protoreflect.Optional, protoreflect.Int64Kind, "", nil},
		{&ResourceProto{}, "memory", 1, protoreflect.Optional, protoreflect.Int64Kind, "", nil},
		{&ResourceProto{}, "virtual_cores", 2, protoreflect.Optional, protoreflect.Int32Kind, "", nil},
		{&ResourceProto{}, "resource_value_map", 3, protoreflect.Repeated, protoreflect.MessageKind, "hadoop.yarn.ResourceInformationProto", nil},
		{&ResourceInformationProto{}, "key", 1, protoreflect.Required, protoreflect.StringKind, "", nil},
		{&ResourceRequestProto{}, "relax_locality", 5, protoreflect.Optional, protoreflect.BoolKind, "", true},
		{&ResourceRequestProto{}, "allocation_request_id", 8, protoreflect.Optional, protoreflect.Int64Kind, "", int64(-1)},
		{&SchedulingRequestProto{}, "allocationRequestId", 1, protoreflect.Optional, protoreflect.Int64Kind, "", int64(0)},
		{&ContainerStatusProto{}, "exit_status", 4, protoreflect.Optional, protoreflect.Int32Kind, "", int32(-1000)},
		{&QueueInfoProto{}, "maxRunningApp", 27, protoreflect.Optional, protoreflect.Int32Kind, "", nil},
		{&QueueConfigurationsMapProto{}, "partitionName", 1, protoreflect.Required, protoreflect.StringKind, "", nil},
		{&AllocateRequestProto{}, "response_id", 4, protoreflect.Optional, protoreflect.Int32Kind, "", nil},
		{&AllocateRequestProto{}, "progress", 5, protoreflect.Optional, protoreflect.FloatKind, "", nil},
		{&AllocateRequestProto{}, "update_requests", 7, protoreflect.Repeated, protoreflect.MessageKind, "hadoop.yarn.UpdateContainerRequestProto", nil},
		{&AllocateRequestProto{}, "scheduling_requests", 10, protoreflect.Repeated, protoreflect.MessageKind, "hadoop.yarn.SchedulingRequestProto", nil},
		{&AllocateRequestProto{}, "tracking_url", 11, protoreflect.Optional, protoreflect.StringKind, "", nil},
		{&AllocateResponseProto{}, "a_m_command", 1, protoreflect.Optional, protoreflect.EnumKind, "hadoop.yarn.AMCommandProto", nil},
		{&AllocateResponseProto{}, "nm_tokens", 9, protoreflect.Repeated, protoreflect.MessageKind, "hadoop.yarn.NMTokenProto", nil},
		{&AllocateResponseProto{}, "am_rm_token", 12, protoreflect.Optional, protoreflect.MessageKind, "hadoop.common.TokenProto", nil},
		{&AllocateResponseProto{}, "enhanced_headroom", 19, protoreflect.Optional, protoreflect.MessageKind, "hadoop.yarn.EnhancedHeadroomProto", nil},
		{&UpdateContainerRequestProto{}, "update_type", 3, protoreflect.Required, protoreflect.EnumKind, "hadoop.yarn.ContainerUpdateTypeProto", nil},
		{&FinishApplicationMasterResponseProto{}, "isUnregistered", 1, protoreflect.Optional, protoreflect.BoolKind, "", false},
		{&KillApplicationResponseProto{}, "is_kill_completed", 1, protoreflect.Optional, protoreflect.BoolKind, "", false},
		{&GetApplicationsRequestProto{}, "scope", 11, protoreflect.Optional, protoreflect.EnumKind, "hadoop.yarn.ApplicationsRequestScopeProto", protoreflect.EnumNumber(0)},
		{&GetApplicationsRequestProto{}, "name", 12, protoreflect.Optional, protoreflect.StringKind, "", nil},
		{&GetQueueInfoRequestProto{}, "subClusterId", 5, protoreflect.Optional, protoreflect.StringKind, "", nil},
		{&MoveApplicationAcrossQueuesRequestProto{}, "target_queue", 2, protoreflect.Required, protoreflect.StringKind, "", nil},
		{&ReservationListRequestProto{}, "reservation_id", 3, protoreflect.Optional, protoreflect.StringKind, "", nil},
		{&AMRMTokenIdentifierProto{}, "keyId", 2, protoreflect.Optional, protoreflect.Int32Kind, "", int32(-1)},
		{&ContainerTokenIdentifierProto{}, "allocation_tags", 16, protoreflect.Repeated, protoreflect.StringKind, "", nil},
		{&YARNDelegationTokenIdentifierProto{}, "masterKeyId", 7, protoreflect.Optional, protoreflect.Int32Kind, "", nil},
		{&commonpb.TokenProto{}, "identifier", 1, protoreflect.Required, protoreflect.BytesKind, "", nil},
		{&commonpb.TokenProto{}, "service", 4, protoreflect.Required, protoreflect.StringKind, "", nil},
		{&commonpb.RenewDelegationTokenResponseProto{}, "newExpiryTime", 1, protoreflect.Required, protoreflect.Uint64Kind, "", nil},
	}
	for _, tc := range tests {
		md := tc.msg.ProtoReflect().Descriptor()
		t.Run(string(md.Name())+"."+string(tc.field), func(t *testing.T) {
			fd := md.Fields().ByName(tc.field)
			if fd == nil {
				t.Fatalf("no field %q", tc.field)
			}
			if fd.Number() != tc.number {
				t.Errorf("number = %d, want %d", fd.Number(), tc.number)
			}
			if md.Fields().ByNumber(tc.number) != fd {
				t.Errorf("field number %d is not %q", tc.number, tc.field)
			}
			if fd.Cardinality() != tc.card {
				t.Errorf("label = %v, want %v", fd.Cardinality(), tc.card)
			}
			if fd.Kind() != tc.kind {
				t.Errorf("kind = %v, want %v", fd.Kind(), tc.kind)
			}
			var typeName protoreflect.FullName
			if fd.Message() != nil {
				typeName = fd.Message().FullName()
			} else if fd.Enum() != nil {
				typeName = fd.Enum().FullName()
			}
			if typeName != tc.typeName {
				t.Errorf("type = %q, want %q", typeName, tc.typeName)
			}
			switch {
			case tc.def == nil && fd.HasDefault():
				t.Errorf("unexpected default %v", fd.Default().Interface())
			case tc.def != nil && !fd.HasDefault():
				t.Errorf("no default, want %v", tc.def)
			case tc.def != nil:
				got := fd.Default().Interface()
				if e, ok := tc.def.(protoreflect.EnumNumber); ok {
					if fd.Default().Enum() != e {
						t.Errorf("default = %v, want %v", fd.Default().Enum(), e)
					}
				} else if got != tc.def {
					t.Errorf("default = %#v, want %#v", got, tc.def)
				}
			}
		})
	}
}

func TestNamesAndPackages(t *testing.T) {
	for _, tc := range []struct {
		msg  proto.Message
		want protoreflect.FullName
	}{
		{&GetApplicationReportResponseProto{}, "hadoop.yarn.GetApplicationReportResponseProto"},
		{&ApplicationSubmissionContextProto{}, "hadoop.yarn.ApplicationSubmissionContextProto"},
		{&YARNDelegationTokenIdentifierProto{}, "hadoop.yarn.YARNDelegationTokenIdentifierProto"},
		{&commonpb.TokenProto{}, "hadoop.common.TokenProto"},
		{&commonpb.GetDelegationTokenRequestProto{}, "hadoop.common.GetDelegationTokenRequestProto"},
	} {
		if got := tc.msg.ProtoReflect().Descriptor().FullName(); got != tc.want {
			t.Errorf("full name = %q, want %q", got, tc.want)
		}
	}

	enums := []struct {
		got  protoreflect.EnumNumber
		want protoreflect.EnumNumber
	}{
		{YarnApplicationStateProto_NEW.Number(), 1},
		{YarnApplicationStateProto_RUNNING.Number(), 5},
		{YarnApplicationStateProto_KILLED.Number(), 8},
		{FinalApplicationStatusProto_APP_UNDEFINED.Number(), 0},
		{FinalApplicationStatusProto_APP_SUCCEEDED.Number(), 1},
		{ContainerExitStatusProto_INVALID.Number(), -1000},
		{ContainerExitStatusProto_ABORTED.Number(), -100},
		{NodeStateProto_NS_RUNNING.Number(), 2},
		{ContainerStateProto_C_COMPLETE.Number(), 3},
		{ApplicationsRequestScopeProto_OWN.Number(), 2},
		{SchedulerResourceTypes_CPU.Number(), 1},
	}
	for i, e := range enums {
		if e.got != e.want {
			t.Errorf("enum case %d: %d, want %d", i, e.got, e.want)
		}
	}
}

// The service definitions carry the RPC method names Hadoop clients send.
func TestServiceMethodNames(t *testing.T) {
	for _, tc := range []struct {
		file    protoreflect.FileDescriptor
		service protoreflect.Name
		count   int
		methods map[protoreflect.Name][2]protoreflect.FullName
	}{
		{File_hadoop_yarn_applicationclient_protocol_proto, "ApplicationClientProtocolService", 35, map[protoreflect.Name][2]protoreflect.FullName{
			"getApplicationReport": {"hadoop.yarn.GetApplicationReportRequestProto", "hadoop.yarn.GetApplicationReportResponseProto"},
			"forceKillApplication": {"hadoop.yarn.KillApplicationRequestProto", "hadoop.yarn.KillApplicationResponseProto"},
			"getNodeToLabels":      {"hadoop.yarn.GetNodesToLabelsRequestProto", "hadoop.yarn.GetNodesToLabelsResponseProto"},
			"getDelegationToken":   {"hadoop.common.GetDelegationTokenRequestProto", "hadoop.common.GetDelegationTokenResponseProto"},
		}},
		{File_hadoop_yarn_applicationmaster_protocol_proto, "ApplicationMasterProtocolService", 3, map[protoreflect.Name][2]protoreflect.FullName{
			"registerApplicationMaster": {"hadoop.yarn.RegisterApplicationMasterRequestProto", "hadoop.yarn.RegisterApplicationMasterResponseProto"},
			"allocate":                  {"hadoop.yarn.AllocateRequestProto", "hadoop.yarn.AllocateResponseProto"},
		}},
		{File_hadoop_yarn_containermanagement_protocol_proto, "ContainerManagementProtocolService", 12, map[protoreflect.Name][2]protoreflect.FullName{
			"startContainers":  {"hadoop.yarn.StartContainersRequestProto", "hadoop.yarn.StartContainersResponseProto"},
			"restartContainer": {"hadoop.yarn.ContainerIdProto", "hadoop.yarn.RestartContainerResponseProto"},
		}},
	} {
		sd := tc.file.Services().ByName(tc.service)
		if sd == nil {
			t.Errorf("%s: no service %s", tc.file.Path(), tc.service)
			continue
		}
		if sd.FullName() != "hadoop.yarn."+protoreflect.FullName(tc.service) {
			t.Errorf("service full name %q", sd.FullName())
		}
		if sd.Methods().Len() != tc.count {
			t.Errorf("%s: %d methods, want %d", tc.service, sd.Methods().Len(), tc.count)
		}
		for name, io := range tc.methods {
			m := sd.Methods().ByName(name)
			if m == nil {
				t.Errorf("%s: no method %s", tc.service, name)
				continue
			}
			if m.Input().FullName() != io[0] || m.Output().FullName() != io[1] {
				t.Errorf("%s.%s: %s -> %s, want %s -> %s", tc.service, name, m.Input().FullName(), m.Output().FullName(), io[0], io[1])
			}
		}
	}
}

// Hand-encoded bytes: what a Java client puts on the wire for
// GetApplicationReportRequestProto{application_id{id: 7, cluster_timestamp: 1700000000000}}.
func TestWireBytes(t *testing.T) {
	want := []byte{
		0x0a, 0x09, // field 1 (application_id), length 9
		0x08, 0x07, // id = 7
		0x10, 0x80, 0xd0, 0x95, 0xff, 0xbc, 0x31, // cluster_timestamp = 1700000000000
	}
	msg := &GetApplicationReportRequestProto{ApplicationId: &ApplicationIdProto{
		Id:               proto.Int32(7),
		ClusterTimestamp: proto.Int64(1700000000000),
	}}
	got, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("marshal = % x, want % x", got, want)
	}
	var back GetApplicationReportRequestProto
	if err := proto.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&back, msg) {
		t.Fatalf("unmarshal = %v", &back)
	}
}

func TestGetApplicationReportResponseRoundTrip(t *testing.T) {
	appID := &ApplicationIdProto{Id: proto.Int32(42), ClusterTimestamp: proto.Int64(1700000000000)}
	in := &GetApplicationReportResponseProto{ApplicationReport: &ApplicationReportProto{
		ApplicationId:          appID,
		User:                   proto.String("alice"),
		Queue:                  proto.String("root.default"),
		Name:                   proto.String("word count"),
		Host:                   proto.String("node-1.example"),
		RpcPort:                proto.Int32(41000),
		YarnApplicationState:   YarnApplicationStateProto_RUNNING.Enum(),
		TrackingUrl:            proto.String("http://rm:8088/proxy/application_1700000000000_0042/"),
		Diagnostics:            proto.String(""),
		StartTime:              proto.Int64(1700000001000),
		FinishTime:             proto.Int64(0),
		FinalApplicationStatus: FinalApplicationStatusProto_APP_UNDEFINED.Enum(),
		AppResource_Usage: &ApplicationResourceUsageReportProto{
			NumUsedContainers: proto.Int32(3),
			UsedResources: &ResourceProto{
				Memory:       proto.Int64(3072),
				VirtualCores: proto.Int32(3),
				ResourceValueMap: []*ResourceInformationProto{
					{Key: proto.String("memory-mb"), Value: proto.Int64(3072), Units: proto.String("Mi"), Type: ResourceTypesProto_COUNTABLE.Enum()},
					{Key: proto.String("vcores"), Value: proto.Int64(3), Units: proto.String("")},
				},
			},
			MemorySeconds:          proto.Int64(123456),
			VcoreSeconds:           proto.Int64(120),
			QueueUsagePercentage:   proto.Float32(12.5),
			ClusterUsagePercentage: proto.Float32(1.25),
		},
		CurrentApplicationAttemptId: &ApplicationAttemptIdProto{ApplicationId: appID, AttemptId: proto.Int32(1)},
		Progress:                    proto.Float32(0.5),
		ApplicationType:             proto.String("MAPREDUCE"),
		ClientToAmToken: &commonpb.TokenProto{
			Identifier: []byte{1, 2, 3},
			Password:   []byte{4, 5, 6},
			Kind:       proto.String("YARN_CLIENT_TOKEN"),
			Service:    proto.String(""),
		},
		ApplicationTags:      []string{"a", "b"},
		LogAggregationStatus: LogAggregationStatusProto_LOG_NOT_START.Enum(),
		Priority:             &PriorityProto{Priority: proto.Int32(0)},
		AppTimeouts: []*AppTimeoutsMapProto{{
			ApplicationTimeoutType: ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
			ApplicationTimeout: &ApplicationTimeoutProto{
				ApplicationTimeoutType: ApplicationTimeoutTypeProto_APP_TIMEOUT_LIFETIME.Enum(),
				ExpireTime:             proto.String("UNLIMITED"),
				RemainingTime:          proto.Int64(-1),
			},
		}},
		LaunchTime:  proto.Int64(1700000002000),
		SubmitTime:  proto.Int64(1700000000500),
		RmClusterId: proto.String("weft"),
	}}

	opts := proto.MarshalOptions{Deterministic: true}
	b, err := opts.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out GetApplicationReportResponseProto
	if err := proto.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, &out) {
		t.Fatalf("round trip changed the message:\n in: %v\nout: %v", in, &out)
	}
	b2, err := opts.Marshal(&out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatal("re-marshalled bytes differ")
	}
	// An explicitly empty diagnostics survives; an absent one reads as "N/A".
	if got := out.GetApplicationReport().GetDiagnostics(); got != "" {
		t.Errorf("diagnostics = %q, want empty", got)
	}
	if got := (&ApplicationReportProto{}).GetDiagnostics(); got != "N/A" {
		t.Errorf("default diagnostics = %q, want N/A", got)
	}
}

// Required fields are enforced by the Go runtime in both directions.
func TestRequiredFields(t *testing.T) {
	partial := &GetApplicationReportResponseProto{ApplicationReport: &ApplicationReportProto{
		ClientToAmToken: &commonpb.TokenProto{Identifier: []byte{1}},
	}}
	if _, err := proto.Marshal(partial); err == nil {
		t.Error("marshal of a TokenProto without password/kind/service succeeded")
	}
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(partial)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, &GetApplicationReportResponseProto{}); err == nil {
		t.Error("unmarshal of a TokenProto without password/kind/service succeeded")
	}
}

// Absent optional fields read as their declared defaults; presence is only
// visible through the field pointer.
func TestDefaultsOnAbsentFields(t *testing.T) {
	var ctx ApplicationSubmissionContextProto
	if err := proto.Unmarshal(nil, &ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Queue != nil || ctx.GetQueue() != "default" {
		t.Errorf("queue: ptr %v, get %q", ctx.Queue, ctx.GetQueue())
	}
	if ctx.GetApplicationName() != "N/A" || ctx.GetApplicationType() != "YARN" || !ctx.GetCancelTokensWhenComplete() {
		t.Errorf("defaults: name %q type %q cancel %v", ctx.GetApplicationName(), ctx.GetApplicationType(), ctx.GetCancelTokensWhenComplete())
	}
	if got := (&ContainerStatusProto{}).GetExitStatus(); got != -1000 {
		t.Errorf("exit_status default %d", got)
	}
	if got := (&ResourceRequestProto{}).GetAllocationRequestId(); got != -1 {
		t.Errorf("ResourceRequestProto.allocation_request_id default %d", got)
	}
	if got := (&ApplicationReportProto{}).GetYarnApplicationState(); got != YarnApplicationStateProto_NEW {
		t.Errorf("unset application state reads as %v", got)
	}
}
