package amrm

import (
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// The cluster's headroom in allocate responses is summed once per change
// of the nodes and follows every change: a node added, one lost, one's
// usage grown.
func TestClusterHeadroomFollowsNodes(t *testing.T) {
	f := startWith(t, true)
	s := New(f.mgr, Options{})
	node := func(id string, state records.NodeState, usedMB int64) *records.Node {
		return &records.Node{ID: id, State: state, Capability: records.Resource{MemoryMB: 4096, VCores: 4},
			Used: records.Resource{MemoryMB: usedMB}, Occupied: records.Resource{MemoryMB: 1024, VCores: 1}}
	}
	for _, step := range []struct {
		name  string
		put   *records.Node
		nodes int
		free  records.Resource
	}{
		{"one node", node("a:8041", records.NodeRunning, 0), 1, records.Resource{MemoryMB: 3072, VCores: 3}},
		{"a second", node("b:8041", records.NodeRunning, 0), 2, records.Resource{MemoryMB: 6144, VCores: 6}},
		{"its usage grows", node("b:8041", records.NodeRunning, 2048), 2, records.Resource{MemoryMB: 4096, VCores: 6}},
		{"one lost", node("a:8041", records.NodeLost, 0), 1, records.Resource{MemoryMB: 1024, VCores: 3}},
	} {
		if err := f.mgr.PutNode(step.put); err != nil {
			t.Fatal(err)
		}
		h := s.clusterHeadroom()
		if h.nodes != step.nodes || h.free != step.free {
			t.Errorf("%s: %d nodes, %+v free; want %d, %+v", step.name, h.nodes, h.free, step.nodes, step.free)
		}
		if again := s.clusterHeadroom(); again != h {
			t.Errorf("%s: summed again with no node changed", step.name)
		}
	}
}
