package allocator

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator/wellknown"
)

// midCycle is the Kubernetes node lister of a cycle during which the RM
// store moves. A cycle takes the snapshot it decides over, then looks the
// nodes up for placement constraints: the lookup after the first `after`
// runs write once — as a node sync, an AM launch or a
// moveApplicationAcrossQueues landing between the snapshot and the grants
// would.
type midCycle struct {
	after int
	write func()
}

// No node is in the tide; the Kubernetes nodes never change.
func (m *midCycle) KubeNodesInTideState(wellknown.TideState) []*corev1.Node { return nil }
func (m *midCycle) PlacementVersion() uint64                                { return 0 }

func (m *midCycle) KubeNode(name string) (*corev1.Node, bool) {
	if m.after--; m.after < 0 && m.write != nil {
		w := m.write
		m.write = nil
		w()
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, true
}

// A cycle decides over a snapshot; what it grants is stored in a later
// transaction. A grant whose node or queue moved in between is refused,
// its ask left outstanding and decided again by the next cycle — and no
// node ever holds more than it has room for (Nomad's plan applier, which
// checks a plan against the state it writes, not the one it was made on).
func TestStalePlanRefusedAndRetried(t *testing.T) {
	const gib = 1024
	node := func(id string, mem int64) *records.Node {
		return &records.Node{ID: id, Host: id, HTTPAddress: id + ":8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: mem, VCores: 8}}
	}
	type fixture struct {
		mgr     *rm.Manager
		attempt records.AttemptID
		now     *time.Time
	}
	tests := []struct {
		name string
		// nodes before the first cycle.
		nodes []*records.Node
		// asked: containers of 1 GiB asked for.
		asked int
		// moved is what lands in the store mid-cycle.
		moved func(t *testing.T, f fixture)
		// stored after the first cycle; then after the second, on which
		// nodes.
		firstStored int
		secondOn    map[string]int
	}{
		{
			name: "nothing moved: every grant stored", nodes: []*records.Node{node("n1", 8*gib)}, asked: 2,
			firstStored: 2, secondOn: map[string]int{"n1": 2},
		},
		{
			name:  "the node starts cooling down: refused, then placed on the other node once that one has room",
			nodes: []*records.Node{node("n1", 4*gib), node("n2", 0)}, asked: 2,
			moved: func(t *testing.T, f fixture) {
				n1 := node("n1", 4*gib)
				n1.CooldownUntil = f.now.Add(time.Minute).UnixMilli()
				put(t, f.mgr, n1, node("n2", 4*gib))
			},
			firstStored: 0, secondOn: map[string]int{"n2": 2},
		},
		{
			name: "online pods take room on the node: only what still fits is stored", nodes: []*records.Node{node("n1", 3*gib)}, asked: 3,
			moved: func(t *testing.T, f fixture) {
				n1 := node("n1", 3*gib)
				n1.Occupied = records.Resource{MemoryMB: 2 * gib}
				put(t, f.mgr, n1)
			},
			firstStored: 1, secondOn: map[string]int{"n1": 1},
		},
		{
			name: "the node is lost: refused, then placed where there is room", nodes: []*records.Node{node("n1", 8*gib), node("n2", 0)}, asked: 2,
			moved: func(t *testing.T, f fixture) {
				n1 := node("n1", 8*gib)
				n1.State = records.NodeLost
				put(t, f.mgr, n1, node("n2", 8*gib))
			},
			firstStored: 0, secondOn: map[string]int{"n2": 2},
		},
		{
			name: "the application moves to another queue: refused, then decided again in its new queue", nodes: []*records.Node{node("n1", 8*gib)}, asked: 2,
			moved: func(t *testing.T, f fixture) {
				if err := f.mgr.Move(context.Background(), f.attempt.App, "alice", "b"); err != nil {
					t.Fatal(err)
				}
			},
			firstStored: 0, secondOn: map[string]int{"n1": 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mgr, now := testRM(t, []quota.QueueConfig{
				{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
				{Path: "root.a", Capacity: 50, MaxCapacity: 100},
				{Path: "root.b", Capacity: 50, MaxCapacity: 100},
			})
			clock := func() time.Time { return *now }
			put(t, mgr, tc.nodes...)
			attempt := registered(t, mgr, "a")
			kube := &midCycle{after: 0}
			if tc.moved != nil {
				kube.write = func() { tc.moved(t, fixture{mgr: mgr, attempt: attempt, now: now}) }
			}
			a := New(mgr, Options{Logger: quiet, Now: clock, Nodes: kube})
			a.Update(attempt, []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)},
				Capability: &yarnpb.ResourceProto{Memory: proto.Int64(gib), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(tc.asked))}})

			granted, err := a.Cycle(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if stored := len(mgr.Snapshot().ContainersOfAttempt(attempt)); granted != tc.firstStored || stored != tc.firstStored {
				t.Fatalf("first cycle granted %d and stored %d containers, want %d", granted, stored, tc.firstStored)
			}
			if n, _ := a.Outstanding(attempt); n != tc.asked-tc.firstStored {
				t.Fatalf("after the first cycle %d containers outstanding, want %d: a refused grant's ask must stay", n, tc.asked-tc.firstStored)
			}
			assertWithinRoom(t, mgr.Snapshot())

			if _, err := a.Cycle(ctx); err != nil {
				t.Fatal(err)
			}
			snap := mgr.Snapshot()
			on := map[string]int{}
			for _, c := range snap.ContainersOfAttempt(attempt) {
				on[c.Node]++
			}
			total := 0
			for n, want := range tc.secondOn {
				total += want
				if on[n] != want {
					t.Errorf("after the second cycle %d containers on %s, want %d (all: %v)", on[n], n, want, on)
				}
			}
			if len(on) != len(tc.secondOn) {
				t.Errorf("containers on %v, want only on %v", on, tc.secondOn)
			}
			if n, _ := a.Outstanding(attempt); n != tc.asked-total {
				t.Errorf("after the second cycle %d containers outstanding, want %d", n, tc.asked-total)
			}
			assertWithinRoom(t, snap)
		})
	}
}

func put(t *testing.T, mgr *rm.Manager, nodes ...*records.Node) {
	t.Helper()
	for _, n := range nodes {
		if err := mgr.PutNode(n); err != nil {
			t.Fatal(err)
		}
	}
}

// assertWithinRoom fails when a node's live containers and other pods
// hold more than its capacity.
func assertWithinRoom(t *testing.T, snap *state.Snapshot) {
	t.Helper()
	for _, n := range snap.Nodes() {
		held := n.Occupied
		for _, c := range snap.ContainersOnNode(n.ID) {
			if c.State != records.ContainerComplete {
				held = held.Add(c.Resource)
			}
		}
		if !held.Fits(n.Capability) {
			t.Errorf("node %s over-committed: %+v held of %+v", n.ID, held, n.Capability)
		}
	}
}
