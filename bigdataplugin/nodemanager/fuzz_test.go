package nodemanager

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/translator"
)

// FuzzNMProtocol decodes arbitrary bytes into every request of
// ContainerManagementProtocol and calls the real handler, as an AM with
// an NMToken for this node and as a caller without one (make fuzz-long).
func FuzzNMProtocol(f *testing.F) {
	keys := nmtokens.New([]byte("0123456789abcdef0123456789abcdef"))
	newService := func() *ipc.Service {
		am := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: translator.PodName(records.ContainerID{Attempt: attemptA, ID: 1}.String()),
			Namespace: "weft-jobs", UID: "am-uid"}}
		return New(fake.NewSimpleClientset(am), Options{NodeName: "node-a", Port: 8041, HTTPPort: 8042, Namespace: "weft-jobs", Profile: translator.Plain,
			Runtime: translator.Runtime{Image: "weft.local/node-runtime:1", JavaHome: "/usr/lib/jvm/java", HostNetwork: true, LocalizerImage: "weft.local/weft:dev"},
			Keys:    keys, Logger: ipctest.Quiet}).Service()
	}
	nm, err := keys.NMToken(attemptA, "node-a", 8041, "alice")
	if err != nil {
		f.Fatal(err)
	}
	container := records.ContainerID{Attempt: attemptA, ID: 2}
	token, err := keys.ContainerToken(nmtokens.ContainerGrant{Container: container, NodeID: "node-a:8041", User: "alice",
		Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Expiry: time.Now().Add(time.Hour), Tier: records.TierLow, Queue: "root.default"})
	if err != nil {
		f.Fatal(err)
	}
	ids := []*yarnpb.ContainerIdProto{wire.ContainerID(container)}
	ipctest.FuzzMethods(f, newService, []*ipc.Caller{
		{User: attemptA.String(), Auth: ipc.AuthToken, TokenIdentifier: nm.GetIdentifier()}, {User: "alice", Auth: ipc.AuthSimple},
	}, map[string][]proto.Message{
		"startContainers": {&yarnpb.StartContainersRequestProto{StartContainerRequest: []*yarnpb.StartContainerRequestProto{{
			ContainerLaunchContext: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"},
				LocalResources: []*yarnpb.StringLocalResourceMapProto{{Key: proto.String("job.jar"), Value: &yarnpb.LocalResourceProto{}}}},
			ContainerToken: token}}}},
		"stopContainers":       {&yarnpb.StopContainersRequestProto{ContainerId: ids}},
		"getContainerStatuses": {&yarnpb.GetContainerStatusesRequestProto{ContainerId: ids}},
	})
}
