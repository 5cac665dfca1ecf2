package clientrm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// FuzzClientProtocol decodes arbitrary bytes into every request of
// ApplicationClientProtocol and calls the real handler, as a user, an
// administrator and an impersonated user (make fuzz-long).
func FuzzClientProtocol(f *testing.F) {
	var mgr *rm.Manager
	newService := func() *ipc.Service {
		st, err := state.OpenMemory()
		if err != nil {
			f.Fatal(err)
		}
		tree, err := quota.NewTree([]quota.QueueConfig{
			{Path: "root", Capacity: 100, AdminACL: "admin"},
			{Path: "root.default", Capacity: 100, SubmitACL: "*"},
			{Path: "root.prod", Capacity: 0, SubmitACL: "alice"},
		})
		if err != nil {
			f.Fatal(err)
		}
		mgr = rm.New(st, tree, rm.Options{ClusterTimestamp: 1_700_000_000_000, MaxPriority: 5, Logger: ipctest.Quiet})
		return New(mgr, Options{Tokens: NewDelegationTokens(st, []byte("0123456789abcdef0123"), TokenOptions{}), WebAddr: "127.0.0.1:8088",
			Logger: ipctest.Quiet}).Service()
	}
	newService()
	id := mgr.NewApplicationID()
	appID := &yarnpb.ApplicationIdProto{Id: proto.Int32(id.ID), ClusterTimestamp: proto.Int64(id.ClusterTimestamp)}
	ipctest.FuzzMethods(f, newService, []*ipc.Caller{
		{User: "alice", Auth: ipc.AuthSimple}, {User: "admin", Auth: ipc.AuthSimple}, {User: "bob", RealUser: "svc", Auth: ipc.AuthSimple},
	}, map[string][]proto.Message{
		"submitApplication": {&yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: appID, ApplicationName: proto.String("fuzz"), Queue: proto.String("default"),
			Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}}}},
		"getApplicationReport":        {&yarnpb.GetApplicationReportRequestProto{ApplicationId: appID}},
		"forceKillApplication":        {&yarnpb.KillApplicationRequestProto{ApplicationId: appID}},
		"getClusterNodes":             {&yarnpb.GetClusterNodesRequestProto{NodeStates: []yarnpb.NodeStateProto{yarnpb.NodeStateProto_NS_RUNNING, 42}}},
		"getApplications":             {&yarnpb.GetApplicationsRequestProto{Queues: []string{"root.prod"}, ApplicationStates: []yarnpb.YarnApplicationStateProto{99}}},
		"getQueueInfo":                {&yarnpb.GetQueueInfoRequestProto{QueueName: proto.String("root"), IncludeChildQueues: proto.Bool(true), Recursive: proto.Bool(true)}},
		"moveApplicationAcrossQueues": {&yarnpb.MoveApplicationAcrossQueuesRequestProto{ApplicationId: appID, TargetQueue: proto.String("prod")}},
	})
}
