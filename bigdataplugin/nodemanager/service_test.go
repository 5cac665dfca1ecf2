package nodemanager

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

var (
	appA     = records.ApplicationID{ClusterTimestamp: 42, ID: 1}
	appB     = records.ApplicationID{ClusterTimestamp: 42, ID: 2}
	attemptA = records.AttemptID{App: appA, ID: 1}
	attemptB = records.AttemptID{App: appB, ID: 1}
)

type fixture struct {
	client *fake.Clientset
	keys   *nmtokens.Keys
	addr   string
}

func start(t *testing.T) *fixture {
	t.Helper()
	return startWith(t, nil)
}

// startWith starts the service with opts changed by with.
func startWith(t *testing.T, with func(*Options)) *fixture {
	t.Helper()
	keys := nmtokens.New([]byte("0123456789abcdef0123456789abcdef"))
	// The AM pod the containers' pods belong to.
	am := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: translator.PodName(records.ContainerID{Attempt: attemptA, ID: 1}.String()),
		Namespace: "weft-jobs", UID: "am-uid"}}
	client := fake.NewSimpleClientset(am)
	opts := Options{NodeName: "node-a", Port: 8041, HTTPPort: 8042, Namespace: "weft-jobs", Profile: translator.Plain,
		Runtime: translator.Runtime{Image: "weft.local/node-runtime:1", JavaHome: "/usr/lib/jvm/java", HostNetwork: true, LocalizerImage: "weft.local/weft:dev"},
		Keys:    keys, Logger: ipctest.Quiet}
	if with != nil {
		with(&opts)
	}
	svc := New(client, opts)
	addr := ipctest.Serve(t, ipc.Options{Tokens: svc.Authenticator()}, svc.Service())
	return &fixture{client: client, keys: keys, addr: addr}
}

func (f *fixture) dial(t *testing.T, attempt records.AttemptID, host string) (*ipc.Client, error) {
	t.Helper()
	tok, err := f.keys.NMToken(attempt, host, 8041, "alice")
	if err != nil {
		t.Fatal(err)
	}
	return ipctest.Dial(t, f.addr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: tok.GetIdentifier(), Password: tok.GetPassword()}})
}

