package colocation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gib = int64(1) << 30

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // a Tuesday

// A node of 8 cores and 32 GiB.
var alloc = Amount{MilliCPU: 8000, Memory: 32 * gib}

func usage(at time.Duration, onlineMilli, onlineMem int64) Usage {
	return Usage{At: t0.Add(at), Online: Amount{MilliCPU: onlineMilli, Memory: onlineMem}, NodeMemory: onlineMem}
}

// Reclaimable is watermark × allocatable − online usage at its recent
// peak: a rise counts at once, a fall only once it has lasted the window.
func TestDecidePeaks(t *testing.T) {
	cfg := DefaultConfig() // 80% CPU, 85% memory, 2m window
	tests := []struct {
		name    string
		samples []Usage
		want    Amount
	}{
		{"quiet node", []Usage{usage(0, 1000, 4*gib)}, Amount{MilliCPU: 5400, Memory: pctOf(32*gib, 85) - 4*gib}},
		{"a burst counts at once", []Usage{usage(0, 1000, 4*gib), usage(time.Second, 6000, 4*gib)}, Amount{MilliCPU: 400, Memory: pctOf(32*gib, 85) - 4*gib}},
		{"a burst within the window still counts", []Usage{usage(0, 6000, 4*gib), usage(90*time.Second, 1000, 4*gib)}, Amount{MilliCPU: 400, Memory: pctOf(32*gib, 85) - 4*gib}},
		{"a burst past the window is forgotten", []Usage{usage(0, 6000, 4*gib), usage(3*time.Minute, 1000, 4*gib)}, Amount{MilliCPU: 5400, Memory: pctOf(32*gib, 85) - 4*gib}},
		{"online above the watermark leaves nothing", []Usage{usage(0, 7000, 30*gib)}, Amount{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Peaks
			for _, s := range tc.samples {
				p.Observe(s, cfg.PeakWindow.Duration)
			}
			last, _ := p.Last()
			d := Decide(cfg, last.At, alloc, &p, time.Time{})
			if d.Box != tc.want || d.Offer != tc.want || d.Why != "" {
				t.Errorf("box %+v offer %+v (%q), want %+v", d.Box, d.Offer, d.Why, tc.want)
			}
		})
	}
	// Fail safe: nothing measured, nothing offered.
	if d := Decide(cfg, t0, alloc, &Peaks{}, time.Time{}); d.Box != (Amount{}) || d.Offer != (Amount{}) {
		t.Errorf("without a measurement: %+v", d)
	}
}

// Windows: colocation off or smaller in set hours, and no new work offered
// during the grace before one starts (running work drains meanwhile).
func TestDecideWindows(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WindowGrace = metav1.Duration{Duration: 10 * time.Minute}
	cfg.Windows = []Window{
		{Start: "19:00", End: "23:00", Percent: 0},                             // every evening: off
		{Days: []string{"Tuesday"}, Start: "13:00", End: "14:00", Percent: 50}, // Tuesdays after lunch: half
		{Days: []string{"Sat", "Sun"}, Start: "22:00", End: "02:00", Percent: 0},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	full := Amount{MilliCPU: 5400, Memory: pctOf(32*gib, 85) - 4*gib}
	half := Amount{MilliCPU: 2700, Memory: full.Memory / 2}
	at := func(day, hhmm string) time.Time {
		t, err := time.Parse("2006-01-02 15:04", day+" "+hhmm)
		if err != nil {
			panic(err)
		}
		return t
	}
	tests := []struct {
		name      string
		now       time.Time
		box, offr Amount
		why       string
	}{
		{"outside every window", at("2026-11-24", "12:00"), full, full, ""},
		{"grace before the evening", at("2026-11-24", "18:55"), full, Amount{}, "window starts within"},
		{"just before the grace", at("2026-11-24", "18:49"), full, full, ""},
		{"in the evening", at("2026-11-24", "20:00"), Amount{}, Amount{}, "batch keeps 0%"},
		{"Tuesday after lunch", at("2026-11-24", "13:30"), half, half, "batch keeps 50%"},
		{"Wednesday after lunch", at("2026-11-25", "13:30"), full, full, ""},
		{"Sunday past midnight, in Saturday's window", at("2026-11-29", "01:00"), Amount{}, Amount{}, "batch keeps 0%"},
		{"Monday past midnight, in Sunday's window", at("2026-11-30", "01:00"), Amount{}, Amount{}, "batch keeps 0%"},
		{"Tuesday past midnight, no Monday window", at("2026-12-01", "01:00"), full, full, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p Peaks
			p.Observe(Usage{At: tc.now, Online: Amount{MilliCPU: 1000, Memory: 4 * gib}, NodeMemory: 4 * gib}, time.Minute)
			d := Decide(cfg, tc.now, alloc, &p, time.Time{})
			if d.Box != tc.box || d.Offer != tc.offr || !strings.Contains(d.Why, tc.why) || (tc.why == "") != (d.Why == "") {
				t.Errorf("box %+v offer %+v why %q; want %+v %+v %q", d.Box, d.Offer, d.Why, tc.box, tc.offr, tc.why)
			}
		})
	}
}

