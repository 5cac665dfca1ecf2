package procstat

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// meminfo is a real /proc/meminfo (Linux 6.x, 24 GiB), cut at the values
// the colocation agent does not read.
const meminfo = `MemTotal:       24683656 kB
MemFree:        21518032 kB
MemAvailable:   23783056 kB
Buffers:           36516 kB
Cached:          2286496 kB
SwapCached:            0 kB
Active:          1374036 kB
Inactive:        1188112 kB
Active(anon):       1540 kB
Inactive(anon):   246456 kB
Active(file):    1372496 kB
Inactive(file):   941656 kB
Unevictable:        9396 kB
Mlocked:            7848 kB
SwapTotal:             0 kB
SwapFree:              0 kB
Dirty:            376260 kB
AnonPages:        248592 kB
Shmem:              8952 kB
CommitLimit:    12341828 kB
Committed_AS:     738740 kB
VmallocTotal:   34359738367 kB
HugePages_Total:       0
HugePages_Free:        0
Hugepagesize:       2048 kB
DirectMap4k:       20480 kB
DirectMap2M:     2076672 kB
DirectMap1G:    25165824 kB
`

func TestMemory(t *testing.T) {
	cases := []struct {
		name     string
		meminfo  string // "" leaves the file out
		want     MemInfo
		wantUsed uint64
		wantErr  string
	}{
		{
			name:     "real",
			meminfo:  meminfo,
			want:     MemInfo{Total: 24683656 * 1024, Available: 23783056 * 1024},
			wantUsed: (24683656 - 23783056) * 1024,
		},
		{
			name:    "before 3.14 there is no MemAvailable",
			meminfo: "MemTotal:       24683656 kB\nMemFree:        21518032 kB\n",
			wantErr: "lacks MemTotal or MemAvailable",
		},
		{name: "no unit", meminfo: "MemTotal:       24683656\nMemAvailable:   1 kB\n", wantErr: `unexpected line "MemTotal:`},
		{name: "not a number", meminfo: "MemTotal:       lots kB\nMemAvailable:   1 kB\n", wantErr: "invalid syntax"},
		{name: "missing", wantErr: "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.meminfo != "" {
				writeFile(t, filepath.Join(root, "meminfo"), c.meminfo)
			}
			got, err := Memory(root)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Memory() error = %v, want one containing %q", err, c.wantErr)
				}
				if c.meminfo == "" && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("missing file: error %v is not fs.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || got.Used() != c.wantUsed {
				t.Errorf("Memory() = %+v (used %d), want %+v (used %d)", got, got.Used(), c.want, c.wantUsed)
			}
		})
	}
}

func TestMemInfoUsedNeverNegative(t *testing.T) {
	// Whatever the file says, Used does not wrap below zero.
	if got := (MemInfo{Total: 10, Available: 12}).Used(); got != 0 {
		t.Errorf("Used() = %d, want 0", got)
	}
}
