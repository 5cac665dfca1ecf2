package cgroups_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

const gib = 1 << 30

func TestReadUsage(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		a := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{CPU: 3 * time.Second, Memory: 2 * gib, InactiveFile: gib / 2})
		tree.Add(a+"/c1", cgroupstest.Usage{CPU: 1500 * time.Millisecond, Memory: gib, InactiveFile: gib / 4})
		b := tree.AddPod(corev1.PodQOSBestEffort, "b", cgroupstest.Usage{CPU: time.Second, Memory: gib / 4})
		online := tree.AddPod(corev1.PodQOSBurstable, "web", cgroupstest.Usage{CPU: 7 * time.Second, Memory: 3 * gib, InactiveFile: gib})
		f := tree.FS()

		cases := []struct {
			path string
			cpu  time.Duration
			mem  cgroups.MemoryStat
		}{
			{path: a + "/c1", cpu: 1500 * time.Millisecond, mem: cgroups.MemoryStat{Usage: gib, InactiveFile: gib / 4, WorkingSet: gib * 3 / 4}},
			// A pod's counters include its containers'.
			{path: a, cpu: 4500 * time.Millisecond, mem: cgroups.MemoryStat{Usage: 3 * gib, InactiveFile: gib * 3 / 4, WorkingSet: gib * 9 / 4}},
			{path: b, cpu: time.Second, mem: cgroups.MemoryStat{Usage: gib / 4, WorkingSet: gib / 4}},
			// The big box holds every batch pod.
			{path: box, cpu: 5500 * time.Millisecond, mem: cgroups.MemoryStat{Usage: 13 * gib / 4, InactiveFile: gib * 3 / 4, WorkingSet: 10 * gib / 4}},
			{path: online, cpu: 7 * time.Second, mem: cgroups.MemoryStat{Usage: 3 * gib, InactiveFile: gib, WorkingSet: 2 * gib}},
			{path: "kubepods", cpu: 12500 * time.Millisecond, mem: cgroups.MemoryStat{Usage: 25 * gib / 4, InactiveFile: 7 * gib / 4, WorkingSet: 18 * gib / 4}},
		}
		for _, c := range cases {
			cpu, err := f.CPUUsage(c.path)
			if err != nil || cpu != c.cpu {
				t.Errorf("CPUUsage(%s) = %v, %v; want %v", c.path, cpu, err, c.cpu)
			}
			mem, err := f.Memory(c.path)
			if err != nil || mem != c.mem {
				t.Errorf("Memory(%s) = %+v, %v; want %+v", c.path, mem, err, c.mem)
			}
		}

		// A pod that ends leaves its CPU time in the box's counter.
		tree.Remove(b)
		if cpu, err := f.CPUUsage(box); err != nil || cpu != 5500*time.Millisecond {
			t.Errorf("CPUUsage(box) after a pod ended = %v, %v; want 5.5s", cpu, err)
		}
		_, err := f.CPUUsage(b)
		wantNotExist(t, "CPUUsage of an ended pod", err)
		_, err = f.Memory(b)
		wantNotExist(t, "Memory of an ended pod", err)
	})
}

func TestWorkingSetNeverBelowZero(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{Memory: 100, InactiveFile: 300})
		m, err := tree.FS().Memory(p)
		if err != nil || m != (cgroups.MemoryStat{Usage: 100, InactiveFile: 300}) {
			t.Errorf("Memory() = %+v, %v; want working set 0", m, err)
		}
	})
}

func TestV1MemoryReadsHierarchicalInactiveFile(t *testing.T) {
	// v1's memory.stat has the cgroup's own inactive_file and the
	// subtree's total_inactive_file; usage_in_bytes is the subtree's, so
	// only the total matches it.
	tree := v1Tree(t)
	p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{Memory: 100, InactiveFile: 10})
	tree.Add(p+"/c", cgroupstest.Usage{Memory: 1000, InactiveFile: 400})
	stat := tree.Read(p, "memory.stat")
	for _, line := range []string{"\ninactive_file 10\n", "\ntotal_inactive_file 410\n"} {
		if !strings.Contains(stat, line) {
			t.Fatalf("fake memory.stat lacks %q:\n%s", line, stat)
		}
	}
	m, err := tree.FS().Memory(p)
	if err != nil || m.InactiveFile != 410 || m.WorkingSet != 690 {
		t.Errorf("Memory() = %+v, %v; want inactive 410, working set 690", m, err)
	}
}

