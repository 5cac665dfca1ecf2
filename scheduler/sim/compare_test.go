package sim

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestCompare(t *testing.T) {
	simulated := &Result{CPUAvg: 66, MemAvg: 60, TaskAttempts: 1000, TasksKilled: 5}
	real := &Result{CPUAvg: 60, MemAvg: 50, TaskAttempts: 2000, TasksKilled: 10}
	var b bytes.Buffer
	off, err := WriteComparison(&b, Compare(simulated, real))
	if err != nil {
		t.Fatal(err)
	}
	// CPU 1.10 is within 15%, memory 1.20 is not, the kill rates (0.5%
	// each) are equal.
	if off != 1 {
		t.Errorf("%d measures off, want 1:\n%s", off, b.String())
	}
	for _, line := range strings.Split(b.String(), "\n")[1:] {
		if line == "" {
			continue
		}
		want := "yes"
		if strings.Contains(line, "memory") {
			want = "NO"
		}
		if !strings.HasSuffix(strings.TrimSpace(line), want) {
			t.Errorf("line %q does not end in %s", line, want)
		}
	}
	if m := (Measure{Sim: 0, Real: 0}); !m.Within() {
		t.Error("nothing killed in both runs is not within")
	}
	if m := (Measure{Sim: 1, Real: 0}); m.Within() {
		t.Error("kills in the simulation only are within")
	}
}

func TestCompareKills(t *testing.T) {
	simulated := &Result{TaskAttempts: 1000, TasksKilled: 3, TasksKilledBy: map[string]int{KillTide: 2, KillEviction: 1}}
	real := &Result{TaskAttempts: 2000, TasksKilled: 14, TasksKilledBy: map[string]int{KillTide: 4, KillPreemption: 6, KillPodLost: 2, KillRejected: 2}}
	ms := CompareKills(simulated, real)
	want := map[string][2]float64{KillTide: {0.2, 0.2}, KillPreemption: {0, 0.3}, KillEviction: {0.1, 0}, KillPodLost: {0, 0.1}, KillAborted: {0, 0},
		KillRejected: {0, 0.1}, KillOther: {0, 0}}
	if len(ms) != len(want) {
		t.Fatalf("%d rows, want %d", len(ms), len(want))
	}
	var simSum, realSum float64
	for i, m := range ms {
		w := want[KillCauses[i]]
		if !strings.Contains(m.Name, KillCauses[i]) || math.Abs(m.Sim-w[0]) > 1e-9 || math.Abs(m.Real-w[1]) > 1e-9 || !m.Info {
			t.Errorf("row %d %+v, want %s at %v, an Info row", i, m, KillCauses[i], w)
		}
		simSum, realSum = simSum+m.Sim, realSum+m.Real
	}
	if math.Abs(simSum-simulated.KillRate()) > 1e-9 || math.Abs(realSum-real.KillRate()) > 1e-9 {
		t.Errorf("rows sum to %g and %g, want the kill rates %g and %g", simSum, realSum, simulated.KillRate(), real.KillRate())
	}
	// Info rows are printed, not checked: a preemption row of 0 vs 0.3
	// is not counted off.
	var b bytes.Buffer
	off, err := WriteComparison(&b, append(Compare(simulated, real), ms...))
	if err != nil {
		t.Fatal(err)
	}
	// Only the kill rate (0.3 vs 0.6) is off; CPU and memory are both 0.
	if off != 1 {
		t.Errorf("%d measures off, want 1 (the kill rate):\n%s", off, b.String())
	}
	if !strings.Contains(b.String(), "killed: preemption") {
		t.Errorf("no preemption row:\n%s", b.String())
	}
}
