package colocation

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the agent's, on the node plugin's /metrics.
type Metrics struct {
	Reclaimable, Offered, Online, Batch *prometheus.GaugeVec
	BoxCPUQuota, BoxMemoryLimit, Blind  prometheus.Gauge
	Evictions, Errors                   *prometheus.CounterVec
}

// NewMetrics makes the agent's metrics; Register adds them to a registry.
func NewMetrics() *Metrics {
	byResource := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help + " (cpu in millicores, memory in bytes)."}, []string{"resource"})
	}
	return &Metrics{
		Reclaimable: byResource("weft_colocation_reclaimable", "What batch work may use on the node now: the big box's bounds"),
		Offered:     byResource("weft_colocation_offered", "What the node offers new batch work, as published on the Node"),
		Online:      byResource("weft_colocation_online_usage", "What online work (everything but batch pods) uses on the node"),
		Batch:       byResource("weft_colocation_batch_usage", "What batch pods use on the node"),
		BoxCPUQuota: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weft_colocation_box_cpu_quota_millicores",
			Help: "The big box's CFS quota, in millicores."}),
		BoxMemoryLimit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weft_colocation_box_memory_limit_bytes",
			Help: "The big box's memory limit."}),
		Blind: prometheus.NewGauge(prometheus.GaugeOpts{Name: "weft_colocation_blind",
			Help: "1 while the agent cannot measure, read its configuration or write cgroups, and so offers nothing."}),
		Evictions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weft_colocation_evictions_total",
			Help: "Batch pods evicted by the agent, by reason (memory, window) and tier."}, []string{"reason", "tier"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "weft_colocation_errors_total",
			Help: "Problems of the agent, by kind."}, []string{"reason"}),
	}
}

// Register adds the metrics to r.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.Reclaimable, m.Offered, m.Online, m.Batch, m.BoxCPUQuota, m.BoxMemoryLimit, m.Blind, m.Evictions, m.Errors} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) observe(u Usage, d Decision, l Limits) {
	m.Blind.Set(0)
	for _, x := range []struct {
		v   *prometheus.GaugeVec
		amt Amount
	}{{m.Reclaimable, d.Box}, {m.Online, u.Online}, {m.Batch, u.Batch}} {
		x.v.WithLabelValues("cpu").Set(float64(x.amt.MilliCPU))
		x.v.WithLabelValues("memory").Set(float64(x.amt.Memory))
	}
	m.BoxCPUQuota.Set(float64(l.CPUQuota) / float64(l.Period) * 1000)
	m.BoxMemoryLimit.Set(float64(l.Memory))
}
