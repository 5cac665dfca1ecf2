package quota

import (
	"math/rand/v2"
	"testing"
)

func cpu(m int64) Resource { return Resource{MilliCPU: m} }

func maxCPU(m int64) *Resource { r := Resource{MilliCPU: m, Memory: 1 << 50}; return &r }

func TestFairShares(t *testing.T) {
	gpu := func(n int64) Resource { return Resource{Extended: map[string]int64{"nvidia.com/gpu": n}} }
	tests := []struct {
		name     string
		quotas   []QueueQuota
		capacity Resource
		loads    map[string]QueueLoad
		want     map[string]Resource // fair shares
	}{{
		name:     "equal guarantees, equal demand: guarantees then idle split evenly",
		quotas:   []QueueQuota{{Path: "root"}, {Path: "root.a", Guaranteed: cpu(40)}, {Path: "root.b", Guaranteed: cpu(40)}},
		capacity: cpu(100),
		loads:    map[string]QueueLoad{"root.a": {Pending: cpu(100)}, "root.b": {Pending: cpu(100)}},
		want:     map[string]Resource{"root": cpu(100), "root.a": cpu(50), "root.b": cpu(50)},
	}, {
		name:     "idle capacity divided by weight",
		quotas:   []QueueQuota{{Path: "root"}, {Path: "root.a", Weight: 3}, {Path: "root.b", Weight: 1}},
		capacity: cpu(100),
		loads:    map[string]QueueLoad{"root.a": {Pending: cpu(100)}, "root.b": {Pending: cpu(100)}},
		want:     map[string]Resource{"root.a": cpu(75), "root.b": cpu(25)},
	}, {
		name:     "an idle guarantee is lent to the busy queue",
		quotas:   []QueueQuota{{Path: "root"}, {Path: "root.a", Guaranteed: cpu(50)}, {Path: "root.b", Guaranteed: cpu(50)}},
		capacity: cpu(100),
		loads:    map[string]QueueLoad{"root.a": {Used: cpu(10)}, "root.b": {Used: cpu(30), Pending: cpu(200)}},
		want:     map[string]Resource{"root.a": cpu(10), "root.b": cpu(90)},
	}, {
		name:     "borrowing stops at max; the rest stays idle",
		quotas:   []QueueQuota{{Path: "root"}, {Path: "root.a", Guaranteed: cpu(50)}, {Path: "root.b", Guaranteed: cpu(20), Max: maxCPU(60)}},
		capacity: cpu(100),
		loads:    map[string]QueueLoad{"root.a": {Pending: cpu(10)}, "root.b": {Pending: cpu(200)}},
		want:     map[string]Resource{"root": cpu(70), "root.a": cpu(10), "root.b": cpu(60)},
	}, {
		name: "children bounded by their parent's max",
		quotas: []QueueQuota{{Path: "root"}, {Path: "root.p", Max: maxCPU(50)}, {Path: "root.q"},
			{Path: "root.p.x", Weight: 1}, {Path: "root.p.y", Weight: 4}},
		capacity: cpu(100),
		loads:    map[string]QueueLoad{"root.p.x": {Pending: cpu(100)}, "root.p.y": {Pending: cpu(100)}, "root.q": {Pending: cpu(20)}},
		want:     map[string]Resource{"root.p": cpu(50), "root.q": cpu(20), "root.p.x": cpu(10), "root.p.y": cpu(40)},
	}, {
		name: "a subtree's guarantee is split among its children, the rest borrowed",
		quotas: []QueueQuota{{Path: "root"}, {Path: "root.p", Guaranteed: cpu(60)}, {Path: "root.q", Guaranteed: cpu(40)},
			{Path: "root.p.x", Guaranteed: cpu(50)}, {Path: "root.p.y", Guaranteed: cpu(10)}},
		capacity: cpu(120),
		loads:    map[string]QueueLoad{"root.p.x": {Pending: cpu(30)}, "root.p.y": {Pending: cpu(100)}, "root.q": {Pending: cpu(100)}},
		// p: 60 + half of 20 idle = 70; x takes its 30; y the other 40. q: 40 + 10.
		want: map[string]Resource{"root.p": cpu(70), "root.q": cpu(50), "root.p.x": cpu(30), "root.p.y": cpu(40)},
	}, {
		name:     "capacity below the guarantees: shared in proportion to them",
		quotas:   []QueueQuota{{Path: "root"}, {Path: "root.a", Guaranteed: cpu(60)}, {Path: "root.b", Guaranteed: cpu(20)}},
		capacity: cpu(40),
		loads:    map[string]QueueLoad{"root.a": {Pending: cpu(100)}, "root.b": {Pending: cpu(100)}},
		want:     map[string]Resource{"root.a": cpu(30), "root.b": cpu(10)},
	}, {
		name:     "rounding crumbs are handed out, not lost",
		quotas:   []QueueQuota{{Path: "root"}, {Path: "root.a"}, {Path: "root.b"}, {Path: "root.c"}},
		capacity: cpu(10),
		loads:    map[string]QueueLoad{"root.a": {Pending: cpu(10)}, "root.b": {Pending: cpu(10)}, "root.c": {Pending: cpu(10)}},
		want:     map[string]Resource{"root": cpu(10), "root.a": cpu(4), "root.b": cpu(3), "root.c": cpu(3)},
	}, {
		name: "extended resources: unnamed in max is unlimited",
		quotas: []QueueQuota{{Path: "root"}, {Path: "root.a", Max: maxCPU(1000)},
			{Path: "root.b", Max: &Resource{MilliCPU: 1000, Memory: 1, Extended: map[string]int64{"nvidia.com/gpu": 2}}}},
		capacity: gpu(8),
		loads:    map[string]QueueLoad{"root.a": {Pending: gpu(8)}, "root.b": {Pending: gpu(8)}},
		want:     map[string]Resource{"root.a": gpu(6), "root.b": gpu(2)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := NewHierarchy(tc.quotas)
			if err != nil {
				t.Fatal(err)
			}
			got := h.FairShares(tc.capacity, tc.loads)
			for path, want := range tc.want {
				if !got[path].FairShare.Equal(want) {
					t.Errorf("%s: fair share %v, want %v", path, got[path].FairShare, want)
				}
			}
		})
	}
}