func (f *fixture) containerToken(t *testing.T, c records.ContainerID, node string) *commonpb.TokenProto {
	t.Helper()
	tok, err := f.keys.ContainerToken(nmtokens.ContainerGrant{Container: c, NodeID: node, User: "alice",
		Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Expiry: time.Now().Add(time.Minute), Tier: records.TierLow, Queue: "root.default"})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func call(t *testing.T, c *ipc.Client, method string, req, resp proto.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Call(ctx, Protocol, method, req, resp); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func TestStartStatusStop(t *testing.T) {
	f := start(t)
	c, err := f.dial(t, attemptA, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mine := records.ContainerID{Attempt: attemptA, ID: 2}
	clc := &yarnpb.ContainerLaunchContextProto{
		Command:        []string{"sleep 1"},
		LocalResources: []*yarnpb.StringLocalResourceMapProto{{Key: proto.String("job.jar"), Value: &yarnpb.LocalResourceProto{}}},
	}
	start := func(id records.ContainerID, node string) *yarnpb.StartContainersResponseProto {
		resp := &yarnpb.StartContainersResponseProto{}
		call(t, c, "startContainers", &yarnpb.StartContainersRequestProto{StartContainerRequest: []*yarnpb.StartContainerRequestProto{
			{ContainerLaunchContext: clc, ContainerToken: f.containerToken(t, id, node)}}}, resp)
		return resp
	}
	if resp := start(mine, "node-a:8041"); len(resp.GetSucceededRequests()) != 1 {
		t.Fatalf("start: %v", resp.GetFailedRequests())
	}
	pod, err := f.client.CoreV1().Pods("weft-jobs").Get(ctx, translator.PodName(mine.String()), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "node-a" || pod.Labels[wellknown.LabelTier] != "low" || pod.Labels[wellknown.LabelQueue] != "root.default" ||
		len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != "am-uid" || len(pod.Spec.InitContainers) != 1 || !pod.Spec.HostNetwork {
		t.Errorf("pod %+v", pod)
	}
	secret, err := f.client.CoreV1().Secrets("weft-jobs").Get(ctx, translator.SecretName(mine.String()), metav1.GetOptions{})
	if err != nil || len(secret.Data[translator.LocalResourcesKey]) == 0 || len(secret.Data[translator.TokenFileKey]) == 0 {
		t.Fatalf("launch secret %v, %v", secret, err)
	}

	for _, tc := range []struct {
		name, class, message string
		id                   records.ContainerID
		node                 string
	}{
		{"again", ClassYarnException, "already is running on this node", mine, "node-a:8041"},
		{"another application's container", ClassYarnException, "Unauthorized request to start container", records.ContainerID{Attempt: attemptB, ID: 2}, "node-a:8041"},
		{"a token for another node", ipc.ClassInvalidToken, "is not valid for current Node manager", records.ContainerID{Attempt: attemptA, ID: 3}, "node-b:8041"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := start(tc.id, tc.node)
			if len(resp.GetFailedRequests()) != 1 {
				t.Fatalf("not refused: %v", resp)
			}
			e := resp.GetFailedRequests()[0].GetException()
			if e.GetClassName() != tc.class || !strings.Contains(e.GetMessage(), tc.message) {
				t.Errorf("refused with %s: %s", e.GetClassName(), e.GetMessage())
			}
		})
	}

	status := func() *yarnpb.ContainerStatusProto {
		resp := &yarnpb.GetContainerStatusesResponseProto{}
		call(t, c, "getContainerStatuses", &yarnpb.GetContainerStatusesRequestProto{ContainerId: []*yarnpb.ContainerIdProto{wire.ContainerID(mine)}}, resp)
		if len(resp.GetStatus()) != 1 {
			t.Fatalf("statuses %v", resp)
		}
		return resp.GetStatus()[0]
	}
	for _, tc := range []struct {
		phase corev1.PodPhase
		term  *corev1.ContainerStateTerminated
		state yarnpb.ContainerStateProto
		exit  int32
	}{
		{corev1.PodPending, nil, yarnpb.ContainerStateProto_C_NEW, records.ExitInvalid},
		{corev1.PodRunning, nil, yarnpb.ContainerStateProto_C_RUNNING, records.ExitInvalid},
		{corev1.PodFailed, &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}, yarnpb.ContainerStateProto_C_COMPLETE, 143},
	} {
		pod.Status.Phase = tc.phase
		pod.Status.ContainerStatuses = nil
		if tc.term != nil {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "yarn-container", State: corev1.ContainerState{Terminated: tc.term}}}
		}
		if _, err := f.client.CoreV1().Pods("weft-jobs").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if st := status(); st.GetState() != tc.state || st.GetExitStatus() != tc.exit {
			t.Errorf("%s: status %v", tc.phase, st)
		}
	}

	stop := &yarnpb.StopContainersResponseProto{}
	call(t, c, "stopContainers", &yarnpb.StopContainersRequestProto{ContainerId: []*yarnpb.ContainerIdProto{
		wire.ContainerID(mine), wire.ContainerID(records.ContainerID{Attempt: attemptB, ID: 2})}}, stop)
	if len(stop.GetSucceededRequests()) != 1 || len(stop.GetFailedRequests()) != 1 {
		t.Errorf("stop %v", stop)
	}
	if _, err := f.client.CoreV1().Pods("weft-jobs").Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
		t.Error("pod still there after stopContainers")
	}
}

// Only NMTokens of this node open a connection.
func TestNMTokenOfAnotherNode(t *testing.T) {
	f := start(t)
	if _, err := f.dial(t, attemptA, "node-b"); err == nil {
		t.Fatal("connected with another node's NMToken")
	}
}
