package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sysTree lays out sysRoot/devices/system/cpu as the kernel does: the
// online list and, for each listed CPU, its topology files. siblings maps
// a CPU to its core's list; file is the name the kernel gives that list.
func sysTree(t *testing.T, online string, siblings map[int]string, files ...string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "devices", "system", "cpu")
	if online != "-" {
		writeFile(t, filepath.Join(dir, "online"), online+"\n")
	}
	writeFile(t, filepath.Join(dir, "possible"), "0-7\n")
	for cpu, list := range siblings {
		topo := filepath.Join(dir, fmt.Sprintf("cpu%d", cpu), "topology")
		for _, f := range files {
			writeFile(t, filepath.Join(topo, f), list+"\n")
		}
		writeFile(t, filepath.Join(topo, "core_id"), fmt.Sprintf("%d\n", cpu))
		writeFile(t, filepath.Join(topo, "package_cpus_list"), "0-7\n")
	}
	return root
}

var bothNames = []string{"core_cpus_list", "thread_siblings_list"}

func TestTopology(t *testing.T) {
	cases := []struct {
		name     string
		online   string
		siblings map[int]string
		files    []string
		want     []Core
		wantErr  string
	}{
		{
			name:     "no SMT (this build machine)",
			online:   "0-1",
			siblings: map[int]string{0: "0", 1: "1"},
			files:    bothNames,
			want:     []Core{{0}, {1}},
		},
		{
			name:     "hyper-threads numbered across the package",
			online:   "0-7",
			siblings: map[int]string{0: "0,4", 1: "1,5", 2: "2,6", 3: "3,7", 4: "0,4", 5: "1,5", 6: "2,6", 7: "3,7"},
			files:    bothNames,
			want:     []Core{{0, 4}, {1, 5}, {2, 6}, {3, 7}},
		},
		{
			name:     "adjacent hyper-threads",
			online:   "0-3",
			siblings: map[int]string{0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3"},
			files:    bothNames,
			want:     []Core{{0, 1}, {2, 3}},
		},
		{
			name:     "kernel before 5.6 has only thread_siblings_list",
			online:   "0-3",
			siblings: map[int]string{0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3"},
			files:    []string{"thread_siblings_list"},
			want:     []Core{{0, 1}, {2, 3}},
		},
		{
			name:   "offline sibling left out",
			online: "0-2,4-7",
			// cpu3 is offline: no topology directory, and a stale list naming it.
			siblings: map[int]string{0: "0,4", 1: "1,5", 2: "2,6", 4: "0,4", 5: "1,5", 6: "2,6", 7: "3,7"},
			files:    bothNames,
			want:     []Core{{0, 4}, {1, 5}, {2, 6}, {7}},
		},
		{
			name:     "online CPU without topology files",
			online:   "0-1",
			siblings: map[int]string{0: "0"},
			files:    bothNames,
			wantErr:  "neither core_cpus_list nor thread_siblings_list",
		},
		{
			name:     "siblings without the CPU itself",
			online:   "0-1",
			siblings: map[int]string{0: "1", 1: "1"},
			files:    bothNames,
			wantErr:  "do not include it",
		},
		{
			name:     "overlapping cores",
			online:   "0-2",
			siblings: map[int]string{0: "0-1", 1: "0-1", 2: "1-2"},
			files:    bothNames,
			wantErr:  "overlap another core",
		},
		{name: "no online CPU", online: "", wantErr: "no online CPU"},
		{name: "malformed online list", online: "0-", wantErr: "not a CPU number"},
		{name: "no online file", online: "-", wantErr: "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := sysTree(t, c.online, c.siblings, c.files...)
			got, err := Topology(root)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Topology() = %v, %v; want error containing %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Errorf("Topology() = %v, want %v", got, c.want)
			}
			n, err := NumCPU(root)
			online, _ := ParseCPUList(c.online)
			if err != nil || n != len(online) {
				t.Errorf("NumCPU() = %d, %v; want %d", n, err, len(online))
			}
		})
	}
}

func TestTopologyMissingFilesAreNotExist(t *testing.T) {
	root := sysTree(t, "0-1", map[int]string{0: "0"}, bothNames...)
	if _, err := Topology(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Topology() error = %v, want fs.ErrNotExist", err)
	}
}