func TestReadDefaults(t *testing.T) {
	// A cgroup as the kernel makes it: no quota, no memory limit,
	// default weight.
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
		f := tree.FS()
		q, period, err := f.CPUQuota(p)
		if err != nil || q != cgroups.Unlimited || period != 100*time.Millisecond {
			t.Errorf("CPUQuota() = %v, %v, %v; want unlimited per 100ms", q, period, err)
		}
		limit, err := f.MemoryLimit(p)
		if err != nil || limit != cgroups.Unlimited {
			t.Errorf("MemoryLimit() = %d, %v; want unlimited", limit, err)
		}
		want := uint64(1024)
		if tree.Version == cgroups.V2 {
			want = cgroups.WeightToShares(100) // v2's default weight
		}
		shares, err := f.CPUShares(p)
		if err != nil || shares != want {
			t.Errorf("CPUShares() = %d, %v; want %d", shares, err, want)
		}
	})
}

func TestReadLimits(t *testing.T) {
	cases := []struct {
		name     string
		v1, v2   map[string]string // file → content as the kernel prints it
		quota    time.Duration
		period   time.Duration
		limit    int64
		shares   uint64
		v2Shares uint64
	}{
		{
			name:  "limited",
			v1:    map[string]string{"cpu.cfs_quota_us": "250000\n", "cpu.cfs_period_us": "100000\n", "memory.limit_in_bytes": "1073741824\n", "cpu.shares": "2\n"},
			v2:    map[string]string{"cpu.max": "250000 100000\n", "memory.max": "1073741824\n", "cpu.weight": "1\n"},
			quota: 250 * time.Millisecond, period: 100 * time.Millisecond, limit: gib, shares: 2, v2Shares: 2,
		},
		{
			name:  "unlimited, other period",
			v1:    map[string]string{"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "50000\n", "memory.limit_in_bytes": "9223372036854771712\n", "cpu.shares": "262144\n"},
			v2:    map[string]string{"cpu.max": "max 50000\n", "memory.max": "max\n", "cpu.weight": "10000\n"},
			quota: cgroups.Unlimited, period: 50 * time.Millisecond, limit: cgroups.Unlimited, shares: 262144, v2Shares: 262144,
		},
		{
			// 64 KiB pages print a different "unlimited".
			name:  "v1 unlimited with 64k pages",
			v1:    map[string]string{"memory.limit_in_bytes": "9223372036854710272\n"},
			v2:    map[string]string{"memory.max": "max\n"},
			quota: cgroups.Unlimited, period: 100 * time.Millisecond, limit: cgroups.Unlimited, shares: 1024, v2Shares: cgroups.WeightToShares(100),
		},
	}
	for _, c := range cases {
		forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
			files, wantShares := c.v1, c.shares
			if tree.Version == cgroups.V2 {
				files, wantShares = c.v2, c.v2Shares
			}
			p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
			for file, content := range files {
				tree.Write(p, file, content)
			}
			f := tree.FS()
			q, period, err := f.CPUQuota(p)
			if err != nil || q != c.quota || period != c.period {
				t.Errorf("%s: CPUQuota() = %v, %v, %v; want %v, %v", c.name, q, period, err, c.quota, c.period)
			}
			limit, err := f.MemoryLimit(p)
			if err != nil || limit != c.limit {
				t.Errorf("%s: MemoryLimit() = %d, %v; want %d", c.name, limit, err, c.limit)
			}
			shares, err := f.CPUShares(p)
			if err != nil || shares != wantShares {
				t.Errorf("%s: CPUShares() = %d, %v; want %d", c.name, shares, err, wantShares)
			}
		})
	}
}

func TestReadVanishedCgroup(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{CPU: time.Second}, 100)
		f := tree.FS()
		tree.Remove(p)
		reads := map[string]func() error{
			"CPUUsage":    func() error { _, err := f.CPUUsage(p); return err },
			"Memory":      func() error { _, err := f.Memory(p); return err },
			"CPUQuota":    func() error { _, _, err := f.CPUQuota(p); return err },
			"MemoryLimit": func() error { _, err := f.MemoryLimit(p); return err },
			"CPUShares":   func() error { _, err := f.CPUShares(p); return err },
			"CPUSet":      func() error { _, err := f.CPUSet(p); return err },
			"Procs":       func() error { _, err := f.Procs(p); return err },
			"Children":    func() error { _, err := f.Children(p); return err },
		}
		for name, read := range reads {
			err := read()
			wantNotExist(t, name, err)
			wantErrContaining(t, name, err, "pod"+"a")
		}
		if f.Exists(p) {
			t.Error("Exists() of an ended pod = true")
		}
	})
}

