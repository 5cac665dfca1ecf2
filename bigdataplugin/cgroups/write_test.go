package cgroups_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

// write is one file write an FS made, relative to the tree's root.
type write struct{ file, value string }

// recordWrites makes f record its writes (names relative to root) in the
// returned slice and answer refuse(file, value)'s error for them.
func recordWrites(f *cgroups.FS, root string, refuse func(file, value string) error) *[]write {
	var got []write
	cgroups.InterceptWrites(f, func(name, value string) error {
		rel, _ := filepath.Rel(root, name)
		got = append(got, write{rel, value})
		if refuse != nil {
			return refuse(rel, value)
		}
		return nil
	})
	return &got
}

func TestSetCPUQuota(t *testing.T) {
	cases := []struct {
		name          string
		quota, period time.Duration
		v1Period      string
		v1Quota       string
		v2Max         string
		readQuota     time.Duration
		readPeriod    time.Duration
		wantErr       string
	}{
		{name: "half a CPU", quota: 50 * time.Millisecond, period: 100 * time.Millisecond,
			v1Period: "100000", v1Quota: "50000", v2Max: "50000 100000", readQuota: 50 * time.Millisecond, readPeriod: 100 * time.Millisecond},
		{name: "unlimited", quota: -1, period: 100 * time.Millisecond,
			v1Period: "100000", v1Quota: "-1", v2Max: "max 100000", readQuota: cgroups.Unlimited, readPeriod: 100 * time.Millisecond},
		{name: "any negative is unlimited", quota: -time.Hour,
			v1Period: "100000", v1Quota: "-1", v2Max: "max 100000", readQuota: cgroups.Unlimited, readPeriod: 100 * time.Millisecond},
		{name: "zero quota is raised to the kernel's 1ms, zero period is 100ms", quota: 0, period: 0,
			v1Period: "100000", v1Quota: "1000", v2Max: "1000 100000", readQuota: time.Millisecond, readPeriod: 100 * time.Millisecond},
		{name: "sub-millisecond quota", quota: 500 * time.Microsecond, period: 10 * time.Millisecond,
			v1Period: "10000", v1Quota: "1000", v2Max: "1000 10000", readQuota: time.Millisecond, readPeriod: 10 * time.Millisecond},
		{name: "several CPUs, longest period", quota: 2500 * time.Millisecond, period: time.Second,
			v1Period: "1000000", v1Quota: "2500000", v2Max: "2500000 1000000", readQuota: 2500 * time.Millisecond, readPeriod: time.Second},
		{name: "shortest period", quota: 3 * time.Millisecond, period: time.Millisecond,
			v1Period: "1000", v1Quota: "3000", v2Max: "3000 1000", readQuota: 3 * time.Millisecond, readPeriod: time.Millisecond},
		{name: "period too short", quota: time.Millisecond, period: 999 * time.Microsecond, wantErr: "outside the kernel's 1ms..1s"},
		{name: "period too long", quota: time.Millisecond, period: 2 * time.Second, wantErr: "outside the kernel's 1ms..1s"},
	}
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		tree.Add(box, cgroupstest.Usage{})
		for _, c := range cases {
			f := tree.FS()
			got := recordWrites(f, tree.Root, nil)
			err := f.SetCPUQuota(box+"/..", c.quota, c.period) // "kubepods": any cgroup but the root
			if c.wantErr != "" {
				wantErrContaining(t, c.name, err, c.wantErr)
				if len(*got) != 0 {
					t.Errorf("%s: wrote %v", c.name, *got)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var want []write
			if tree.Version == cgroups.V1 {
				// The period first, so the quota is checked against it.
				cpu := filepath.Base(filepath.Dir(tree.File(".", "cpu.shares")))
				want = []write{{cpu + "/kubepods/cpu.cfs_period_us", c.v1Period}, {cpu + "/kubepods/cpu.cfs_quota_us", c.v1Quota}}
			} else {
				want = []write{{"kubepods/cpu.max", c.v2Max}}
			}
			if !slices.Equal(*got, want) {
				t.Errorf("%s: writes %v, want %v", c.name, *got, want)
			}
			q, p, err := f.CPUQuota("kubepods")
			if err != nil || q != c.readQuota || p != c.readPeriod {
				t.Errorf("%s: CPUQuota() = %v, %v, %v; want %v, %v", c.name, q, p, err, c.readQuota, c.readPeriod)
			}
		}
	})
}

