package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
)

// harness is an in-memory store plus helpers, in the manner of Nomad's
// scheduler test harness.
type harness struct {
	t     testing.TB
	store *state.Store
	seq   int
}

func newHarness(t testing.TB, quotas ...quota.QueueQuota) *harness {
	t.Helper()
	h, err := quota.NewHierarchy(append([]quota.QueueQuota{{Path: "root"}}, quotas...))
	if err != nil {
		t.Fatal(err)
	}
	s, err := state.New(h)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, store: s}
}

func res(cpu, memGiB int64) quota.Resource {
	return quota.Resource{MilliCPU: cpu, Memory: memGiB << 30}
}

func limit(cpu, memGiB int64) *quota.Resource { r := res(cpu, memGiB); return &r }

func (h *harness) update(fn func(*state.Txn) error) {
	h.t.Helper()
	if err := h.store.Update(fn); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) node(id string, alloc, nonWeft quota.Resource) {
	h.update(func(w *state.Txn) error {
		return w.UpsertNode(&objects.Node{ID: id, Allocatable: alloc, NonWeftUsed: nonWeft})
	})
}

// job describes an application's pending requests by tier.
type job struct {
	id, queue      string
	user           string
	priority       int32
	minMembers     int
	high, med, low int
	each           quota.Resource
	reserve        quota.Resource
}

func (h *harness) submit(j job) {
	h.t.Helper()
	h.seq++
	h.update(func(w *state.Txn) error {
		if err := w.UpsertApplication(&objects.Application{ID: j.id, Queue: j.queue, User: j.user, Priority: j.priority, Reserve: j.reserve,
			MinMembers: j.minMembers, Submitted: time.Unix(int64(h.seq), 0)}); err != nil {
			return err
		}
		for _, tc := range []struct {
			tier records.Tier
			n    int
		}{{records.TierHigh, j.high}, {records.TierMedium, j.med}, {records.TierLow, j.low}} {
			for i := range tc.n {
				if err := w.AddRequest(&objects.Request{ID: fmt.Sprintf("%s-%s-%d", j.id, tc.tier, i), AppID: j.id,
					Tier: tc.tier, Resource: j.each}); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// cycle runs one scheduling cycle and applies its plan.
func (h *harness) cycle(s *Scheduler) (*objects.Plan, *objects.PlanResult) {
	h.t.Helper()
	plan, err := s.Schedule(context.Background(), h.store.Snapshot())
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := h.store.ApplyPlan(plan)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(r.Rejected) > 0 {
		h.t.Fatalf("fresh plan rejected: %+v", r.Rejected)
	}
	return plan, r
}

// placed counts an application's allocations by tier.
func (h *harness) placed(app string) map[records.Tier]int {
	out := map[records.Tier]int{}
	for _, a := range h.store.Snapshot().AllocationsOfApp(app) {
		out[a.Tier]++
	}
	return out
}

// count is how many pods of an application are placed.
func (h *harness) count(app string) int {
	n := 0
	for _, v := range h.placed(app) {
		n += v
	}
	return n
}

func (h *harness) used(queue string) quota.Resource {
	return h.store.Snapshot().QueueUsage(queue).Used
}

// rebuilt is a new store holding this one's nodes, applications, requests
// and allocations, added as a shim adds what it finds (AddAllocation).
func (h *harness) rebuilt() *harness {
	h.t.Helper()
	snap := h.store.Snapshot()
	r := &harness{t: h.t, seq: h.seq}
	s, err := state.New(snap.Hierarchy())
	if err != nil {
		h.t.Fatal(err)
	}
	r.store = s
	r.update(func(w *state.Txn) error {
		for _, n := range snap.Nodes() {
			if err := w.UpsertNode(&objects.Node{ID: n.ID, Allocatable: n.Allocatable, NonWeftUsed: n.NonWeftUsed}); err != nil {
				return err
			}
		}
		var apps []*objects.Application
		for _, leaf := range snap.Hierarchy().Leaves() {
			apps = append(apps, snap.ApplicationsInQueue(leaf)...)
		}
		for _, a := range apps {
			if err := w.UpsertApplication(a); err != nil {
				return err
			}
			for _, al := range snap.AllocationsOfApp(a.ID) {
				if err := w.AddAllocation(al); err != nil {
					return err
				}
			}
			for _, rq := range snap.RequestsOfApp(a.ID) {
				if err := w.AddRequest(rq); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return r
}
