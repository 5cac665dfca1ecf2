package amrm

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
)

// TestAllocatesOfDifferentAMsRunInParallel holds one AM's session as a
// slow call of its own would (a store write, a grant) and checks that
// another AM's allocate is answered meanwhile, while the held AM's next
// call waits its turn: AMs are serialized each on its own, as YARN's
// ApplicationMasterService locks per attempt, not service-wide.
func TestAllocatesOfDifferentAMsRunInParallel(t *testing.T) {
	f := start(t)
	a, b := f.submit(t), f.submit(t)
	ca, err := f.dial(t, a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := f.dial(t, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*ipc.Client{ca, cb} {
		if err := call(c, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h")},
			&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
			t.Fatal(err)
		}
	}
	held := f.svc.session(a)
	if held == nil {
		t.Fatalf("no session for %s after it registered", a)
	}
	held.mu.Lock()
	answered := make(chan error, 1)
	go func() { _, err := allocate(ca, 0); answered <- err }()

	if _, err := allocate(cb, 0); err != nil {
		t.Fatalf("allocate of %s while %s's call is in progress: %v", b, a, err)
	}
	select {
	case err := <-answered:
		t.Fatalf("allocate of %s answered (%v) while its session was held", a, err)
	case <-time.After(100 * time.Millisecond):
	}
	held.mu.Unlock()
	if err := <-answered; err != nil {
		t.Fatalf("allocate of %s once its session was free: %v", a, err)
	}
}