func TestSetCPUQuotaV1PeriodRefusedFirst(t *testing.T) {
	// Shortening the period while a large quota is set can exceed the
	// parent's limit; the kernel says EINVAL and the quota goes first.
	tree := v1Tree(t)
	p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
	tree.Write(p, "cpu.cfs_quota_us", "400000\n")
	f := tree.FS()
	refused := false
	got := recordWrites(f, tree.Root, func(file, value string) error {
		if filepath.Base(file) == "cpu.cfs_period_us" && !refused {
			refused = true
			return &fs.PathError{Op: "write", Path: file, Err: syscall.EINVAL}
		}
		return nil
	})
	if err := f.SetCPUQuota(p, 20*time.Millisecond, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	dir := "cpu/" + p + "/"
	want := []write{{dir + "cpu.cfs_period_us", "50000"}, {dir + "cpu.cfs_quota_us", "20000"}, {dir + "cpu.cfs_period_us", "50000"}}
	if !slices.Equal(*got, want) {
		t.Errorf("writes %v, want %v", *got, want)
	}
	if q, period, _ := f.CPUQuota(p); q != 20*time.Millisecond || period != 50*time.Millisecond {
		t.Errorf("CPUQuota() = %v/%v, want 20ms/50ms", q, period)
	}
}

func TestSetCPUShares(t *testing.T) {
	cases := []struct {
		shares   uint64
		v1       string
		v2Weight string
	}{
		{0, "2", "1"},
		{1, "2", "1"},
		{2, "2", "1"},
		{3, "3", "1"},
		{1024, "1024", "39"},
		{262143, "262143", "9999"},
		{262144, "262144", "10000"},
		{1 << 40, "262144", "10000"},
	}
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		tree.Add(box, cgroupstest.Usage{})
		f := tree.FS()
		for _, c := range cases {
			if err := f.SetCPUShares(box, c.shares); err != nil {
				t.Fatal(err)
			}
			file, want := "cpu.shares", c.v1
			if tree.Version == cgroups.V2 {
				file, want = "cpu.weight", c.v2Weight
			}
			if got := tree.Read(box, file); got != want {
				t.Errorf("SetCPUShares(%d) wrote %s %q, want %q", c.shares, file, got, want)
			}
		}
	})
}

func TestSharesWeightConversion(t *testing.T) {
	cases := []struct{ shares, weight uint64 }{
		{0, 1}, {2, 1}, {28, 1}, {29, 2}, {1024, 39}, {262144, 10000}, {1 << 62, 10000},
	}
	for _, c := range cases {
		if got := cgroups.SharesToWeight(c.shares); got != c.weight {
			t.Errorf("SharesToWeight(%d) = %d, want %d", c.shares, got, c.weight)
		}
	}
	back := []struct{ weight, shares uint64 }{
		{0, 2}, {1, 2}, {2, 29}, {39, 999}, {10000, 262144}, {20000, 262144},
	}
	for _, c := range back {
		if got := cgroups.WeightToShares(c.weight); got != c.shares {
			t.Errorf("WeightToShares(%d) = %d, want %d", c.weight, got, c.shares)
		}
	}
	// Every weight survives the trip through shares, and the fewest
	// shares for a weight are the ones WeightToShares gives.
	prev := uint64(0)
	for w := uint64(1); w <= 10000; w++ {
		s := cgroups.WeightToShares(w)
		if got := cgroups.SharesToWeight(s); got != w {
			t.Fatalf("SharesToWeight(WeightToShares(%d) = %d) = %d", w, s, got)
		}
		if s > 2 && cgroups.SharesToWeight(s-1) == w {
			t.Fatalf("WeightToShares(%d) = %d, but %d shares give the same weight", w, s, s-1)
		}
		if s <= prev {
			t.Fatalf("WeightToShares not increasing at %d", w)
		}
		prev = s
	}
}

func TestSetCPUIdle(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
		f := tree.FS()
		for _, c := range []struct {
			idle bool
			want string
		}{{true, "1"}, {false, "0"}, {true, "1"}} {
			if err := f.SetCPUIdle(box, c.idle); err != nil {
				t.Fatal(err)
			}
			if got := tree.Read(box, "cpu.idle"); got != c.want {
				t.Errorf("SetCPUIdle(%v) wrote %q, want %q", c.idle, got, c.want)
			}
		}

		// A kernel without cpu.idle: unsupported, not "the pod ended".
		tree.RemoveFile(p, "cpu.idle")
		err := f.SetCPUIdle(p, true)
		if !errors.Is(err, cgroups.ErrUnsupported) || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("SetCPUIdle without cpu.idle: error = %v, want ErrUnsupported only", err)
		}
		if _, serr := os.Stat(tree.File(p, "cpu.idle")); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("SetCPUIdle created cpu.idle: %v", serr)
		}

		// A pod that ended: not exist, not unsupported.
		tree.Remove(p)
		err = f.SetCPUIdle(p, true)
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, cgroups.ErrUnsupported) {
			t.Errorf("SetCPUIdle of an ended pod: error = %v, want fs.ErrNotExist only", err)
		}
	})
}

