package main

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

func TestMedianInterval(t *testing.T) {
	// count returns 1..n, shuffled the same way every time.
	count := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64((i*7)%n + 1)
		}
		return v
	}
	for _, tc := range []struct {
		n      int
		lo, hi float64
	}{
		{n: 5},               // P(all above the median) = 1/32 > 2.5%: no interval
		{n: 6, lo: 1, hi: 6}, // 1/64 ≤ 2.5% < 7/64: the extremes
		{n: 9, lo: 2, hi: 8}, // P(X≤1) = 10/512 ≤ 2.5% < P(X≤2) = 46/512
		{n: 16, lo: 4, hi: 13},
		{n: 30, lo: 10, hi: 21}, // P(X≤9) ≈ 2.1% ≤ 2.5% < P(X≤10) ≈ 4.9%
	} {
		v := count(tc.n)
		before := slices.Clone(v)
		lo, hi := medianInterval(v)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("n=%d: interval %v–%v, want %v–%v", tc.n, lo, hi, tc.lo, tc.hi)
		}
		if !slices.Equal(v, before) {
			t.Errorf("n=%d: the samples were reordered", tc.n)
		}
	}
}

func TestMiddle(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{in: nil, want: 0},
		{in: []float64{3}, want: 3},
		{in: []float64{0.5, 1}, want: 0.75},
		{in: []float64{5, 1, 3}, want: 3},
		{in: []float64{4, 1, 3, 2}, want: 2.5},
	} {
		if got := middle(slices.Clone(tc.in)); got != tc.want {
			t.Errorf("middle(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestEnvList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: ""},
		{in: " GOMAXPROCS=1  GOGC=200 ", want: []string{"GOMAXPROCS=1", "GOGC=200"}},
		{in: "GODEBUG=gctrace=1", want: []string{"GODEBUG=gctrace=1"}},
		{in: "GOMAXPROCS", wantErr: true},
		{in: "=1", wantErr: true},
	} {
		got, err := envList(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("envList(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestIntervalText(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		digits int
		want   string
	}{
		{0.927, 1.037, 1, " (95% interval 92.7–103.7%)"},
		{0.86, 0.98, 0, " (95% interval 86–98%)"},
		{0, 0, 0, ""}, // too few rounds
	} {
		if got := intervalText(tc.lo, tc.hi, tc.digits); got != tc.want {
			t.Errorf("intervalText(%v, %v, %d) = %q, want %q", tc.lo, tc.hi, tc.digits, got, tc.want)
		}
	}
}

func TestAccountPerCPU(t *testing.T) {
	// Two readings 1 s apart: CPU 0 busy throughout, CPU 1 a quarter
	// (procstat reads them; TestCPUs there).
	cpu := func(busy, total time.Duration) procstat.CPUTimes { return procstat.CPUTimes{Busy: busy, Total: total} }
	s := time.Second
	b := account{machine: cpu(15*s, 100*s), cpus: map[int]procstat.CPUTimes{0: cpu(9*s, 50*s), 1: cpu(6*s, 50*s)}}
	a := account{machine: cpu(s*65/4, 102*s), cpus: map[int]procstat.CPUTimes{0: cpu(10*s, 51*s), 1: cpu(s*25/4, 51*s)}}
	want := "machine 62% busy (1.25s of 2.00s, " + strconv.Itoa(runtime.NumCPU()) + " CPUs; CPU 0 100%; CPU 1 25%)"
	if got := a.since(b); got != want {
		t.Errorf("since: %q, want %q", got, want)
	}
}