func TestWholeCores(t *testing.T) {
	ht := []Core{{0, 4}, {1, 5}, {2, 6}, {3, 7}}
	single := []Core{{0}, {1}, {2}, {3}}
	mixed := []Core{{0, 4}, {1, 5}, {2}, {3, 7}} // cpu6 offline
	cases := []struct {
		name  string
		cores []Core
		milli int64
		want  []int
	}{
		{name: "nothing asked", cores: ht, milli: 0, want: nil},
		{name: "negative", cores: ht, milli: -5, want: nil},
		{name: "a sliver takes a whole core, the highest", cores: ht, milli: 1, want: []int{3, 7}},
		{name: "exactly one HT core", cores: ht, milli: 2000, want: []int{3, 7}},
		{name: "just over one core", cores: ht, milli: 2001, want: []int{2, 3, 6, 7}},
		{name: "everything", cores: ht, milli: 8000, want: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "more than the node has", cores: ht, milli: 9000, want: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "no SMT", cores: single, milli: 1500, want: []int{2, 3}},
		{name: "this build machine, one CPU", cores: []Core{{0}, {1}}, milli: 1000, want: []int{1}},
		{name: "this build machine, over one CPU", cores: []Core{{0}, {1}}, milli: 1001, want: []int{0, 1}},
		{name: "mixed: top core and the single", cores: mixed, milli: 3000, want: []int{2, 3, 7}},
		{name: "mixed: CPU 0's core spared", cores: mixed, milli: 5000, want: []int{1, 2, 3, 5, 7}},
		// Three cores must hold 6000: the single-thread core cannot be one.
		{name: "mixed: fewest cores wins over CPU 0", cores: mixed, milli: 6000, want: []int{0, 1, 3, 4, 5, 7}},
		{name: "big core 0, small core 1", cores: []Core{{0, 1}, {2}}, milli: 1000, want: []int{2}},
		{name: "unsorted input", cores: []Core{{3, 7}, {0, 4}, {2, 6}, {1, 5}}, milli: 2001, want: []int{2, 3, 6, 7}},
		{name: "no cores", cores: nil, milli: 1000, want: nil},
	}
	for _, c := range cases {
		got := WholeCores(c.cores, c.milli)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: WholeCores(%v, %d) = %v, want %v", c.name, c.cores, c.milli, got, c.want)
		}
	}
}

// TestWholeCoresFewest checks WholeCores against brute force over random
// small topologies: whole cores only, enough threads, and no choice of
// fewer cores would do.
func TestWholeCoresFewest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var cores []Core
		next, threads := 0, 0
		for range 1 + rng.IntN(6) {
			n := 1 + rng.IntN(2)
			var c Core
			for range n {
				c = append(c, next)
				next++
			}
			cores = append(cores, c)
			threads += n
		}
		milli := 1 + rng.Int64N(int64(threads)*1000)
		got := WholeCores(cores, milli)
		picked := 0
		for _, c := range cores {
			in := 0
			for _, cpu := range c {
				if slices.Contains(got, cpu) {
					in++
				}
			}
			if in != 0 && in != len(c) {
				t.Fatalf("WholeCores(%v, %d) = %v splits core %v", cores, milli, got, c)
			}
			if in > 0 {
				picked++
			}
		}
		if int64(len(got))*1000 < milli {
			t.Fatalf("WholeCores(%v, %d) = %v is too small", cores, milli, got)
		}
		if best := fewestCores(cores, milli); picked != best {
			t.Fatalf("WholeCores(%v, %d) = %v uses %d cores, %d would do", cores, milli, got, picked, best)
		}
	}
}

func fewestCores(cores []Core, milli int64) int {
	best := len(cores)
	for mask := 1; mask < 1<<len(cores); mask++ {
		n, threads := 0, 0
		for i, c := range cores {
			if mask&(1<<i) != 0 {
				n++
				threads += len(c)
			}
		}
		if int64(threads)*1000 >= milli && n < best {
			best = n
		}
	}
	return best
}

// FilledCores rounds down to whole cores, highest first, at least one.
func TestFilledCores(t *testing.T) {
	ht := []Core{{0, 4}, {1, 5}, {2, 6}, {3, 7}} // 4 cores of 2 threads
	single := []Core{{0}, {1}}
	tests := []struct {
		cores []Core
		milli int64
		want  string
	}{
		{single, 0, ""},
		{single, 400, "1"},
		{single, 1080, "1"},
		{single, 1999, "1"},
		{single, 2000, "0-1"},
		{ht, 1500, "3,7"},
		{ht, 4100, "2-3,6-7"},
		{ht, 5999, "2-3,6-7"},
		{ht, 6000, "1-3,5-7"},
		{ht, 100000, "0-7"},
	}
	for _, tc := range tests {
		if got := FormatCPUList(FilledCores(tc.cores, tc.milli)); got != tc.want {
			t.Errorf("FilledCores(%v, %d) = %q, want %q", tc.cores, tc.milli, got, tc.want)
		}
	}
}
