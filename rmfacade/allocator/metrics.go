package allocator

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/weft-sh/weft/quota"
	schedstate "github.com/weft-sh/weft/scheduler/state"
)

// metrics are the allocator's Prometheus series: queue usage against
// guarantee and max, what waits, what was granted and preempted, and how
// long a scheduling decision takes.
type metrics struct {
	queueResource *prometheus.GaugeVec
	pending       *prometheus.GaugeVec
	granted       *prometheus.CounterVec
	preempted     *prometheus.CounterVec
	cycle         prometheus.Histogram
	decision      prometheus.Histogram
	bound         *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		queueResource: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "weft", Subsystem: "queue", Name: "resource",
			Help: "A leaf queue's resources by kind: used, releasing (held by preemption victims), pending, guaranteed, max (absent: unbounded)."},
			[]string{"queue", "kind", "resource"}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "weft", Subsystem: "queue", Name: "pending_containers",
			Help: "Containers a leaf queue's applications wait for."}, []string{"queue"}),
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
		reg.MustRegister(m.queueResource, m.pending, m.granted, m.preempted, m.cycle, m.decision, m.bound)
	}
	return m
}

// observeQueues sets the queue gauges from a cycle's store.
func (m *metrics) observeQueues(st *schedstate.Store, h *quota.Hierarchy, pending map[string]int) {
	snap := st.Snapshot()
	set := func(queue, kind string, r quota.Resource) {
		m.queueResource.WithLabelValues(queue, kind, "millicpu").Set(float64(r.MilliCPU))
		m.queueResource.WithLabelValues(queue, kind, "memory_bytes").Set(float64(r.Memory))
	}
	m.queueResource.Reset()
	m.pending.Reset()
	for _, path := range h.Leaves() {
		q, _ := h.Quota(path)
		set(path, "guaranteed", q.Guaranteed)
		if q.Max != nil {
			set(path, "max", *q.Max)
		}
		if row := snap.QueueUsage(path); row != nil {
			set(path, "used", row.Used)
			set(path, "releasing", row.Releasing)
			set(path, "pending", row.Pending)
		}
		m.pending.WithLabelValues(path).Set(float64(pending[path]))
	}
}

func (m *metrics) observeCycle(start time.Time) { m.cycle.Observe(time.Since(start).Seconds()) }
