package amrm

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// FuzzAMProtocol decodes arbitrary bytes into every request of
// ApplicationMasterProtocol and calls the real handler, as the AM of a live
// attempt (with a node to grant on), of an unknown one, and as a caller
// without an AMRMToken (make fuzz-long).
func FuzzAMProtocol(f *testing.F) {
	var tokens *Tokens
	live := records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 1_700_000_000_000, ID: 1}, ID: 1}
	newService := func() *ipc.Service {
		st, err := state.OpenMemory()
		if err != nil {
			f.Fatal(err)
		}
		tree, _ := quota.NewTree(quota.DefaultQueues)
		mgr := rm.New(st, tree, rm.Options{ClusterTimestamp: live.App.ClusterTimestamp, Logger: ipctest.Quiet})
		tokens = NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
		alloc := allocator.New(mgr, allocator.Options{Logger: ipctest.Quiet})
		if err := mgr.PutNode(&records.Node{ID: "node-a:8041", Host: "node-a", Port: 8041, HTTPAddress: "node-a:8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 1 << 20, VCores: 1024}}); err != nil {
			f.Fatal(err)
		}
		if id := mgr.NewApplicationID(); id != live.App {
			f.Fatalf("application %s, want %s", id, live.App)
		}
		if err := mgr.Submit(context.Background(), rm.Submission{ID: live.App, User: "alice", UnmanagedAM: true}); err != nil {
			f.Fatal(err)
		}
		return New(mgr, Options{Allocator: alloc, Keys: nmtokens.New([]byte("fedcba9876543210fedcba9876543210"))}).Service()
	}
	newService()
	identity := func(a records.AttemptID) []byte {
		tok, err := tokens.Issue(a)
		if err != nil {
			f.Fatal(err)
		}
		return tok.GetIdentifier()
	}
	ask := &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(2)}
	ipctest.FuzzMethods(f, newService, []*ipc.Caller{
		{User: live.String(), Auth: ipc.AuthToken, TokenIdentifier: identity(live)},
		{User: "gone", Auth: ipc.AuthToken, TokenIdentifier: identity(records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 1, ID: 9}, ID: 1})},
		{User: "alice", Auth: ipc.AuthSimple},
	}, map[string][]proto.Message{
		"registerApplicationMaster": {&yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h"), RpcPort: proto.Int32(1)}},
		"allocate": {&yarnpb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*yarnpb.ResourceRequestProto{ask}},
			&yarnpb.AllocateRequestProto{ResponseId: proto.Int32(1), Release: []*yarnpb.ContainerIdProto{wire.ContainerID(records.ContainerID{Attempt: live, ID: 2})}}},
		"finishApplicationMaster": {&yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}},
	})
}
