package amrm

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
)

// An AM hears, in the updatedNodes of its next allocate response, of each
// node that became usable, unusable or decommissioning after it
// registered, once, in the node's state as of that response; a node
// decommissioning with a deadline with the seconds left as its timeout.
func TestUpdatedNodes(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	node := func(name string, s records.NodeState, usedMB int64) *records.Node {
		return &records.Node{ID: name + ":8041", Host: name, Port: 8041, HTTPAddress: name + ":8042", State: s,
			Capability: records.Resource{MemoryMB: 4096, VCores: 4}, Used: records.Resource{MemoryMB: usedMB}}
	}
	for _, tc := range []struct {
		name   string
		before []*records.Node // when the AM registers
		after  []*records.Node // before its first allocate
		want   []string        // "host state" of each updated node
	}{
		{name: "a node lost after the AM registered is reported LOST",
			before: []*records.Node{node("a", records.NodeRunning, 0), node("b", records.NodeRunning, 0)},
			after:  []*records.Node{node("a", records.NodeLost, 0)},
			want:   []string{"a NS_LOST"}},
		{name: "a node that joins after the AM registered is reported RUNNING",
			before: []*records.Node{node("a", records.NodeRunning, 0)},
			after:  []*records.Node{node("c", records.NodeRunning, 0)},
			want:   []string{"c NS_RUNNING"}},
		{name: "a node that recovers from unhealthy is reported RUNNING",
			before: []*records.Node{node("a", records.NodeUnhealthy, 0)},
			after:  []*records.Node{node("a", records.NodeRunning, 0)},
			want:   []string{"a NS_RUNNING"}},
		{name: "a node being decommissioned is reported DECOMMISSIONING",
			before: []*records.Node{node("a", records.NodeRunning, 0)},
			after:  []*records.Node{node("a", records.NodeDecommissioning, 0)},
			want:   []string{"a NS_DECOMMISSIONING"}},
		{name: "a node taken back with notice is reported DECOMMISSIONING with the seconds left to the deadline as its timeout",
			before: []*records.Node{node("a", records.NodeRunning, 0)},
			after: []*records.Node{func() *records.Node {
				n := node("a", records.NodeDecommissioning, 0)
				n.DecommissionDeadline = now.Add(89500 * time.Millisecond).UnixMilli()
				return n
			}()},
			want: []string{"a NS_DECOMMISSIONING 90s"}},
		{name: "a decommissioning node taken back into service is reported RUNNING",
			before: []*records.Node{node("a", records.NodeDecommissioning, 0)},
			after:  []*records.Node{node("a", records.NodeRunning, 0)},
			want:   []string{"a NS_RUNNING"}},
		{name: "a change in a node's use is not an update",
			before: []*records.Node{node("a", records.NodeRunning, 0)},
			after:  []*records.Node{node("a", records.NodeRunning, 2048)}},
		{name: "an unusable node going from unhealthy to lost is not an update",
			before: []*records.Node{node("a", records.NodeUnhealthy, 0)},
			after:  []*records.Node{node("a", records.NodeLost, 0)}},
		{name: "a node lost and back before the allocate is reported once, as it is now",
			before: []*records.Node{node("a", records.NodeRunning, 0)},
			after:  []*records.Node{node("a", records.NodeLost, 0), node("a", records.NodeRunning, 0)},
			want:   []string{"a NS_RUNNING"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startIn(t, t.TempDir(), false, Options{Now: func() time.Time { return now }})
			for _, n := range tc.before {
				if err := f.mgr.PutNode(n); err != nil {
					t.Fatal(err)
				}
			}
			_, c := f.registeredAM(t)
			for _, n := range tc.after {
				if err := f.mgr.PutNode(n); err != nil {
					t.Fatal(err)
				}
				// Each change seen by an allocate of another AM, as a busy RM
				// sees it: the log keeps every change, not the last state.
				f.svc.clusterHeadroom()
			}
			resp, err := allocate(c, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range resp.GetUpdatedNodes() {
				s := r.GetNodeId().GetHost() + " " + r.GetNodeState().String()
				if r.DecommissioningTimeout != nil {
					s += fmt.Sprintf(" %ds", r.GetDecommissioningTimeout())
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("updated nodes %q, want %q", got, tc.want)
			}
			// Heard once: the next response carries none.
			resp, err = allocate(c, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(resp.GetUpdatedNodes()); n != 0 {
				t.Fatalf("the next response repeats %d updated nodes", n)
			}
		})
	}
}

// A retried allocate gets the updated nodes of the response it lost again.
func TestRetryGetsTheUpdatedNodesAgain(t *testing.T) {
	f := start(t)
	if err := f.mgr.PutNode(&records.Node{ID: "a:8041", Host: "a", Port: 8041, State: records.NodeRunning}); err != nil {
		t.Fatal(err)
	}
	_, c := f.registeredAM(t)
	if err := f.mgr.PutNode(&records.Node{ID: "a:8041", Host: "a", Port: 8041, State: records.NodeLost}); err != nil {
		t.Fatal(err)
	}
	first, err := allocate(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	again, err := allocate(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.GetUpdatedNodes()) != 1 || len(again.GetUpdatedNodes()) != 1 ||
		wire.NodeIDString(again.GetUpdatedNodes()[0].GetNodeId()) != "a:8041" {
		t.Fatalf("first response %v, its retry %v; want a:8041 in both", first.GetUpdatedNodes(), again.GetUpdatedNodes())
	}
}

// The log keeps a change for an AM expiry interval: every AM still alive
// has called within it.
func TestNodeLogForgetsChangesOlderThanTheExpiry(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var l nodeLog
	l.scan([]*records.Node{{ID: "a", State: records.NodeRunning}, {ID: "b", State: records.NodeRunning}}, t0)
	from := l.next()
	l.scan([]*records.Node{{ID: "a", State: records.NodeLost}, {ID: "b", State: records.NodeRunning}}, t0.Add(time.Minute))
	l.scan([]*records.Node{{ID: "a", State: records.NodeLost}, {ID: "b", State: records.NodeLost}}, t0.Add(5*time.Minute))
	if got := l.since(from); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("since registration: %q, want a and b", got)
	}
	l.trim(t0.Add(2 * time.Minute))
	if got := l.since(from); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("after trimming what is older than 2 minutes: %q, want b", got)
	}
	if got := l.since(l.next()); len(got) != 0 {
		t.Fatalf("an AM that has heard all: %q", got)
	}
}

// A node removed from the store and registered again joins anew.
func TestNodeLogSeesANodeRemovedAndBackAsJoining(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var l nodeLog
	a, b := &records.Node{ID: "a", State: records.NodeRunning}, &records.Node{ID: "b", State: records.NodeRunning}
	l.scan([]*records.Node{a, b}, t0)
	from := l.next()
	l.scan([]*records.Node{a}, t0)
	if got := l.since(from); len(got) != 0 {
		t.Fatalf("a removal is not an update: %q", got)
	}
	l.scan([]*records.Node{a, b}, t0)
	if got := l.since(from); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("b back: %q, want b", got)
	}
}
