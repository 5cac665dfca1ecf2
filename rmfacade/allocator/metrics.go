package allocator

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weft-sh/weft/quota"
	schedstate "github.com/weft-sh/weft/scheduler/state"
)

// metrics are the allocator's Prometheus series: queue usage against
// guarantee and max, what waits, what was granted and preempted, and how
// long a scheduling decision takes.
type metrics struct {
	queues    *queueGauges
	granted   *prometheus.CounterVec
	preempted *prometheus.CounterVec
	cycle     prometheus.Histogram
	decision  prometheus.Histogram
	bound     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		queues: &queueGauges{
			resource: prometheus.NewDesc(prometheus.BuildFQName("weft", "queue", "resource"),
				"A leaf queue's resources by kind: used, releasing (held by preemption victims), pending, guaranteed, max (absent: unbounded).",
				[]string{"queue", "kind", "resource"}, nil),
			pending: prometheus.NewDesc(prometheus.BuildFQName("weft", "queue", "pending_containers"),
				"Containers a leaf queue's applications wait for.", []string{"queue"}, nil),
		},
		granted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "weft", Name: "containers_granted_total",
			Help: "Containers granted to ApplicationMasters, by tier."}, []string{"tier"}),
		preempted: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "weft", Name: "preemptions_total",
			Help: "Containers chosen as preemption victims, by the victim's tier and queue."}, []string{"tier", "queue"}),
		cycle: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "weft", Name: "scheduling_cycle_seconds",
			Help: "Time of one allocation cycle: building the view, deciding, applying the plan, granting and binding.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		decision: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "weft", Name: "scheduling_decision_seconds",
			Help: "Time from a cycle's start to its plan applied: building the view and deciding, before grants and bindings.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		bound: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "weft", Name: "pod_bindings_total",
			Help: "Pods Weft's scheduler bound through the API server, by result (bound, failed)."}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.queues, m.granted, m.preempted, m.cycle, m.decision, m.bound)
	}
	return m
}

// observeQueues keeps a cycle's queue numbers for the scrapes until the
// next cycle: each leaf's guarantee and max from the hierarchy, what its
// applications use, release and ask for from the scheduler's store, and
// its waiting containers.
func (m *metrics) observeQueues(st *schedstate.Store, h *quota.Hierarchy, pending map[string]int) {
	snap := st.Snapshot()
	leaves := h.Leaves()
	out := make([]leafNumbers, len(leaves))
	for i, path := range leaves {
		l := &out[i]
		l.path, l.pending = path, pending[path]
		q, _ := h.Quota(path)
		l.kinds[kindGuaranteed] = amounts(q.Guaranteed)
		if q.Max != nil {
			l.kinds[kindMax] = amounts(*q.Max)
		}
		if row := snap.QueueUsage(path); row != nil {
			l.kinds[kindUsed] = amounts(row.Used)
			l.kinds[kindReleasing] = amounts(row.Releasing)
			l.kinds[kindPending] = amounts(row.Pending)
		}
	}
	m.queues.mu.Lock()
	m.queues.last = out
	m.queues.mu.Unlock()
}

// queueGauges serves weft_queue_resource and weft_queue_pending_containers
// from the last cycle's numbers, made into series only when scraped (a
// prometheus.Collector, as kube-state-metrics serves objects' state). A
// cycle copies each leaf's numbers; setting GaugeVecs instead would have
// every cycle Reset them and look up each of a leaf's 11 series by its
// labels again — 0.13 ms and 2,700 allocations a cycle at 20 leaves,
// 3.3 ms and 67,000 at 500 (BenchmarkObserveQueues) — and a scrape
// between the Reset and the sets would see no queue at all.
type queueGauges struct {
	resource, pending *prometheus.Desc

	mu   sync.Mutex
	last []leafNumbers
}

var _ prometheus.Collector = (*queueGauges)(nil)

// leafNumbers are one leaf queue's numbers of a cycle.
type leafNumbers struct {
	path    string
	kinds   [numKinds]kindAmounts
	pending int
}

// kindAmounts is a kind's CPU and memory, when the queue has that kind.
type kindAmounts struct {
	set         bool
	milliCPU    int64
	memoryBytes int64
}

func amounts(r quota.Resource) kindAmounts {
	return kindAmounts{set: true, milliCPU: r.MilliCPU, memoryBytes: r.Memory}
}

// The kinds of a queue's resources, as the kind label names them.
const (
	kindUsed = iota
	kindReleasing
	kindPending
	kindGuaranteed
	kindMax
	numKinds
)

var kindNames = [numKinds]string{"used", "releasing", "pending", "guaranteed", "max"}

func (g *queueGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.resource
	ch <- g.pending
}

func (g *queueGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	last := g.last // never written in place: a cycle replaces it whole
	g.mu.Unlock()
	for _, l := range last {
		for k, a := range l.kinds {
			if !a.set {
				continue
			}
			ch <- prometheus.MustNewConstMetric(g.resource, prometheus.GaugeValue, float64(a.milliCPU), l.path, kindNames[k], "millicpu")
			ch <- prometheus.MustNewConstMetric(g.resource, prometheus.GaugeValue, float64(a.memoryBytes), l.path, kindNames[k], "memory_bytes")
		}
		ch <- prometheus.MustNewConstMetric(g.pending, prometheus.GaugeValue, float64(l.pending), l.path)
	}
}

func (m *metrics) observeCycle(start time.Time) { m.cycle.Observe(time.Since(start).Seconds()) }