func TestSetMemoryLimit(t *testing.T) {
	cases := []struct {
		bytes    int64
		v1, v2   string
		readBack int64
	}{
		{gib, "1073741824", "1073741824", gib},
		{-1, "-1", "max", cgroups.Unlimited},
		{-gib, "-1", "max", cgroups.Unlimited},
		{0, "0", "0", 0},
	}
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		tree.Add(box, cgroupstest.Usage{})
		f := tree.FS()
		for _, c := range cases {
			if err := f.SetMemoryLimit(box, c.bytes); err != nil {
				t.Fatal(err)
			}
			file, want := "memory.limit_in_bytes", c.v1
			if tree.Version == cgroups.V2 {
				file, want = "memory.max", c.v2
			}
			if got := tree.Read(box, file); got != want {
				t.Errorf("SetMemoryLimit(%d) wrote %s %q, want %q", c.bytes, file, got, want)
			}
			if got, err := f.MemoryLimit(box); err != nil || got != c.readBack {
				t.Errorf("MemoryLimit() after SetMemoryLimit(%d) = %d, %v; want %d", c.bytes, got, err, c.readBack)
			}
		}
	})
}

func TestSetMemoryLimitBusy(t *testing.T) {
	// v1 answers EBUSY when it cannot reclaim the cgroup down to the
	// limit; the caller must be able to tell.
	tree := v1Tree(t)
	tree.Add(box, cgroupstest.Usage{})
	f := tree.FS()
	recordWrites(f, tree.Root, func(file, value string) error {
		return &fs.PathError{Op: "write", Path: file, Err: syscall.EBUSY}
	})
	err := f.SetMemoryLimit(box, 4096)
	if !errors.Is(err, cgroups.ErrBusy) || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("error = %v, want ErrBusy wrapping EBUSY", err)
	}
	wantErrContaining(t, "busy write", err, `write "4096" to `, tree.File(box, "memory.limit_in_bytes"), "device or resource busy")
	if got := tree.Read(box, "memory.limit_in_bytes"); got != "9223372036854771712" {
		t.Errorf("refused limit was written: %q", got)
	}
}

// Writes refuse the root cgroup and, for a node of a shared machine, the
// node's own root cgroup, whose limits are the whole node's; and paths
// that are not relative to the hierarchy's root.
func TestWritesRefuseRootAndBadPaths(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		node, err := tree.FS().ForNode("/weft-node-1")
		if err != nil {
			t.Fatal(err)
		}
		tree.Add(node.NodePath(), cgroupstest.Usage{})
		for _, f := range []*cgroups.FS{tree.FS(), node} {
			got := recordWrites(f, tree.Root, nil)
			writes := map[string]func(p string) error{
				"SetCPUQuota":    func(p string) error { return f.SetCPUQuota(p, time.Millisecond, 0) },
				"SetCPUShares":   func(p string) error { return f.SetCPUShares(p, 2) },
				"SetCPUIdle":     func(p string) error { return f.SetCPUIdle(p, true) },
				"SetMemoryLimit": func(p string) error { return f.SetMemoryLimit(p, 1) },
				"SetCPUSet":      func(p string) error { return f.SetCPUSet(p, "0") },
				"SetCPUSetTree":  func(p string) error { return f.SetCPUSetTree(p, "0") },
				"Kill":           func(p string) error { return f.Kill(p) },
			}
			for name, w := range writes {
				for _, p := range []string{".", "kubepods/..", "", f.NodePath(), f.NodePath() + "/kubepods/.."} {
					wantErrContaining(t, name+"("+p+")", w(p), "cgroup")
				}
				wantErrContaining(t, name+"(/kubepods)", w("/kubepods"), "is not a cgroup path")
			}
			if len(*got) != 0 {
				t.Errorf("writes happened: %v", *got)
			}
		}
	})
}

func TestWritesToVanishedCgroup(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
		f := tree.FS()
		tree.Remove(p)
		writes := map[string]func() error{
			"SetCPUQuota":    func() error { return f.SetCPUQuota(p, time.Millisecond, 0) },
			"SetCPUShares":   func() error { return f.SetCPUShares(p, 2) },
			"SetCPUIdle":     func() error { return f.SetCPUIdle(p, true) },
			"SetMemoryLimit": func() error { return f.SetMemoryLimit(p, 1) },
			"SetCPUSet":      func() error { return f.SetCPUSet(p, "0") },
			"SetCPUSetTree":  func() error { return f.SetCPUSetTree(p, "0") },
			"Kill":           func() error { return f.Kill(p) },
		}
		for name, w := range writes {
			wantNotExist(t, name, w())
		}
		if f.Exists(p) {
			t.Error("a write re-created the ended pod's cgroup")
		}
	})
}

