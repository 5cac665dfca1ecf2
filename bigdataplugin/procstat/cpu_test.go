package procstat

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// statRest is what follows the cpu lines in a real /proc/stat (Linux 6.x,
// two CPUs), so the parser is shown the whole file and not only its head.
const statRest = `intr 735363 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 9 0 0 0 0 110 35 0 21 1 60157 0 4408 3922
ctxt 1176484
btime 1767225600
processes 10443
procs_running 2
procs_blocked 0
softirq 1046235 2 186539 1 31205 0 0 12083 432311 0 384094
`

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCPU(t *testing.T) {
	cases := []struct {
		name        string
		stat        string // "" leaves /proc/stat out
		busy, total time.Duration
		wantErr     string
	}{
		{
			name: "real 6.x line",
			stat: "cpu  42859 0 7334 58997 518 0 169 284 0 0\ncpu0 20454 0 3381 31017 33 0 59 138 0 0\ncpu1 22405 0 3953 27979 484 0 110 146 0 0\n" + statRest,
			// user+nice+system+irq+softirq+steal = 42859+7334+169+284
			busy: 50646 * 10 * time.Millisecond,
			// + idle + iowait
			total: (50646 + 58997 + 518) * 10 * time.Millisecond,
		},
		{
			name:  "guest time is already in user and nice",
			stat:  "cpu  100 20 30 400 5 6 7 8 90 10\ncpu0 100 20 30 400 5 6 7 8 90 10\n" + statRest,
			busy:  (100 + 20 + 30 + 6 + 7 + 8) * 10 * time.Millisecond,
			total: (171 + 400 + 5) * 10 * time.Millisecond,
		},
		{
			name:  "2.6.11 kernel without guest fields",
			stat:  "cpu  1 2 3 4 5 6 7 8\n",
			busy:  (1 + 2 + 3 + 6 + 7 + 8) * 10 * time.Millisecond,
			total: 36 * 10 * time.Millisecond,
		},
		{name: "per-cpu line first", stat: "cpu0 1 2 3 4 5 6 7 8 0 0\n", wantErr: "not the aggregate cpu line"},
		{name: "too few fields", stat: "cpu  1 2 3 4\n", wantErr: "not the aggregate cpu line"},
		{name: "not a number", stat: "cpu  1 2 x 4 5 6 7 8 0 0\n", wantErr: `field 3 of "cpu  1 2 x`},
		{name: "empty", stat: "\n", wantErr: "not the aggregate cpu line"},
		{name: "missing", wantErr: "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.stat != "" {
				writeFile(t, filepath.Join(root, "stat"), c.stat)
			}
			got, err := CPU(root)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("CPU() error = %v, want one containing %q", err, c.wantErr)
				}
				if c.stat == "" && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("missing file: error %v is not fs.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Busy != c.busy || got.Total != c.total {
				t.Errorf("CPU() = %+v, want Busy %v Total %v", got, c.busy, c.total)
			}
		})
	}
}

func TestCPUTimesSubAcrossWrap(t *testing.T) {
	// A node whose Total passed 2^63 ns between two samples: the
	// difference is still the time between them.
	prev := CPUTimes{Busy: 5 * time.Second, Total: math.MaxInt64 - time.Duration(time.Second) + 1}
	next := CPUTimes{Busy: 6 * time.Second, Total: prev.Total + 3*time.Second} // wraps
	if next.Total > 0 {
		t.Fatalf("test setup: %v did not wrap", next.Total)
	}
	got := next.Sub(prev)
	if got.Busy != time.Second || got.Total != 3*time.Second {
		t.Errorf("Sub = %+v, want 1s busy of 3s", got)
	}
	// The same through the jiffies conversion.
	j := uint64(math.MaxInt64)/uint64(jiffy) + 1
	if d := ticks(j+100) - ticks(j); d != time.Second {
		t.Errorf("ticks across 2^63 ns differ by %v, want 1s", d)
	}
}

func TestCPUs(t *testing.T) {
	dir := t.TempDir()
	// CPU 1 offline: no line for it.
	writeFile(t, filepath.Join(dir, "stat"), "cpu  300 0 60 900 10 0 0 0 0 0\ncpu0 100 0 20 300 5 0 0 0 0 0\ncpu2 200 0 40 600 5 0 0 1 0 0\n"+statRest)
	got, err := CPUs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]CPUTimes{
		0: {Busy: 120 * jiffy, Total: 425 * jiffy},
		2: {Busy: 241 * jiffy, Total: 846 * jiffy},
	}
	if len(got) != len(want) || got[0] != want[0] || got[2] != want[2] {
		t.Errorf("CPUs() = %v, want %v", got, want)
	}
	writeFile(t, filepath.Join(dir, "stat"), "cpu  1 2 3 4 5 6 7 8\ncpu0 1 2 3 4\n")
	if _, err := CPUs(dir); err == nil || !strings.Contains(err.Error(), `"cpu0 1 2 3 4" is not a CPU's line`) {
		t.Errorf("CPUs() of a short line: error %v", err)
	}
}
