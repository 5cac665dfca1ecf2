package tide

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

var now = time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)

// pool is n nodes of 10 CPUs, each with the given online requests.
func pool(online ...int64) []NodeView {
	var out []NodeView
	for i, m := range online {
		out = append(out, NodeView{Name: fmt.Sprintf("n%02d", i), State: v1alpha1.StateOnline, Ready: true, MilliCPU: 10000,
			OnlineMilliCPU: m, OnlinePods: int(m / 1000)})
	}
	return out
}

func with(nodes []NodeView, name string, f func(*NodeView)) []NodeView {
	for i := range nodes {
		if nodes[i].Name == name {
			f(&nodes[i])
		}
	}
	return nodes
}

func state(s v1alpha1.NodeState) func(*NodeView) { return func(n *NodeView) { n.State = s } }

func int32p(v int32) *int32 { return &v }

func TestDecide(t *testing.T) {
	spec := v1alpha1.TidePoolSpec{WatermarkPercent: 90, BandPercent: 5}
	tests := []struct {
		name    string
		spec    func(*v1alpha1.TidePoolSpec)
		nodes   []NodeView
		pending int64 // waiting: the scheduler found no room
		unbound int64 // created, not yet scheduled
		level   int32
		lend    []string
		abort   []string
		reclaim []string
		reason  string
	}{
		{name: "the trough: several nodes lent at once, fewest online pods first, level kept under the watermark",
			// 10 nodes, 30 CPUs requested: 30/100 = 30%; lending 6 leaves
			// 30/40 = 75%, a 7th would make 30/30 = 100%.
			nodes: pool(5000, 1000, 3000, 2000, 4000, 1000, 6000, 2000, 3000, 3000), level: 30,
			lend: []string{"n01", "n05", "n03", "n07", "n02", "n08"}, reason: ReasonBelowWatermark},
		{name: "at the watermark nothing moves", nodes: pool(9000, 9000), level: 90},
		{name: "within the band nothing moves",
			nodes: with(pool(9000, 9500, 0), "n02", state(v1alpha1.StateOffline)), level: 92},
		{name: "the minimum of online nodes holds", spec: func(s *v1alpha1.TidePoolSpec) { s.MinOnlineNodes = 3 },
			nodes: pool(1000, 1000, 1000, 1000), level: 10, lend: []string{"n00"}, reason: ReasonBelowWatermark},
		{name: "the cap of lent nodes holds", spec: func(s *v1alpha1.TidePoolSpec) { s.MaxLentNodes = int32p(2) },
			nodes: with(pool(1000, 1000, 1000, 0), "n03", state(v1alpha1.StateOffline)), level: 10, lend: []string{"n00"}, reason: ReasonBelowWatermark},
		{name: "deletion cost orders the choice", spec: func(s *v1alpha1.TidePoolSpec) { s.Policy = v1alpha1.PolicyDeletionCost },
			nodes: with(with(pool(1000, 1000, 8000), "n00", func(n *NodeView) { n.DeletionCost = 50 }), "n02", func(n *NodeView) { n.DeletionCost = -10 }),
			// 10/30: lending n02 first (cost -10) leaves 10/20 = 50%;
			// one more would make 100%.
			level: 33, lend: []string{"n02"}, reason: ReasonBelowWatermark},
		{name: "not while a node is being taken back",
			nodes: with(pool(1000, 1000, 0), "n02", state(v1alpha1.StateOfflineToOnline)), level: 10},
		{name: "a node not Ready is neither counted nor chosen",
			nodes: with(pool(1000, 1000, 1000), "n00", func(n *NodeView) { n.Ready = false }), level: 15, lend: []string{"n01"}, reason: ReasonBelowWatermark},
		{name: "the peak: Offline nodes taken back, fewest batch pods first, until the level is at the watermark",
			// 37 CPUs requested on 3 online nodes: 123%; 37/0.9 = 41.1
			// CPUs wanted: two more nodes.
			nodes: with(with(with(pool(13000, 12000, 12000, 0, 0, 0), "n03", func(n *NodeView) {
				n.State, n.BatchPods = v1alpha1.StateOffline, 3
			}), "n04", func(n *NodeView) {
				n.State, n.BatchPods = v1alpha1.StateOffline, 5
			}), "n05", func(n *NodeView) { n.State, n.BatchPods = v1alpha1.StateOffline, 1 }),
			level: 123, reclaim: []string{"n05", "n03"}, reason: ReasonAboveBand},
		{name: "nodes on their way to batch come back first",
			nodes: with(with(pool(10000, 10000, 0), "n02", state(v1alpha1.StateOnlineToOffline)), "n01", state(v1alpha1.StateOffline)),
			// 20/10 online = 200%: n02 aborts, then n01 is taken back.
			level: 200, abort: []string{"n02"}, reclaim: []string{"n01"}, reason: ReasonAboveBand},
		{name: "online pods created but not yet scheduled count in the level, and take nothing back",
			// 10 CPUs bound + 9 just created of 30: 63%; lending n02
			// would make 19/20 = 95%.
			nodes: pool(5000, 5000, 0), unbound: 9000, level: 63},
		{name: "pending online pods take one node back even at a low level",
			nodes: with(pool(1000, 0, 0), "n02", state(v1alpha1.StateOffline)), pending: 500, level: 7, reclaim: []string{"n02"}, reason: ReasonOnlinePending},
		{name: "pending online pods with a node already on its way back take no more",
			nodes:   with(with(pool(1000, 0, 0), "n02", state(v1alpha1.StateOffline)), "n01", state(v1alpha1.StateOfflineToOnline)),
			pending: 500, level: 15, reason: ReasonOnlinePending}, // 1.5 of the one online node's 10
		{name: "a timed window keeps nodes online", spec: func(s *v1alpha1.TidePoolSpec) {
			s.Windows = []v1alpha1.TimedWindow{{From: metav1.NewTime(now.Add(-time.Hour)), To: metav1.NewTime(now.Add(time.Hour)), OnlineNodes: 3}}
		}, nodes: with(with(pool(1000, 0, 0, 0), "n02", state(v1alpha1.StateOffline)), "n03", state(v1alpha1.StateOffline)),
			level: 5, reclaim: []string{"n02"}, reason: ReasonTimedWindow},
		{name: "an ended timed window keeps nothing", spec: func(s *v1alpha1.TidePoolSpec) {
			s.Windows = []v1alpha1.TimedWindow{{From: metav1.NewTime(now.Add(-2 * time.Hour)), To: metav1.NewTime(now.Add(-time.Hour)), OnlineNodes: 3}}
		}, nodes: pool(1000, 1000), level: 10, lend: []string{"n00"}, reason: ReasonBelowWatermark},
		{name: "online demand with no online node at all takes one back",
			nodes: with(pool(1000), "n00", state(v1alpha1.StateOffline)), level: 1000, reclaim: []string{"n00"}, reason: ReasonAboveBand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := spec
			if tc.spec != nil {
				tc.spec(&s)
			}
			p := Decide(s, tc.nodes, Pending{MilliCPU: tc.pending + tc.unbound, WaitingMilliCPU: tc.pending}, now)
			if p.LevelPercent != tc.level || !slices.Equal(p.Lend, tc.lend) || !slices.Equal(p.Abort, tc.abort) ||
				!slices.Equal(p.Reclaim, tc.reclaim) || p.Reason != tc.reason {
				t.Errorf("got %s\nwant level %d%%: lend %v, abort %v, reclaim %v (%s)", p, tc.level, tc.lend, tc.abort, tc.reclaim, tc.reason)
			}
		})
	}
}