func TestBorrowed(t *testing.T) {
	h, err := NewHierarchy([]QueueQuota{{Path: "root"},
		{Path: "root.p", Guaranteed: Resource{MilliCPU: 100, Memory: 100}},
		{Path: "root.p.a", Guaranteed: Resource{MilliCPU: 40, Memory: 100}},
		{Path: "root.b", Guaranteed: Resource{MilliCPU: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	got := h.FairShares(Resource{MilliCPU: 1000, Memory: 1000}, map[string]QueueLoad{
		"root.p.a": {Used: Resource{MilliCPU: 70, Memory: 50}},
		"root.b":   {Used: Resource{MilliCPU: 5, Memory: 20}},
	})
	tests := []struct {
		path             string
		within, borrowed Resource
	}{
		{"root.p.a", Resource{MilliCPU: 40, Memory: 50}, Resource{MilliCPU: 30}},
		{"root.p", Resource{MilliCPU: 70, Memory: 50}, Resource{}}, // the parent's guarantee covers a's borrowing
		{"root.b", Resource{MilliCPU: 5}, Resource{Memory: 20}},    // no memory guarantee: all of it borrowed
	}
	for _, tc := range tests {
		s := got[tc.path]
		if !s.Within.Equal(tc.within) || !s.Borrowed.Equal(tc.borrowed) {
			t.Errorf("%s: within %v borrowed %v, want %v %v", tc.path, s.Within, s.Borrowed, tc.within, tc.borrowed)
		}
	}
}

func TestNewHierarchyRejects(t *testing.T) {
	for name, quotas := range map[string][]QueueQuota{
		"no root":                {{Path: "root.a"}},
		"orphan":                 {{Path: "root"}, {Path: "root.a.b"}},
		"duplicate":              {{Path: "root"}, {Path: "root.a"}, {Path: "root.a"}},
		"negative weight":        {{Path: "root"}, {Path: "root.a", Weight: -1}},
		"guarantee above max":    {{Path: "root"}, {Path: "root.a", Guaranteed: cpu(10), Max: maxCPU(5)}},
		"children over parent":   {{Path: "root"}, {Path: "root.p", Guaranteed: cpu(10)}, {Path: "root.p.a", Guaranteed: cpu(6)}, {Path: "root.p.b", Guaranteed: cpu(6)}},
		"negative guarantee":     {{Path: "root"}, {Path: "root.a", Guaranteed: cpu(-1)}},
		"not under root":         {{Path: "root"}, {Path: "other"}},
		"unbacked child promise": {{Path: "root"}, {Path: "root.p"}, {Path: "root.p.a", Guaranteed: cpu(1)}},
	} {
		if _, err := NewHierarchy(quotas); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestFairSharesProperties checks, on random trees and loads, that no queue
// exceeds its demand or max, that siblings never share out more than their
// parent holds, and that capacity is not left idle while a queue below
// both its demand and max exists at the top level.
func TestFairSharesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		quotas := []QueueQuota{{Path: "root"}, {Path: "root.p", Guaranteed: cpu(rng.Int64N(300))}, {Path: "root.q"}}
		loads := map[string]QueueLoad{}
		leaves := []string{"root.q"}
		for i := range 4 {
			path := "root.p." + string(rune('a'+i))
			q := QueueQuota{Path: path, Weight: float64(rng.IntN(4))}
			if rng.IntN(2) == 0 {
				q.Max = maxCPU(rng.Int64N(500))
			}
			quotas = append(quotas, q)
			leaves = append(leaves, path)
		}
		for _, l := range leaves {
			loads[l] = QueueLoad{Used: cpu(rng.Int64N(200)), Pending: cpu(rng.Int64N(400))}
		}
		h, err := NewHierarchy(quotas)
		if err != nil {
			t.Fatal(err)
		}
		capacity := cpu(rng.Int64N(2000))
		got := h.FairShares(capacity, loads)
		for _, path := range h.Paths() {
			s := got[path]
			q, _ := h.Quota(path)
			if !s.FairShare.FitsLimit(q.Max) {
				t.Fatalf("iter %d: %s fair share %v above max", iter, path, s.FairShare)
			}
			var kids Resource
			for _, c := range h.Paths() {
				if len(c) > len(path) && c[:len(path)+1] == path+"." && len(h.Lineage(c)) == len(h.Lineage(path))+1 {
					kids.AddInPlace(got[c].FairShare)
				}
			}
			if len(h.Lineage(path)) > 0 && !kids.Fits(s.FairShare) {
				t.Fatalf("iter %d: children of %s get %v, more than its %v", iter, path, kids, s.FairShare)
			}
		}
		if !got["root"].FairShare.Fits(capacity) {
			t.Fatalf("iter %d: root share %v above capacity %v", iter, got["root"].FairShare, capacity)
		}
		// Work conservation at the top: the root hands out min(capacity,
		// total capped demand) and p+q receive all of it.
		top := got["root.p"].FairShare.Add(got["root.q"].FairShare)
		if !top.Equal(got["root"].FairShare) {
			t.Fatalf("iter %d: p+q = %v, root holds %v", iter, top, got["root"].FairShare)
		}
	}
}
