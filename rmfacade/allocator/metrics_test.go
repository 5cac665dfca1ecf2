package allocator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler/objects"
	schedstate "github.com/weft-sh/weft/scheduler/state"
)

// queuesWithUsage is a scheduler store over leaves leaf queues under
// root, each with a guarantee, every second one with a max, and, in every
// queue but the last, one application holding one container and asking
// for another.
func queuesWithUsage(t testing.TB, leaves int) (*schedstate.Store, *quota.Hierarchy) {
	t.Helper()
	qs := []quota.QueueQuota{{Path: "root"}}
	for i := range leaves {
		q := quota.QueueQuota{Path: fmt.Sprintf("root.q%03d", i), Guaranteed: quota.Resource{MilliCPU: 1000, Memory: 1 << 30}}
		if i%2 == 0 {
			q.Max = &quota.Resource{MilliCPU: 8000, Memory: 8 << 30}
		}
		qs = append(qs, q)
	}
	h, err := quota.NewHierarchy(qs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := schedstate.New(h)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(func(w *schedstate.Txn) error {
		if err := w.UpsertNode(&objects.Node{ID: "n1", Allocatable: quota.Resource{MilliCPU: 1 << 20, Memory: 1 << 50}}); err != nil {
			return err
		}
		for i := range leaves - 1 {
			app, q := fmt.Sprintf("app%03d", i), fmt.Sprintf("root.q%03d", i)
			if err := w.UpsertApplication(&objects.Application{ID: app, Queue: q}); err != nil {
				return err
			}
			if err := w.AddAllocation(&objects.Allocation{ID: app + "/1", AppID: app, NodeID: "n1", Tier: records.TierLow,
				Resource: quota.Resource{MilliCPU: 500, Memory: 512 << 20}}); err != nil {
				return err
			}
			if err := w.AddRequest(&objects.Request{ID: app + "/2", AppID: app, Tier: records.TierLow,
				Resource: quota.Resource{MilliCPU: 250, Memory: 256 << 20}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return st, h
}

// TestObserveQueues checks the queue series a cycle leaves for the next
// scrape: every leaf's guarantee, its max where it has one, what its
// applications use, release and ask for, and its waiting containers; and
// that a later cycle's queues replace an earlier one's.
func TestObserveQueues(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := newMetrics(reg)
	st, h := queuesWithUsage(t, 3)
	m.observeQueues(st, h, map[string]int{"root.q000": 1, "root.q001": 1})
	want := `
# HELP weft_queue_pending_containers Containers a leaf queue's applications wait for.
# TYPE weft_queue_pending_containers gauge
weft_queue_pending_containers{queue="root.q000"} 1
weft_queue_pending_containers{queue="root.q001"} 1
weft_queue_pending_containers{queue="root.q002"} 0
# HELP weft_queue_resource A leaf queue's resources by kind: used, releasing (held by preemption victims), pending, guaranteed, max (absent: unbounded).
# TYPE weft_queue_resource gauge
weft_queue_resource{kind="guaranteed",queue="root.q000",resource="memory_bytes"} 1.073741824e+09
weft_queue_resource{kind="guaranteed",queue="root.q000",resource="millicpu"} 1000
weft_queue_resource{kind="guaranteed",queue="root.q001",resource="memory_bytes"} 1.073741824e+09
weft_queue_resource{kind="guaranteed",queue="root.q001",resource="millicpu"} 1000
weft_queue_resource{kind="guaranteed",queue="root.q002",resource="memory_bytes"} 1.073741824e+09
weft_queue_resource{kind="guaranteed",queue="root.q002",resource="millicpu"} 1000
weft_queue_resource{kind="max",queue="root.q000",resource="memory_bytes"} 8.589934592e+09
weft_queue_resource{kind="max",queue="root.q000",resource="millicpu"} 8000
weft_queue_resource{kind="max",queue="root.q002",resource="memory_bytes"} 8.589934592e+09
weft_queue_resource{kind="max",queue="root.q002",resource="millicpu"} 8000
weft_queue_resource{kind="pending",queue="root.q000",resource="memory_bytes"} 2.68435456e+08
weft_queue_resource{kind="pending",queue="root.q000",resource="millicpu"} 250
weft_queue_resource{kind="pending",queue="root.q001",resource="memory_bytes"} 2.68435456e+08
weft_queue_resource{kind="pending",queue="root.q001",resource="millicpu"} 250
weft_queue_resource{kind="pending",queue="root.q002",resource="memory_bytes"} 0
weft_queue_resource{kind="pending",queue="root.q002",resource="millicpu"} 0
weft_queue_resource{kind="releasing",queue="root.q000",resource="memory_bytes"} 0
weft_queue_resource{kind="releasing",queue="root.q000",resource="millicpu"} 0
weft_queue_resource{kind="releasing",queue="root.q001",resource="memory_bytes"} 0
weft_queue_resource{kind="releasing",queue="root.q001",resource="millicpu"} 0
weft_queue_resource{kind="releasing",queue="root.q002",resource="memory_bytes"} 0
weft_queue_resource{kind="releasing",queue="root.q002",resource="millicpu"} 0
weft_queue_resource{kind="used",queue="root.q000",resource="memory_bytes"} 5.36870912e+08
weft_queue_resource{kind="used",queue="root.q000",resource="millicpu"} 500
weft_queue_resource{kind="used",queue="root.q001",resource="memory_bytes"} 5.36870912e+08
weft_queue_resource{kind="used",queue="root.q001",resource="millicpu"} 500
weft_queue_resource{kind="used",queue="root.q002",resource="memory_bytes"} 0
weft_queue_resource{kind="used",queue="root.q002",resource="millicpu"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "weft_queue_resource", "weft_queue_pending_containers"); err != nil {
		t.Fatal(err)
	}

	// The next cycle's tree has one leaf: the others' series go.
	st, h = queuesWithUsage(t, 1)
	m.observeQueues(st, h, nil)
	want = `
# HELP weft_queue_pending_containers Containers a leaf queue's applications wait for.
# TYPE weft_queue_pending_containers gauge
weft_queue_pending_containers{queue="root.q000"} 0
# HELP weft_queue_resource A leaf queue's resources by kind: used, releasing (held by preemption victims), pending, guaranteed, max (absent: unbounded).
# TYPE weft_queue_resource gauge
weft_queue_resource{kind="guaranteed",queue="root.q000",resource="memory_bytes"} 1.073741824e+09
weft_queue_resource{kind="guaranteed",queue="root.q000",resource="millicpu"} 1000
weft_queue_resource{kind="max",queue="root.q000",resource="memory_bytes"} 8.589934592e+09
weft_queue_resource{kind="max",queue="root.q000",resource="millicpu"} 8000
weft_queue_resource{kind="pending",queue="root.q000",resource="memory_bytes"} 0
weft_queue_resource{kind="pending",queue="root.q000",resource="millicpu"} 0
weft_queue_resource{kind="releasing",queue="root.q000",resource="memory_bytes"} 0
weft_queue_resource{kind="releasing",queue="root.q000",resource="millicpu"} 0
weft_queue_resource{kind="used",queue="root.q000",resource="memory_bytes"} 0
weft_queue_resource{kind="used",queue="root.q000",resource="millicpu"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "weft_queue_resource", "weft_queue_pending_containers"); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkObserveQueues is what a scheduling cycle spends on the queue
// series, by the number of leaf queues (a real cluster's tree has
// hundreds). A cycle runs up to 25 times a second (allocator.minPause):
//
//	go test ./rmfacade/allocator -run '^$' -bench ObserveQueues
func BenchmarkObserveQueues(b *testing.B) {
	for _, leaves := range []int{20, 500} {
		b.Run(fmt.Sprintf("leaves=%d", leaves), func(b *testing.B) {
			m := newMetrics(prometheus.NewRegistry())
			st, h := queuesWithUsage(b, leaves)
			waiting := map[string]int{}
			for _, p := range h.Leaves() {
				waiting[p] = 1
			}
			b.ReportAllocs()
			for b.Loop() {
				m.observeQueues(st, h, waiting)
			}
		})
	}
}
