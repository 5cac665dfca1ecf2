package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// row is one line of the table: its value for a result, and whether a
// larger value is better (for the ratio's direction).
type row struct {
	name   string
	value  func(*result) (float64, bool) // false: not measured
	format func(float64) string
	higher bool
	// target, when set, is Weft's bound on today's value.
	target func(float64) (string, bool)
}

func printTable(o options, results []*result) {
	rows := []row{
		{name: "setup: AMs submitted and registered", value: dur(func(r *result) time.Duration { return r.setup }), format: secs},
		{name: fmt.Sprintf("fill: %d containers granted", o.apps*o.containers), value: dur(func(r *result) time.Duration { return r.fill }), format: secs},
		{name: "scheduling decisions/s (view + decide + checked plan)", higher: true, value: func(r *result) (float64, bool) {
			return r.granted / r.decisionTime.Seconds(), r.decisionTime > 0
		}, format: rate},
		{name: "  of it deciding + checked plan (view built apart)", higher: true, value: func(r *result) (float64, bool) {
			return float64(r.cycleLog.count) / r.cycleLog.decide.Seconds(), r.cycleLog.decide > 0
		}, format: rate},
		{name: "scheduler core in memory: decide + checked plan", higher: true, value: func(r *result) (float64, bool) { return r.core, r.core > 0 },
			format: rate, target: func(v float64) (string, bool) { return "≥ 100,000/s", v >= 100000 }},
		{name: "  time building the scheduler's view", value: func(r *result) (float64, bool) { return r.cycleLog.build.Seconds(), r.cycleLog.count > 0 },
			format: secs},
		{name: "scheduling cycles during the fill", value: func(r *result) (float64, bool) { return r.cycles, r.fill > 0 },
			format: func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		{name: "allocate p50", value: pct(50), format: msf},
		{name: "allocate p99", value: pct(99), format: msf, target: func(v float64) (string, bool) { return "≤ 5 ms", v <= 5 }},
		{name: "allocate max", value: pct(100), format: msf},
		{name: "heartbeats/s (all AMs)", higher: true, value: func(r *result) (float64, bool) { return r.callRate, r.callRate > 0 }, format: rate},
		{name: "ask→grant p50, heartbeating AM", value: durs(func(r *result) []time.Duration { return r.askToGrant }, 50), format: msf},
		{name: "ask→grant p99, heartbeating AM", value: durs(func(r *result) []time.Duration { return r.askToGrant }, 99), format: msf},
		{name: "ask→grant p50, AM polling every 10 ms", value: durs(func(r *result) []time.Duration { return r.askToGrantPolled }, 50), format: msf},
		{name: "ask→grant p99, AM polling every 10 ms", value: durs(func(r *result) []time.Duration { return r.askToGrantPolled }, 99), format: msf},
		{name: "weft-rm RSS, max while steady", value: func(r *result) (float64, bool) { return mib(r.rssSteady), r.rssSteady > 0 },
			format: mibf, target: func(v float64) (string, bool) { return "≤ 500 MiB", v <= 500 }},
		{name: "weft-rm RSS, max over the run", value: func(r *result) (float64, bool) { return mib(r.rssMax), r.rssMax > 0 }, format: mibf},
		{name: "weft-rm CPU while steady (cores)", value: func(r *result) (float64, bool) { return r.cpu, r.cpu > 0 },
			format: func(v float64) string { return fmt.Sprintf("%.2f", v) }},
	}
	fmt.Printf("\n%d nodes, %d applications in %d queues holding %d containers, AMs heartbeating every %s for %s\n\n",
		o.nodes, o.apps, o.queues, o.apps*o.containers, o.heartbeat, o.steady)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	// A column per run; the baseline's is followed by today's gain over
	// it, and the target column judges every run but the baseline.
	head := []string{""}
	for _, res := range results {
		head = append(head, res.label)
		if res.baseline {
			head = append(head, "gain (today vs baseline)")
		}
	}
	head = append(head, "target")
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, r := range rows {
		cells := []string{r.name}
		today, okToday := r.value(results[0])
		var verdicts []string
		bound := ""
		for _, res := range results {
			v, ok := r.value(res)
			cells = append(cells, cell(r, v, ok))
			if res.baseline {
				cells = append(cells, ratio(r, today, v, okToday && ok))
				continue
			}
			if r.target != nil && ok {
				b, met := r.target(v)
				bound = b
				verdicts = append(verdicts, map[bool]string{true: "met", false: "NOT met"}[met])
			}
		}
		verdict := ""
		if len(verdicts) > 0 {
			verdict = bound + ": " + strings.Join(verdicts, ", ")
		}
		cells = append(cells, verdict)
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	w.Flush()
	for _, r := range results {
		if r.reached != "" {
			fmt.Printf("\n%s did not carry the load: %s\n", r.label, r.reached)
		}
	}
}

func cell(r row, v float64, ok bool) string {
	if !ok {
		return "—"
	}
	return r.format(v)
}

// ratio says how many times better today is: baseline/today for times
// and sizes, today/baseline for rates.
func ratio(r row, today, base float64, ok bool) string {
	if !ok || today == 0 || base == 0 {
		return "—"
	}
	x := base / today
	if r.higher {
		x = today / base
	}
	return fmt.Sprintf("%.2f×", x)
}

func dur(f func(*result) time.Duration) func(*result) (float64, bool) {
	return func(r *result) (float64, bool) { d := f(r); return d.Seconds(), d > 0 }
}

func pct(p float64) func(*result) (float64, bool) {
	return durs(func(r *result) []time.Duration { return r.latencies }, p)
}

func durs(f func(*result) []time.Duration, p float64) func(*result) (float64, bool) {
	return func(r *result) (float64, bool) {
		ds := f(r)
		return float64(percentile(ds, p)) / float64(time.Millisecond), len(ds) > 0
	}
}

func secs(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.2f s", v)
	}
	return fmt.Sprintf("%.1f s", v)
}
func msf(v float64) string  { return fmt.Sprintf("%.2f ms", v) }
func mibf(v float64) string { return fmt.Sprintf("%.0f MiB", v) }
func rate(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 1000:
		return fmt.Sprintf("%.1fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func ms(d time.Duration) string { return msf(float64(d) / float64(time.Millisecond)) }
