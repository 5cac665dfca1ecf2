package sim

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// Ground truth is the same scenario, shrunk, run for
// real through weft-rm, weft-tide and the node agent, with the
// simulation's utilization and kill rate within 15% of the real run's.
// test/bench/groundtruth runs it on kwokfleet: its scenario is this
// package's Scenario shrunk with WithNodes, so that the simulation side is
// Run on the very same input, and the real run reports a Result with the
// measures Compare reads (CPUAvg and MemAvg by Summarize over samples
// measured the simulation's way, TaskAttempts and TasksKilled from its
// AMs). This package imports neither test/ nor a Kubernetes client for
// it.

// Tolerance is how far the simulation may be from the real run, relative
// to the real run's value.
const Tolerance = 0.15

// Measure is one number both runs report.
type Measure struct {
	Name      string
	Sim, Real float64
	// Info marks a row printed to explain the others (a kill rate by
	// cause), not checked against Tolerance.
	Info bool
}

// Ratio is Sim/Real (1 when both are zero, +Inf when only Real is).
func (m Measure) Ratio() float64 {
	switch {
	case m.Real == 0 && m.Sim == 0:
		return 1
	case m.Real == 0:
		return math.Inf(1)
	}
	return m.Sim / m.Real
}

// Within reports whether the simulation is within Tolerance of the real
// run.
func (m Measure) Within() bool { return math.Abs(m.Ratio()-1) <= Tolerance }

// Compare lines up the measures the ground truth checks: average CPU and
// memory utilization and the task kill rate.
func Compare(sim, real *Result) []Measure {
	return []Measure{
		{Name: "CPU avg %", Sim: sim.CPUAvg, Real: real.CPUAvg},
		{Name: "memory avg %", Sim: sim.MemAvg, Real: real.MemAvg},
		{Name: "kill rate %", Sim: sim.KillRate(), Real: real.KillRate()},
	}
}

// KillCauses are the causes the comparison breaks the kill rate into, in
// its order.
var KillCauses = []string{KillTide, KillPreemption, KillEviction, KillPodLost, KillAborted, KillRejected, KillOther}

// CompareKills breaks both runs' kill rates down by cause: each row is the
// tasks killed for it over all task attempts, in percent, so that the rows
// sum to the kill rate. They are Info rows: the total is what is checked.
func CompareKills(sim, real *Result) []Measure {
	rate := func(r *Result, cause string) float64 {
		if r.TaskAttempts == 0 {
			return 0
		}
		return 100 * float64(r.TasksKilledBy[cause]) / float64(r.TaskAttempts)
	}
	var out []Measure
	for _, c := range KillCauses {
		out = append(out, Measure{Name: "  killed: " + c + " %", Sim: rate(sim, c), Real: rate(real, c), Info: true})
	}
	return out
}

// WriteComparison prints both runs' numbers, their ratio and whether it
// is within Tolerance; it returns how many are not. Info rows print their
// ratio but are not checked.
func WriteComparison(w io.Writer, ms []Measure) (int, error) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "measure\tsimulated\treal\tratio\twithin 15%\t")
	off := 0
	for _, m := range ms {
		ok := "yes"
		switch {
		case m.Info:
			ok = "-"
		case !m.Within():
			ok, off = "NO", off+1
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.3f\t%s\t\n", m.Name, m.Sim, m.Real, m.Ratio(), ok)
	}
	return off, tw.Flush()
}
