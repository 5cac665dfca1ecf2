package amrm

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

func register(c *ipc.Client) error {
	return call(c, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h"), RpcPort: proto.Int32(1)},
		&yarnpb.RegisterApplicationMasterResponseProto{})
}

// registeredAM submits an unmanaged application and registers its AM,
// returning the attempt and the AM's connection.
func (f *fixture) registeredAM(t *testing.T) (records.AttemptID, *ipc.Client) {
	t.Helper()
	attempt := f.submit(t)
	c, err := f.dial(t, attempt)
	if err != nil {
		t.Fatal(err)
	}
	if err := register(c); err != nil {
		t.Fatal(err)
	}
	return attempt, c
}

func anyAsk(n int32) *yarnpb.ResourceRequestProto {
	return &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(0)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n)}
}

// TestResyncAfterRestart is YARN's work-preserving restart from the AM's
// side: after the RM restarts over its store, the AM's next allocate is
// told to re-register (ApplicationMasterNotRegisteredException), the
// re-registration of its RUNNING attempt is accepted once, its responseId
// starts again at 0, the containers it held are still its own, and a grant
// it never received is not handed out again beside what it asks anew.
func TestResyncAfterRestart(t *testing.T) {
	ctx := context.Background()
	f := startWith(t, true)
	// Nodes are not stored: each incarnation reads them from the cluster.
	node := func(f *fixture) {
		if err := f.mgr.PutNode(&records.Node{ID: "node-a:8041", Host: "node-a", Port: 8041, HTTPAddress: "node-a:8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
			t.Fatal(err)
		}
	}
	node(f)
	attempt, c := f.registeredAM(t)
	resp := &yarnpb.AllocateResponseProto{}
	if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*yarnpb.ResourceRequestProto{anyAsk(2)}}, resp); err != nil {
		t.Fatal(err)
	}
	if n, err := f.alloc.Cycle(ctx); err != nil || n != 2 {
		t.Fatalf("cycle granted %d, %v; want 2", n, err)
	}
	if err := call(c, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(1), Ask: []*yarnpb.ResourceRequestProto{anyAsk(1)}}, resp); err != nil {
		t.Fatal(err)
	}
	held := resp.GetAllocatedContainers()
	if len(held) != 2 {
		t.Fatalf("acquired %d containers, want 2", len(held))
	}
	// One more is granted, but the RM goes down before the AM hears of it.
	if n, err := f.alloc.Cycle(ctx); err != nil || n != 1 {
		t.Fatalf("cycle granted %d, %v; want 1", n, err)
	}
	c.Close()
	f.store.Close()

	f2 := startIn(t, f.dir, true, Options{})
	node(f2)
	c2, err := f2.dial(t, attempt) // the AMRMToken from before the restart
	if err != nil {
		t.Fatal(err)
	}
	if _, err := allocate(c2, 2); class(err) != yarnerr.ClassAMNotRegistered {
		t.Fatalf("allocate after the restart: %v, want %s", err, yarnerr.ClassAMNotRegistered)
	}
	if err := register(c2); err != nil {
		t.Fatalf("re-registration after the restart: %v", err)
	}
	if err := register(c2); class(err) != yarnerr.ClassInvalidApplicationMasterRequest {
		t.Fatalf("a second registration with the same incarnation: %v", err)
	}
	a, _ := f2.mgr.Application(attempt.App)
	if a.State != records.AppRunning || a.CurrentAttempt != attempt.ID {
		t.Fatalf("application after resync: %+v", a)
	}
	// The AM resends what it still wants: the one it never received.
	if err := call(c2, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(0), Ask: []*yarnpb.ResourceRequestProto{anyAsk(1)}}, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.GetAllocatedContainers()) != 0 {
		t.Fatalf("a grant the AM never acquired was handed out after the restart: %v", resp.GetAllocatedContainers())
	}
	if len(resp.GetCompletedContainerStatuses()) != 0 {
		t.Fatalf("the AM was told of containers it never had: %v", resp.GetCompletedContainerStatuses())
	}
	if n, err := f2.alloc.Cycle(ctx); err != nil || n != 1 {
		t.Fatalf("cycle after the restart granted %d, %v; want 1", n, err)
	}
	if err := call(c2, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(1)}, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.GetAllocatedContainers()) != 1 {
		t.Fatalf("got %d containers after the restart, want 1", len(resp.GetAllocatedContainers()))
	}
	live := 0
	for _, ct := range f2.mgr.Snapshot().ContainersOfAttempt(attempt) {
		if ct.State != records.ContainerComplete {
			live++
		}
	}
	if live != 3 {
		t.Errorf("%d live containers, want the 2 held across the restart and the new one", live)
	}
	// The held containers are still the AM's to release.
	if err := call(c2, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(2), Release: []*yarnpb.ContainerIdProto{held[0].GetId()}}, resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.GetCompletedContainerStatuses()) != 1 {
		t.Errorf("release of a container held across the restart: %v", resp.GetCompletedContainerStatuses())
	}
}

// TestSilentAMExpires is YARN's AMLivelinessMonitor: a registered AM that
// stops calling for the expiry interval fails its attempt with YARN's
// diagnostics and the application gets its next attempt; one that keeps
// calling is left alone, and so, for a whole interval, is one that
// registered with an earlier incarnation and has yet to resync.
func TestSilentAMExpires(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	f := startIn(t, t.TempDir(), false, Options{AMExpiry: time.Minute, Now: clock.Now})
	ctx := context.Background()
	silent, busy := f.submit(t), f.submit(t)
	cs, err := f.dial(t, silent)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := f.dial(t, busy)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*ipc.Client{cs, cb} {
		if err := register(c); err != nil {
			t.Fatal(err)
		}
	}
	for i := int32(0); i < 3; i++ {
		clock.Add(30 * time.Second)
		if _, err := allocate(cb, i); err != nil {
			t.Fatal(err)
		}
		f.svc.expire(ctx)
	}
	a, _ := f.mgr.Application(silent.App)
	if a.CurrentAttempt != 2 || a.State != records.AppAccepted || !strings.Contains(a.Diagnostics, "ApplicationMaster for attempt "+silent.String()+" timed out") {
		t.Fatalf("silent AM's application: attempt %d, %s, %q", a.CurrentAttempt, a.State, a.Diagnostics)
	}
	if att := f.mgr.Snapshot().Attempt(silent); att.State != records.AttemptFailed {
		t.Errorf("silent attempt %s", att.State)
	}
	if b, _ := f.mgr.Application(busy.App); b.CurrentAttempt != 1 || b.State != records.AppRunning {
		t.Errorf("busy AM's application: attempt %d, %s", b.CurrentAttempt, b.State)
	}

	// Restart: the busy AM has a whole interval from the new start to
	// resync, and expires if it does not.
	cs.Close()
	cb.Close()
	f.store.Close()
	f2 := startIn(t, f.dir, false, Options{AMExpiry: time.Minute, Now: clock.Now})
	clock.Add(50 * time.Second)
	f2.svc.expire(ctx)
	if b, _ := f2.mgr.Application(busy.App); b.CurrentAttempt != 1 || b.State != records.AppRunning {
		t.Fatalf("an AM yet to resync expired early: attempt %d, %s", b.CurrentAttempt, b.State)
	}
	clock.Add(20 * time.Second)
	f2.svc.expire(ctx)
	if b, _ := f2.mgr.Application(busy.App); b.CurrentAttempt != 2 {
		t.Fatalf("an AM that never resynced did not expire: attempt %d, %s", b.CurrentAttempt, b.State)
	}
}
