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
	"github.com/weft-sh/weft/translator/wellknown"
)

// versionedNodes are Kubernetes nodes whose version a test moves when it
// changes them, as nodesync's watch does; lookups are counted.
type versionedNodes struct {
	nodes   map[string]*corev1.Node
	version uint64
	lookups int
}

func (v *versionedNodes) KubeNode(name string) (*corev1.Node, bool) {
	v.lookups++
	n, ok := v.nodes[name]
	return n, ok
}
func (v *versionedNodes) KubeNodesInTideState(wellknown.TideState) []*corev1.Node { return nil }
func (v *versionedNodes) PlacementVersion() uint64                                { return v.version }

// Where YARN containers may go is evaluated over the nodes once, and again
// only when the RM's nodes or the Kubernetes nodes' placement version move:
// a taint then keeps the next cycle's containers off its node.
func TestConstraintsKeptUntilNodesMove(t *testing.T) {
	ctx := context.Background()
	mgr, now := testRM(t, quota.DefaultQueues)
	clock := func() time.Time { return *now }
	kube := &versionedNodes{nodes: map[string]*corev1.Node{}}
	for _, id := range []string{"n1", "n2"} {
		kube.nodes[id] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: id}}
		put(t, mgr, &records.Node{ID: id, Host: id, HTTPAddress: id + ":8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}})
	}
	attempt := registered(t, mgr, "default")
	a := New(mgr, Options{Logger: quiet, Now: clock, Nodes: kube})
	// ask grants n more containers and returns where the cycle put them
	// and how many node lookups it made.
	ask := func(n int) (map[string]int, int) {
		t.Helper()
		a.Update(attempt, []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)},
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(n))}})
		before := kube.lookups
		granted, err := a.Cycle(ctx)
		if err != nil || granted != n {
			t.Fatalf("cycle granted %d, %v; want %d", granted, err, n)
		}
		if _, err := mgr.Allocate(ctx, rm.Allocation{Attempt: attempt, Acquire: true}); err != nil {
			t.Fatal(err)
		}
		on := map[string]int{}
		for _, c := range mgr.Snapshot().ContainersOfAttempt(attempt) {
			on[c.Node]++
		}
		return on, kube.lookups - before
	}
	if _, looked := ask(2); looked != 2 {
		t.Fatalf("first cycle looked %d nodes up, want 2", looked)
	}
	before, looked := ask(2)
	if looked != 0 {
		t.Fatalf("a cycle with the same nodes looked %d nodes up, want 0", looked)
	}
	kube.nodes["n1"].Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	kube.version++
	on, looked := ask(4)
	if looked != 2 {
		t.Errorf("after the version moved the cycle looked %d nodes up, want 2", looked)
	}
	if on["n1"] != before["n1"] || on["n2"] != before["n2"]+4 {
		t.Errorf("containers on %v after the taint (before it %v): want the 4 new ones on n2", on, before)
	}
	// A node's record written again (what pods hold there, as each
	// binding writes it) leaves the same nodes: not evaluated again.
	put(t, mgr, &records.Node{ID: "n2", Host: "n2", HTTPAddress: "n2:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}, Occupied: records.Resource{MemoryMB: 1024, VCores: 1}})
	if _, looked := ask(1); looked != 0 {
		t.Errorf("after a node's record changed the cycle looked %d nodes up, want 0", looked)
	}
	// A node joining is a new node set: evaluated again.
	kube.nodes["n3"] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}
	put(t, mgr, &records.Node{ID: "n3", Host: "n3", HTTPAddress: "n3:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}})
	if _, looked := ask(1); looked != 3 {
		t.Errorf("after a node joined the cycle looked %d nodes up, want 3", looked)
	}
}

// Pods share a memo entry exactly when their selector, affinity and
// tolerations are the same.
func TestConstraintKey(t *testing.T) {
	secs := int64(30)
	pod := func(edit func(*corev1.PodSpec)) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"zone": "x", "type": "kwok"},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
		if edit != nil {
			edit(&p.Spec)
		}
		return p
	}
	affinity := func(value string) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}}}}}
	}
	cases := []struct {
		name string
		edit func(*corev1.PodSpec)
		same bool
	}{
		{"the same constraints", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"type": "kwok", "zone": "x"} }, true},
		{"containers and labels apart", func(s *corev1.PodSpec) { s.Containers = []corev1.Container{{Name: "c"}} }, true},
		{"a selector value", func(s *corev1.PodSpec) { s.NodeSelector["zone"] = "y" }, false},
		{"a selector key moved to a toleration", func(s *corev1.PodSpec) {
			delete(s.NodeSelector, "zone")
			s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: "zone", Value: "x"})
		}, false},
		{"a toleration's effect", func(s *corev1.PodSpec) { s.Tolerations[0].Effect = corev1.TaintEffectNoExecute }, false},
		{"a toleration's seconds", func(s *corev1.PodSpec) { s.Tolerations[0].TolerationSeconds = &secs }, false},
		{"no selector", func(s *corev1.PodSpec) { s.NodeSelector = nil }, false},
		{"an affinity", func(s *corev1.PodSpec) { s.Affinity = affinity("x") }, false},
	}
	base, err := constraintKey(pod(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		key, err := constraintKey(pod(tc.edit))
		if err != nil {
			t.Fatal(err)
		}
		if (key == base) != tc.same {
			t.Errorf("%s: same key %v, want %v", tc.name, key == base, tc.same)
		}
	}
	a, _ := constraintKey(pod(func(s *corev1.PodSpec) { s.Affinity = affinity("x") }))
	b, _ := constraintKey(pod(func(s *corev1.PodSpec) { s.Affinity = affinity("y") }))
	if a == b {
		t.Error("two affinities share a key")
	}
}
