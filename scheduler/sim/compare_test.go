package sim

import (
	"bytes"
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
