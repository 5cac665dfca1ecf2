package deploy

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/scheduler/tide"
)

// recorder is a prometheus.Registerer that keeps the name and label names
// of every metric registered with it.
type recorder map[string][]string

var descRE = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

func (r recorder) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 16)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			continue
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		r[m[1]] = labels
	}
	return nil
}

func (r recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		r.Register(c)
	}
}

func (r recorder) Unregister(prometheus.Collector) bool { return false }

// weftMetrics are the metrics weft-rm's allocator, the node plugin's
// colocation agent and the tidal controller register, by name, with
// their label names.
func weftMetrics(t *testing.T) recorder {
	t.Helper()
	r := recorder{}
	allocator.New(nil, allocator.Options{Metrics: r})
	if err := colocation.NewMetrics().Register(r); err != nil {
		t.Fatal(err)
	}
	r.MustRegister(tide.Collectors()...)
	return r
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	GridPos struct{ H, W, X, Y int } `json:"gridPos"`
}

var (
	metricRE   = regexp.MustCompile(`\b(weft_[a-z_]+)(\{[^}]*\})?`)
	matcherRE  = regexp.MustCompile(`([a-z_]+)\s*(=~|!~|!=|=)`)
	groupingRE = regexp.MustCompile(`\bby \(([^)]*)\)`)
)

// TestDashboardQueriesWeftsMetrics keeps deploy/monitoring/weft-dashboard.json in step
// with the code: every query names metrics Weft registers and labels they
// have (or Prometheus adds: instance, job; le on histogram buckets), every
// metric Weft registers is on the dashboard, and panels have unique ids and
// fit Grafana's 24-column grid.
func TestDashboardQueriesWeftsMetrics(t *testing.T) {
	b, err := os.ReadFile("monitoring/weft-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string  `json:"title"`
		UID    string  `json:"uid"`
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard title %q, uid %q: both needed for provisioning", d.Title, d.UID)
	}
	known := weftMetrics(t)
	if len(known) < 20 {
		t.Fatalf("only %d metrics recorded from the code: %v", len(known), known)
	}
	used := map[string]bool{}
	ids := map[int]string{}
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	for _, p := range all {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside Grafana's 24 columns", p.Title, p.GridPos)
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			var labels []string // of the metrics the query names
			for _, m := range metricRE.FindAllStringSubmatch(tg.Expr, -1) {
				name := m[1]
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
				have, ok := known[base]
				if !ok {
					t.Errorf("panel %q: %s is not a metric Weft registers", p.Title, name)
					continue
				}
				used[base] = true
				have = append(slices.Clone(have), "instance", "job")
				if base != name {
					have = append(have, "le")
				}
				labels = append(labels, have...)
				for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
					if !slices.Contains(have, mm[1]) {
						t.Errorf("panel %q: %s has no label %q (it has %v)", p.Title, base, mm[1], known[base])
					}
				}
			}
			for _, g := range groupingRE.FindAllStringSubmatch(tg.Expr, -1) {
				for _, l := range strings.Split(g[1], ",") {
					if l = strings.TrimSpace(l); !slices.Contains(labels, l) {
						t.Errorf("panel %q: grouping by %q, a label none of its metrics has: %s", p.Title, l, tg.Expr)
					}
				}
			}
		}
	}
	for name := range known {
		if !used[name] {
			t.Errorf("%s is registered but on no panel of the dashboard", name)
		}
	}
}

// TestMonitorsSelectWeftsPods checks deploy/monitoring's ServiceMonitor
// and PodMonitors against the base: each selects a Service or pod template
// of the base by its labels and scrapes a port it names.
func TestMonitorsSelectWeftsPods(t *testing.T) {
	base := objects(t, "base/*.yaml")
	matches := func(sel map[string]any, labels map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	for _, m := range objects(t, "monitoring/*.yaml") {
		sel, _, _ := unstructured.NestedMap(m.Object, "spec", "selector", "matchLabels")
		var ports []string // the monitor's
		var have []string  // the selected object's port names
		found := false
		switch m.GetKind() {
		case "ServiceMonitor":
			eps, _, _ := unstructured.NestedSlice(m.Object, "spec", "endpoints")
			for _, e := range eps {
				ports = append(ports, e.(map[string]any)["port"].(string))
			}
			for _, o := range base {
				if o.GetKind() == "Service" && matches(sel, o.GetLabels()) {
					found = true
					sp, _, _ := unstructured.NestedSlice(o.Object, "spec", "ports")
					for _, p := range sp {
						have = append(have, p.(map[string]any)["name"].(string))
					}
				}
			}
		case "PodMonitor":
			eps, _, _ := unstructured.NestedSlice(m.Object, "spec", "podMetricsEndpoints")
			for _, e := range eps {
				ports = append(ports, e.(map[string]any)["port"].(string))
			}
			for _, o := range base {
				labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
				if (o.GetKind() == "Deployment" || o.GetKind() == "DaemonSet") && matches(sel, labels) {
					found = true
					cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
					for _, c := range cs {
						cp, _, _ := unstructured.NestedSlice(c.(map[string]any), "ports")
						for _, p := range cp {
							have = append(have, p.(map[string]any)["name"].(string))
						}
					}
				}
			}
		default:
			continue
		}
		if !found {
			t.Errorf("%s %s selects nothing of the base (%v)", m.GetKind(), m.GetName(), sel)
		}
		for _, p := range ports {
			if !slices.Contains(have, p) {
				t.Errorf("%s %s scrapes port %q; the selected ports are %v", m.GetKind(), m.GetName(), p, have)
			}
		}
	}
}
