package nodemanager

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/translator"
)

// fakeAux is a node's auxiliary services host that records what it is told.
type fakeAux struct {
	mu     sync.Mutex
	calls  []string
	failOn string // an application whose initialization the service refuses
}

type javaError struct{ class, msg string }

func (e *javaError) Error() string               { return e.class + ": " + e.msg }
func (e *javaError) JavaClass() (string, string) { return e.class, e.msg }

func (f *fakeAux) Has(name string) bool { return name == "spark_shuffle" }

func (f *fakeAux) InitApp(_ context.Context, service, app, user string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if app == f.failOn {
		return &javaError{"java.lang.IllegalStateException", "secret already registered"}
	}
	f.calls = append(f.calls, fmt.Sprintf("initApp %s %s %s %q", service, app, user, data))
	return nil
}

func (f *fakeAux) InitContainer(_ context.Context, container, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "initContainer "+container+" "+user)
	return nil
}

func (f *fakeAux) StopContainer(_ context.Context, container, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "stopContainer "+container+" "+user)
	return nil
}

func (f *fakeAux) MetaData() map[string][]byte {
	return map[string][]byte{"spark_shuffle": {0, 0, 0x1c, 0xa9}}
}

func (f *fakeAux) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func TestAuxiliaryServices(t *testing.T) {
	aux := &fakeAux{}
	f := startWith(t, func(o *Options) { o.AuxServices = aux })
	c, err := f.dial(t, attemptA, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name      string
		data      map[string]string
		failOn    string
		class     string // refused with this exception; empty: started
		wantCalls []string
	}{
		{name: "Spark's service data initializes the application with the node's spark_shuffle, then the container",
			data:      map[string]string{"spark_shuffle": "s3cret"},
			wantCalls: []string{`initApp spark_shuffle application_42_0001 alice "s3cret"`, "initContainer container_42_0001_01_00000%d alice"}},
		{name: "a container without service data only tells the services of itself",
			wantCalls: []string{"initContainer container_42_0001_01_00000%d alice"}},
		{name: "service data for a service the node lacks is refused with YARN's InvalidAuxServiceException",
			data: map[string]string{"flink_shuffle": "x"}, class: ClassInvalidAuxService},
		{name: "a service's own exception reaches the AM with its Java class, and the container does not start",
			data: map[string]string{"spark_shuffle": "again"}, failOn: "application_42_0001", class: "java.lang.IllegalStateException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			aux.failOn = tc.failOn
			id := records.ContainerID{Attempt: attemptA, ID: int64(i + 2)}
			clc := &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}}
			for k, v := range tc.data {
				clc.ServiceData = append(clc.ServiceData, &yarnpb.StringBytesMapProto{Key: proto.String(k), Value: []byte(v)})
			}
			resp := &yarnpb.StartContainersResponseProto{}
			call(t, c, "startContainers", &yarnpb.StartContainersRequestProto{StartContainerRequest: []*yarnpb.StartContainerRequestProto{
				{ContainerLaunchContext: clc, ContainerToken: f.containerToken(t, id, "node-a:8041")}}}, resp)
			_, podErr := f.client.CoreV1().Pods("weft-jobs").Get(context.Background(), translator.PodName(id.String()), metav1.GetOptions{})
			if tc.class != "" {
				if len(resp.GetFailedRequests()) != 1 || resp.GetFailedRequests()[0].GetException().GetClassName() != tc.class {
					t.Fatalf("not refused with %s: %v", tc.class, resp)
				}
				if podErr == nil {
					t.Error("the refused container's pod was created")
				}
				aux.took()
				return
			}
			if len(resp.GetSucceededRequests()) != 1 || podErr != nil {
				t.Fatalf("not started: %v, pod: %v", resp, podErr)
			}
			want := make([]string, len(tc.wantCalls))
			for j, w := range tc.wantCalls {
				if strings.Contains(w, "%d") {
					w = fmt.Sprintf(w, i+2)
				}
				want[j] = w
			}
			if got := aux.took(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("services told\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// Every answer carries the services' metadata, as a
			// NodeManager's does.
			var names []string
			for _, md := range resp.GetServicesMetaData() {
				names = append(names, md.GetKey())
			}
			if strings.Join(names, ",") != "spark_shuffle" {
				t.Errorf("services' metadata for %v", names)
			}
		})
	}

	t.Run("stopping a container tells the services", func(t *testing.T) {
		id := records.ContainerID{Attempt: attemptA, ID: 2}
		resp := &yarnpb.StopContainersResponseProto{}
		call(t, c, "stopContainers", &yarnpb.StopContainersRequestProto{ContainerId: []*yarnpb.ContainerIdProto{wire.ContainerID(id)}}, resp)
		if got := aux.took(); len(got) != 1 || got[0] != "stopContainer "+id.String()+" alice" {
			t.Errorf("services told %v", got)
		}
	})
}