// Memory is taken back by eviction: above the eviction watermark down to
// it, and inside a window whatever batch holds beyond the window's share.
// A cooldown after an eviction offers nothing new. CPU never evicts.
func TestDecideEvictionAndCooldown(t *testing.T) {
	cfg := DefaultConfig() // eviction at 90% of 32 GiB = 28.8 GiB
	var p Peaks
	p.Observe(Usage{At: t0, Online: Amount{MilliCPU: 8000, Memory: 20 * gib}, Batch: Amount{MilliCPU: 4000, Memory: 10 * gib}, NodeMemory: 30 * gib}, time.Minute)
	d := Decide(cfg, t0, alloc, &p, time.Time{})
	if want := 30*gib - pctOf(32*gib, 90); d.EvictMemory != want || !strings.Contains(d.EvictWhy, "memory pressure") {
		t.Errorf("evict %d (%q), want %d for memory pressure", d.EvictMemory, d.EvictWhy, want)
	}
	if d.Box.MilliCPU != 0 {
		t.Errorf("box CPU %d with online above the watermark", d.Box.MilliCPU)
	}

	p = Peaks{}
	p.Observe(Usage{At: t0, Online: Amount{MilliCPU: 8000, Memory: 4 * gib}, Batch: Amount{Memory: 8 * gib}, NodeMemory: 12 * gib}, time.Minute)
	if d := Decide(cfg, t0, alloc, &p, time.Time{}); d.EvictMemory != 0 {
		t.Errorf("CPU pressure evicts %d bytes (%s)", d.EvictMemory, d.EvictWhy)
	}
	cool := Decide(cfg, t0, alloc, &p, t0.Add(time.Minute))
	if cool.Offer != (Amount{}) || cool.Box.Memory == 0 || !strings.Contains(cool.Why, "cooling down") {
		t.Errorf("cooling down: %+v", cool)
	}

	cfg.Windows = []Window{{Start: "11:00", End: "13:00", Percent: 25}}
	d = Decide(cfg, t0, alloc, &p, time.Time{})
	if want := 8*gib - d.Box.Memory; d.EvictMemory != want || !strings.Contains(d.EvictWhy, "window") {
		t.Errorf("window: evict %d (%q), want %d", d.EvictMemory, d.EvictWhy, want)
	}
}

// Hysteresis: small moves are not published, large ones and any move to
// or from nothing are.
func TestHysteresis(t *testing.T) {
	var h Hysteresis
	steps := []struct {
		offer       Amount
		want        Amount
		wantChanged bool
	}{
		{Amount{4000, 16 * gib}, Amount{4000, 16 * gib}, true},
		{Amount{4300, 16 * gib}, Amount{4000, 16 * gib}, false}, // 300m < 5% of 8000m
		{Amount{3700, 17 * gib}, Amount{4000, 16 * gib}, false}, // 1 GiB < 5% of 32 GiB
		{Amount{4500, 16 * gib}, Amount{4500, 16 * gib}, true},  // 500m > 400m
		{Amount{4500, 18 * gib}, Amount{4500, 18 * gib}, true},
		{Amount{0, 18 * gib}, Amount{0, 18 * gib}, true}, // to nothing: at once
		{Amount{100, 18 * gib}, Amount{100, 18 * gib}, true},
	}
	for i, s := range steps {
		got, changed := h.Next(s.offer, alloc, 5)
		if got != s.want || changed != s.wantChanged {
			t.Errorf("step %d: %+v changed=%v, want %+v %v", i, got, changed, s.want, s.wantChanged)
		}
	}
	h.Reset()
	if _, changed := h.Next(Amount{100, 18 * gib}, alloc, 5); !changed {
		t.Error("after Reset the same offer is not published again")
	}
}

// A watermark over 100%, an eviction watermark below the safe one, a
// malformed window, an unknown field: each a clear error naming it.
func TestConfigValidation(t *testing.T) {
	tests := []struct {
		yaml, wantErr string
	}{
		{"cpuWatermarkPercent: 70\nwindows: [{start: '22:00', end: '06:00', percent: 50}]", ""},
		{"cpuWatermarkPercent: 120", "cpuWatermarkPercent 120% is not in (0, 100]"},
		{"memoryEvictionWatermarkPercent: 80", "below memoryWatermarkPercent 85%"},
		{"windows: [{start: '25:00', end: '06:00'}]", `time "25:00" is not HH:MM`},
		{"windows: [{days: [Funday], start: '01:00', end: '02:00'}]", `day "Funday" is not a weekday`},
		{"cpuWatermark: 70", "unknown field"},
		{"interval: 10ms", "interval 10ms is below 100ms"},
	}
	for _, tc := range tests {
		got, err := DefaultConfig().Merge(tc.yaml)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.wantErr)
		case tc.wantErr == "" && (got.CPUWatermark != 70 || got.MemoryWatermark != 85):
			t.Errorf("%q: merged %+v", tc.yaml, got)
		}
	}
}

func pctOf(x int64, pct float64) int64 { return int64(float64(x) * pct / 100) }

// A node lent whole (Offline in the tide) offers all its CPU less what its
// daemons use, and its memory up to the eviction watermark.
func TestDecideLentWhole(t *testing.T) {
	cfg := DefaultConfig().LentWhole()
	var p Peaks
	p.Observe(usage(0, 500, 2*gib), cfg.PeakWindow.Duration)
	d := Decide(cfg, t0, alloc, &p, time.Time{})
	want := Amount{MilliCPU: 7500, Memory: pctOf(32*gib, 90) - 2*gib}
	if d.Box != want || d.EvictMemory != 0 {
		t.Errorf("lent whole: box %+v evict %d, want %+v and nothing evicted", d.Box, d.EvictMemory, want)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("lent whole config invalid: %v", err)
	}
}
