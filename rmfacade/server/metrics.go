package server

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// firstWins gathers from each gatherer in turn and leaves out a metric
// family an earlier one gave. controller-runtime's registry carries its
// own Go and process collectors, as the RM's does: gathered together with
// prometheus.Gatherers, those families collide and every scrape of
// /metrics fails ("collected before with the same name and label
// values"), so Prometheus would see nothing of the RM at all.
type firstWins []prometheus.Gatherer

// Gather implements prometheus.Gatherer.
func (g firstWins) Gather() ([]*dto.MetricFamily, error) {
	seen := map[string]bool{}
	var out []*dto.MetricFamily
	for _, gatherer := range g {
		families, err := gatherer.Gather()
		if err != nil {
			return nil, err
		}
		for _, mf := range families {
			if seen[mf.GetName()] {
				continue
			}
			seen[mf.GetName()] = true
			out = append(out, mf)
		}
	}
	slices.SortFunc(out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out, nil
}
