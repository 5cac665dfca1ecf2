package sim

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The committed day is the default scenario, spelled out: what make sim
// runs is what DefaultScenario says.
func TestDayYAMLIsTheDefault(t *testing.T) {
	s, err := LoadScenario("testdata/day.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Compared as YAML: time zones and empty lists spell alike there.
	got, _ := yaml.Marshal(s)
	want, _ := yaml.Marshal(DefaultScenario(5000))
	if string(got) != string(want) {
		t.Errorf("testdata/day.yaml differs from DefaultScenario(5000):\n%s\nwant\n%s", got, want)
	}
}

func TestParseScenarioErrors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"cluster: {nodes: 10}\nbogus: 1", "unknown field"},
		{"batch:\n  queues: [{name: a, guaranteePercent: 5}]\n  mixes: [{name: m, queue: b}]", `queue "b" is not one of`},
		{"online: {peakHour: 4, troughHour: 4}", "peakHour and troughHour"},
		{"policies: [sometimes]", `policy "sometimes"`},
		{"colocation: {cpuWatermarkPercent: 120}", "cpuWatermarkPercent"},
	}
	for _, tc := range tests {
		if _, err := ParseScenario([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.yaml, err, tc.want)
		}
	}
}
