package tide

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The controller's metrics, served with controller-runtime's own on the
// manager's metrics endpoint. The kill rate of taking nodes back is
// weft_tide_batch_pods_total{outcome="killed"} over the sum of both
// outcomes.
var (
	nodesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "weft_tide_nodes",
		Help: "Nodes of a TidePool per tide state.",
	}, []string{"pool", "state"})
	transitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "weft_tide_transition_duration_seconds",
		Help: "How long a node spent in an intermediate state before its move completed (to Offline or Online) or was rolled back.",
		// 1 s to about 70 min: a notice of 10 minutes and a drain held
		// by PodDisruptionBudgets both fit.
		Buckets: prometheus.ExponentialBuckets(1, 2, 13),
	}, []string{"pool", "from", "to"})
	transitionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weft_tide_transitions_total",
		Help: "Node transitions started or completed, by target state and reason.",
	}, []string{"pool", "to", "reason"})
	batchPodsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "weft_tide_batch_pods_total",
		Help: "Batch pods on nodes taken back: saved (ended within the notice) or killed (evicted at its deadline).",
	}, []string{"pool", "outcome"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the controller's metrics, for what reads them by name
// (deploy's dashboard is checked against them).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{nodesGauge, transitionSeconds, transitionsTotal, batchPodsTotal}
}

// forgetPool drops a deleted pool's series.
func forgetPool(pool string) {
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{nodesGauge, transitionSeconds, transitionsTotal, batchPodsTotal} {
		v.DeletePartialMatch(prometheus.Labels{"pool": pool})
	}
}