func TestReadMalformed(t *testing.T) {
	type malformedCase struct {
		file, content string
		read          func(*cgroups.FS, string) error
		wantErr       string
	}
	usage := func(f *cgroups.FS, p string) error { _, err := f.CPUUsage(p); return err }
	memory := func(f *cgroups.FS, p string) error { _, err := f.Memory(p); return err }
	quota := func(f *cgroups.FS, p string) error { _, _, err := f.CPUQuota(p); return err }
	limit := func(f *cgroups.FS, p string) error { _, err := f.MemoryLimit(p); return err }
	shares := func(f *cgroups.FS, p string) error { _, err := f.CPUShares(p); return err }
	procs := func(f *cgroups.FS, p string) error { _, err := f.Procs(p); return err }
	cpuset := func(f *cgroups.FS, p string) error { _, err := f.CPUSet(p); return err }
	common := []malformedCase{
		{"cgroup.procs", "12\nabc\n", procs, `cgroup.procs: unexpected content "12\nabc\n"`},
		{"cgroup.procs", "0\n", procs, `unexpected content "0\n"`},
		{"cgroup.procs", "-1\n", procs, `unexpected content "-1\n"`},
		{"memory.stat", "cache 0\nrss 0\n", memory, "inactive_file line"},
		{"cpuset.cpus", "0-3:2/4\n", cpuset, `cpuset.cpus: unexpected content "0-3:2/4\n"`},
	}
	v1 := append([]malformedCase{
		{"cpuacct.usage", "12ns\n", usage, `cpuacct.usage: unexpected content "12ns\n"`},
		{"cpuacct.usage", "", usage, `cpuacct.usage: unexpected content ""`},
		{"memory.usage_in_bytes", "-5\n", memory, `memory.usage_in_bytes: unexpected content "-5\n"`},
		{"memory.stat", "total_inactive_file lots\n", memory, `memory.stat: unexpected content "total_inactive_file lots\n"`},
		{"cpu.cfs_quota_us", "max\n", quota, `cpu.cfs_quota_us: unexpected content "max\n"`},
		{"cpu.cfs_period_us", "-1\n", quota, `cpu.cfs_period_us: unexpected content "-1\n"`},
		{"memory.limit_in_bytes", "max\n", limit, `memory.limit_in_bytes: unexpected content "max\n"`},
		{"cpu.shares", "1024 2\n", shares, `cpu.shares: unexpected content "1024 2\n"`},
	}, common...)
	v2 := append([]malformedCase{
		{"cpu.stat", "usage_usec x\n", usage, `cpu.stat: unexpected content "usage_usec x\n"`},
		{"cpu.stat", "user_usec 5\n", usage, "cpu.stat: no usage_usec line"},
		{"memory.current", "1.5G\n", memory, `memory.current: unexpected content "1.5G\n"`},
		{"memory.stat", "inactive_file -1\n", memory, `unexpected content "inactive_file -1\n"`},
		{"cpu.max", "max\n", quota, `cpu.max: unexpected content "max\n"`},
		{"cpu.max", "50000 max\n", quota, `cpu.max: unexpected content "50000 max\n"`},
		{"cpu.max", "lots 100000\n", quota, `cpu.max: unexpected content "lots 100000\n"`},
		{"memory.max", "-1\n", limit, `memory.max: unexpected content "-1\n"`},
		{"cpu.weight", "heavy\n", shares, `cpu.weight: unexpected content "heavy\n"`},
	}, common...)
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		cases := v1
		if tree.Version == cgroups.V2 {
			cases = v2
		}
		for _, c := range cases {
			p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{CPU: time.Second, Memory: 1})
			tree.Write(p, c.file, c.content)
			err := c.read(tree.FS(), p)
			wantErrContaining(t, c.file+" "+c.content, err, c.wantErr, tree.File(p, c.file))
			tree.Remove(p)
		}
	})
}

func TestInvalidPaths(t *testing.T) {
	f := v1Tree(t).FS()
	for _, p := range []string{"", "/kubepods", "../cpu", "kubepods/../../x"} {
		_, err := f.CPUUsage(p)
		wantErrContaining(t, "CPUUsage("+p+")", err, "is not a cgroup path")
		if f.Exists(p) {
			t.Errorf("Exists(%q) = true", p)
		}
	}
	// "." is the root cgroup: readable.
	if _, err := f.CPUUsage("."); err != nil {
		t.Errorf("CPUUsage(root) = %v", err)
	}
}