func TestFileErrorMapping(t *testing.T) {
	const name = "/sys/fs/cgroup/memory/kubepods/besteffort/memory.limit_in_bytes"
	cases := []struct {
		errno          syscall.Errno
		notExist, busy bool
		wantMsg        string
	}{
		{syscall.ENOENT, true, false, "no such file or directory"},
		// A file of a cgroup removed after it was opened.
		{syscall.ENODEV, true, false, "no such device (file does not exist)"},
		{syscall.EBUSY, false, true, "device or resource busy (cgroups: kernel refused the value as busy)"},
		{syscall.EINVAL, false, false, "invalid argument"},
		{syscall.EACCES, false, false, "permission denied"},
	}
	for _, c := range cases {
		err := cgroups.FileError("write", name, "1048576", &fs.PathError{Op: "write", Path: name, Err: c.errno})
		if errors.Is(err, fs.ErrNotExist) != c.notExist || errors.Is(err, cgroups.ErrBusy) != c.busy || !errors.Is(err, c.errno) {
			t.Errorf("%v: %v: ErrNotExist %v, ErrBusy %v, errno kept %v", c.errno, err,
				errors.Is(err, fs.ErrNotExist), errors.Is(err, cgroups.ErrBusy), errors.Is(err, c.errno))
		}
		want := `cgroups: write "1048576" to ` + name + ": " + c.wantMsg
		if err.Error() != want {
			t.Errorf("%v: message %q, want %q", c.errno, err, want)
		}
	}
	err := cgroups.FileError("read", name, "", &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT})
	if want := "cgroups: read " + name + ": no such file or directory"; err.Error() != want {
		t.Errorf("read error %q, want %q", err, want)
	}
}

func TestSetOOMScoreAdj(t *testing.T) {
	proc := t.TempDir()
	for _, pid := range []string{"4242", "4343"} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(proc, pid, "oom_score_adj"), "0\n")
	}
	tree := v1Tree(t)
	f := tree.FS()
	f.ProcRoot = proc
	cases := []struct {
		pid, adj int
		file     string // where the value lands, "" for nowhere
		wantErr  string
	}{
		{pid: 4242, adj: 1000, file: "4242/oom_score_adj"},
		{pid: 4343, adj: -998, file: "4343/oom_score_adj"},
		{pid: 4242, adj: 0, file: "4242/oom_score_adj"},
		{pid: 999999, adj: 1000}, // gone: no error, nothing created
		{pid: 4242, adj: 1001, wantErr: "outside -1000..1000"},
		{pid: 4242, adj: -1001, wantErr: "outside -1000..1000"},
		{pid: 0, adj: 1, wantErr: "invalid pid 0"},
		{pid: -1, adj: 1, wantErr: "invalid pid -1"},
	}
	for _, c := range cases {
		err := f.SetOOMScoreAdj(c.pid, c.adj)
		if c.wantErr != "" {
			wantErrContaining(t, "SetOOMScoreAdj", err, c.wantErr)
			continue
		}
		if err != nil {
			t.Errorf("SetOOMScoreAdj(%d, %d) = %v", c.pid, c.adj, err)
			continue
		}
		if c.file == "" {
			if _, err := os.Stat(filepath.Join(proc, "999999")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("SetOOMScoreAdj of a gone pid created %v", err)
			}
			continue
		}
		b, _ := os.ReadFile(filepath.Join(proc, c.file))
		if got, want := string(b), strconv.Itoa(c.adj); got != want {
			t.Errorf("SetOOMScoreAdj(%d, %d) wrote %q, want %q", c.pid, c.adj, got, want)
		}
	}

	// A process exiting while written: the kernel answers ESRCH.
	recordWrites(f, proc, func(string, string) error { return &fs.PathError{Op: "write", Err: syscall.ESRCH} })
	if err := f.SetOOMScoreAdj(4242, 5); err != nil {
		t.Errorf("SetOOMScoreAdj of an exiting process = %v", err)
	}
	recordWrites(f, proc, func(string, string) error { return &fs.PathError{Op: "write", Err: syscall.EACCES} })
	wantErrContaining(t, "EACCES", f.SetOOMScoreAdj(4343, 5), "oom_score_adj", "permission denied")
}