// The nodes lent next, for the pod-deletion-cost: in lending order, past
// those lent now, a tenth of the pool, within the caps.
func TestDecideNext(t *testing.T) {
	spec := v1alpha1.TidePoolSpec{WatermarkPercent: 90, BandPercent: 5}
	// 20 nodes, heavily used: nothing is lent, the two emptiest are next.
	busy := make([]int64, 20)
	for i := range busy {
		busy[i] = 9500 - int64(i%7)*100
	}
	busy[13], busy[4] = 8000, 8500
	if p := Decide(spec, pool(busy...), Pending{}, now); len(p.Lend) != 0 || !slices.Equal(p.Next, []string{"n13", "n04"}) {
		t.Errorf("busy pool: %s, next %v", p, p.Next)
	}
	// Lending now: next comes after those lent.
	light := pool(1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 9000, 9000, 9000)
	p := Decide(spec, light, Pending{}, now)
	if len(p.Lend) == 0 || slices.Contains(p.Next, p.Lend[0]) || len(p.Next) != 1 {
		t.Errorf("light pool: %s, next %v", p, p.Next)
	}
	// No room under the cap: nothing next.
	spec.MaxLentNodes = int32p(0)
	if p := Decide(spec, light, Pending{}, now); len(p.Next) != 0 || len(p.Lend) != 0 {
		t.Errorf("capped pool: %s, next %v", p, p.Next)
	}
}

func TestNoticeAndDrainTimeout(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	tests := []struct {
		name          string
		spec          v1alpha1.TidePoolSpec
		notice, drain time.Duration
	}{
		{"defaults", v1alpha1.TidePoolSpec{}, 10 * time.Minute, 5 * time.Minute},
		{"set", v1alpha1.TidePoolSpec{Notice: d(3 * time.Minute), DrainTimeout: d(time.Minute)}, 3 * time.Minute, time.Minute},
		{"no notice: taken back at once; a zero drain timeout is the default", v1alpha1.TidePoolSpec{Notice: d(0), DrainTimeout: d(0)}, 0, 5 * time.Minute},
	}
	for _, tc := range tests {
		if n, dr := Notice(tc.spec), DrainTimeout(tc.spec); n != tc.notice || dr != tc.drain {
			t.Errorf("%s: notice %s drain %s, want %s %s", tc.name, n, dr, tc.notice, tc.drain)
		}
	}
}
