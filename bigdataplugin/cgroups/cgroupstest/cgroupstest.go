// Package cgroupstest lays out fake cgroup filesystems, v1 and v2, in a
// test's temporary directory, with the files the kernel makes in exactly
// the kernel's formats, so package cgroups and Weft's colocation agent can
// be tested without a kernel.
//
// A Tree keeps each cgroup's own CPU time and memory and writes them the
// way the kernel accounts them: a cgroup's counters include its
// descendants', so the big box's usage is the sum of its pods'. What code
// under test writes (limits, quotas) is read back with Read.
package cgroupstest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
)

// Usage is what one cgroup itself uses, without its descendants.
type Usage struct {
	// CPU is cumulative CPU time.
	CPU time.Duration
	// Memory is memory charged, page cache included.
	Memory uint64
	// InactiveFile is the part of Memory that is inactive page cache.
	InactiveFile uint64
}

// TB is what a Tree reports its own failures to: a test's testing.TB,
// or a benchmark command's stand-in (test/bench/groundtruth lays out a
// tree per fake node and fails its run the same way).
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Tree is a fake cgroup filesystem under Root. It is not safe for
// concurrent use, but it replaces each file it writes atomically, so code
// under test may read while the test changes usage.
type Tree struct {
	Root    string
	Version cgroups.Version
	// Driver names the cgroups AddPod makes (cgroupfs unless WithDriver).
	Driver cgroups.Driver

	tb          TB
	hierarchies []hierarchy // v2: one, holding every controller
	own         map[string]Usage
	procs       map[string][]int
}

// hierarchy is one v1 mount (or the v2 tree): a directory and the
// controllers whose files it holds.
type hierarchy struct {
	dir  string
	ctls []string
}

// CPUs is the fake machine's CPU count: the root cpuset is "0-3".
const CPUs = 4

// V1 lays out a cgroup v1 filesystem at root with separate cpu, cpuacct,
// memory and cpuset hierarchies, as this project's build machine has.
func V1(tb TB, root string) *Tree {
	return newTree(tb, root, cgroups.V1, []hierarchy{
		{filepath.Join(root, "cpu"), []string{"cpu"}},
		{filepath.Join(root, "cpuacct"), []string{"cpuacct"}},
		{filepath.Join(root, "memory"), []string{"memory"}},
		{filepath.Join(root, "cpuset"), []string{"cpuset"}},
	})
}

// V1Combined lays out a cgroup v1 filesystem whose cpu and cpuacct
// controllers share one hierarchy, root/cpu,cpuacct, with root/cpu and
// root/cpuacct symbolic links to it, as systemd mounts them.
func V1Combined(tb TB, root string) *Tree {
	t := newTree(tb, root, cgroups.V1, []hierarchy{
		{filepath.Join(root, "cpu,cpuacct"), []string{"cpu", "cpuacct"}},
		{filepath.Join(root, "memory"), []string{"memory"}},
		{filepath.Join(root, "cpuset"), []string{"cpuset"}},
	})
	for _, link := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(root, link)); err != nil {
			tb.Fatal(err)
		}
	}
	return t
}

// V2 lays out a unified cgroup v2 filesystem at root.
func V2(tb TB, root string) *Tree {
	return newTree(tb, root, cgroups.V2, []hierarchy{
		{root, []string{"cpu", "memory", "cpuset", "cgroup"}},
	})
}

func newTree(tb TB, root string, v cgroups.Version, hs []hierarchy) *Tree {
	tb.Helper()
	t := &Tree{
		Root: root, Version: v, Driver: cgroups.Cgroupfs, tb: tb,
		hierarchies: hs, own: map[string]Usage{}, procs: map[string][]int{},
	}
	t.make(".")
	return t
}

// WithDriver makes AddPod name pods as kubelet's driver d does.
func (t *Tree) WithDriver(d cgroups.Driver) *Tree {
	t.Driver = d
	return t
}

// FS returns a cgroups.FS over the tree.
func (t *Tree) FS() *cgroups.FS {
	t.tb.Helper()
	f, err := cgroups.New(t.Root, t.Version, t.Driver)
	if err != nil {
		t.tb.Fatal(err)
	}
	return f
}

// Add makes cgroup path, and any missing parents, if it does not exist,
// and sets its own usage and processes.
func (t *Tree) Add(path string, u Usage, pids ...int) {
	t.tb.Helper()
	path = t.clean(path)
	var missing []string
	for p := path; p != "."; p = filepath.Dir(p) {
		if _, ok := t.own[p]; ok {
			break
		}
		missing = append(missing, p)
	}
	for _, p := range slices.Backward(missing) {
		t.make(p)
	}
	t.own[path] = u
	t.procs[path] = slices.Clone(pids)
	if len(pids) > 0 || len(missing) == 0 {
		t.writeProcs(path)
	}
	if u != (Usage{}) || len(missing) == 0 {
		t.account(path)
	}
}

// AddPod adds the cgroup of the pod with the given QoS class and UID, as
// the kubelet names it with the tree's driver, and returns its path.
func (t *Tree) AddPod(qos corev1.PodQOSClass, uid string, u Usage, pids ...int) string {
	t.tb.Helper()
	path := t.Driver.PodPath(qos, uid)
	if path == "" {
		t.tb.Fatalf("cgroupstest: no pod path for QoS %q, uid %q", qos, uid)
	}
	t.Add(path, u, pids...)
	return path
}

// SetUsage changes what cgroup path itself uses.
func (t *Tree) SetUsage(path string, u Usage) {
	t.tb.Helper()
	path = t.existing(path)
	t.own[path] = u
	t.account(path)
}

// SetProcs replaces the processes in cgroup path (not its descendants).
func (t *Tree) SetProcs(path string, pids ...int) {
	t.tb.Helper()
	path = t.existing(path)
	t.procs[path] = slices.Clone(pids)
	t.writeProcs(path)
}

// Remove removes cgroup path and its descendants, as when a pod ends.
// Their CPU time stays in the parent's counters, as the kernel keeps it;
// their memory is gone.
func (t *Tree) Remove(path string) {
	t.tb.Helper()
	path = t.existing(path)
	if path == "." {
		t.tb.Fatal("cgroupstest: cannot remove the root cgroup")
	}
	parent := filepath.Dir(path)
	p := t.own[parent]
	for c, u := range t.own {
		if under(c, path) {
			p.CPU += u.CPU
			delete(t.own, c)
			delete(t.procs, c)
		}
	}
	t.own[parent] = p
	for _, h := range t.hierarchies {
		if err := os.RemoveAll(filepath.Join(h.dir, path)); err != nil {
			t.tb.Fatal(err)
		}
	}
	t.account(parent)
}

// File returns the name of file of cgroup path in the hierarchy that
// holds it (on v1: cpu.* in cpu, cpuacct.* in cpuacct, memory.* in memory,
// cpuset.* in cpuset, others such as cgroup.procs in cpu).
func (t *Tree) File(path, file string) string {
	return filepath.Join(t.hierarchyOf(file).dir, t.clean(path), file)
}

// Read returns file of cgroup path without surrounding white space:
// whatever was last written to it.
func (t *Tree) Read(path, file string) string {
	t.tb.Helper()
	b, err := os.ReadFile(t.File(path, file))
	if err != nil {
		t.tb.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Write replaces file of cgroup path with content, verbatim: a value the
// kernel would hold, or a malformed one.
func (t *Tree) Write(path, file, content string) {
	t.tb.Helper()
	t.put(t.File(path, file), content)
}

// RemoveFile removes file of cgroup path, as on kernels that lack it
// (cpu.idle before Linux 5.15 on v1, cgroup.kill before 5.14).
func (t *Tree) RemoveFile(path, file string) {
	t.tb.Helper()
	if err := os.Remove(t.File(path, file)); err != nil {
		t.tb.Fatal(err)
	}
}

func (t *Tree) clean(path string) string {
	t.tb.Helper()
	if !filepath.IsLocal(path) {
		t.tb.Fatalf("cgroupstest: %q is not a cgroup path", path)
	}
	return filepath.Clean(path)
}

func (t *Tree) existing(path string) string {
	t.tb.Helper()
	path = t.clean(path)
	if _, ok := t.own[path]; !ok {
		t.tb.Fatalf("cgroupstest: no cgroup %q", path)
	}
	return path
}

func (t *Tree) hierarchyOf(file string) hierarchy {
	ctl, _, _ := strings.Cut(file, ".")
	for _, h := range t.hierarchies {
		if slices.Contains(h.ctls, ctl) {
			return h
		}
	}
	return t.hierarchies[0] // cpu on v1, the tree on v2
}

// under reports whether cgroup c is p or below it.
func under(c, p string) bool {
	return p == "." || c == p || strings.HasPrefix(c, p+"/")
}

// put writes a file atomically (a rename), so a concurrent reader never
// sees it empty.
func (t *Tree) put(name, content string) {
	t.tb.Helper()
	tmp := filepath.Join(filepath.Dir(name), ".cgroupstest-"+filepath.Base(name))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.tb.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.tb.Fatal(err)
	}
}

// make creates cgroup path in every hierarchy with the files the kernel
// makes there, holding a new cgroup's values.
func (t *Tree) make(path string) {
	t.tb.Helper()
	root := path == "."
	for _, h := range t.hierarchies {
		dir := filepath.Join(h.dir, path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.tb.Fatal(err)
		}
		files := map[string]string{}
		if t.Version == cgroups.V1 {
			files["cgroup.procs"] = ""
			files["tasks"] = ""
			files["cgroup.clone_children"] = "0\n"
			files["notify_on_release"] = "0\n"
			for _, c := range h.ctls {
				maps(files, v1Files(c, root, t.parentFile(h, path, "cpuset.cpus"), t.parentFile(h, path, "cpuset.mems")))
			}
		} else {
			maps(files, v2Files(root))
			if !root {
				// The kubelet enables controllers for its children.
				t.put(filepath.Join(h.dir, filepath.Dir(path), "cgroup.subtree_control"), "cpuset cpu io memory hugetlb pids\n")
			}
		}
		for name, content := range files {
			t.put(filepath.Join(dir, name), content)
		}
	}
	t.own[path] = Usage{}
	t.writeUsage(path, Usage{}, Usage{}) // nothing changes above a new cgroup
}

// parentFile is the content of the parent's file (a v1 cpuset child starts
// with its parent's CPUs when the kubelet's runtime makes it).
func (t *Tree) parentFile(h hierarchy, path, file string) string {
	if path == "." {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(h.dir, filepath.Dir(path), file))
	if err != nil {
		return ""
	}
	return string(b)
}

func maps(dst, src map[string]string) {
	for k, v := range src {
		dst[k] = v
	}
}

// v1Unlimited is how v1 prints "no memory limit" with 4 KiB pages.
const v1Unlimited = "9223372036854771712\n"

func v1Files(ctl string, root bool, parentCPUs, parentMems string) map[string]string {
	switch ctl {
	case "cpu":
		return map[string]string{
			"cpu.cfs_period_us": "100000\n",
			"cpu.cfs_quota_us":  "-1\n",
			"cpu.cfs_burst_us":  "0\n",
			"cpu.shares":        "1024\n",
			"cpu.idle":          "0\n",
			"cpu.stat":          "nr_periods 0\nnr_throttled 0\nthrottled_time 0\nnr_bursts 0\nburst_time 0\n",
		}
	case "memory":
		return map[string]string{
			"memory.limit_in_bytes":      v1Unlimited,
			"memory.soft_limit_in_bytes": v1Unlimited,
			"memory.use_hierarchy":       "1\n",
			"memory.failcnt":             "0\n",
			"memory.swappiness":          "60\n",
			"memory.oom_control":         "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
		}
	case "cpuset":
		cpus, mems := parentCPUs, parentMems
		if root {
			cpus, mems = fmt.Sprintf("0-%d\n", CPUs-1), "0\n"
		}
		return map[string]string{
			"cpuset.cpus":           cpus,
			"cpuset.mems":           mems,
			"cpuset.effective_cpus": cpus,
			"cpuset.effective_mems": mems,
			"cpuset.cpu_exclusive":  "0\n",
			"cpuset.mem_exclusive":  "0\n",
		}
	}
	return nil // cpuacct's files are all usage, written by account
}

func v2Files(root bool) map[string]string {
	effective := fmt.Sprintf("0-%d\n", CPUs-1)
	if root {
		return map[string]string{
			"cgroup.controllers":     "cpuset cpu io memory hugetlb pids rdma misc\n",
			"cgroup.subtree_control": "",
			"cgroup.procs":           "",
			"cgroup.threads":         "",
			"cgroup.max.depth":       "max\n",
			"cpuset.cpus.effective":  effective,
			"cpuset.mems.effective":  "0\n",
		}
	}
	return map[string]string{
		"cgroup.controllers":     "cpuset cpu io memory hugetlb pids\n",
		"cgroup.subtree_control": "",
		"cgroup.procs":           "",
		"cgroup.threads":         "",
		"cgroup.type":            "domain\n",
		"cgroup.events":          "populated 0\nfrozen 0\n",
		"cgroup.freeze":          "0\n",
		"cgroup.kill":            "", // write-only
		"cpu.max":                "max 100000\n",
		"cpu.max.burst":          "0\n",
		"cpu.weight":             "100\n",
		"cpu.weight.nice":        "0\n",
		"cpu.idle":               "0\n",
		"cpuset.cpus":            "\n",
		"cpuset.mems":            "\n",
		"cpuset.cpus.effective":  effective,
		"cpuset.mems.effective":  "0\n",
		"memory.max":             "max\n",
		"memory.high":            "max\n",
		"memory.low":             "0\n",
		"memory.min":             "0\n",
		"memory.swap.max":        "max\n",
		"memory.events":          "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n",
	}
}

// writeProcs writes a cgroup's process list (every v1 hierarchy lists a
// process somewhere, so each gets it).
func (t *Tree) writeProcs(path string) {
	var b strings.Builder
	for _, pid := range t.procs[path] {
		fmt.Fprintf(&b, "%d\n", pid)
	}
	for _, h := range t.hierarchies {
		t.put(filepath.Join(h.dir, path, "cgroup.procs"), b.String())
		name := "tasks"
		if t.Version == cgroups.V2 {
			name = "cgroup.threads"
		}
		t.put(filepath.Join(h.dir, path, name), b.String())
	}
}

// account rewrites the usage files of path and of its ancestors: each
// shows the sum over its subtree, and on v1 memory.stat also the
// cgroup's own figures.
func (t *Tree) account(path string) {
	for p := path; ; p = filepath.Dir(p) {
		var total Usage
		for c, u := range t.own {
			if under(c, p) {
				total.CPU += u.CPU
				total.Memory += u.Memory
				total.InactiveFile += u.InactiveFile
			}
		}
		t.writeUsage(p, t.own[p], total)
		if p == "." {
			return
		}
	}
}

func (t *Tree) writeUsage(path string, own, total Usage) {
	ns := uint64(total.CPU.Nanoseconds())
	if t.Version == cgroups.V1 {
		dir := func(ctl string) string { return filepath.Join(t.hierarchyOf(ctl+".x").dir, path) }
		ticks := ns / uint64(10*time.Millisecond) // USER_HZ
		t.put(filepath.Join(dir("cpuacct"), "cpuacct.usage"), fmt.Sprintf("%d\n", ns))
		t.put(filepath.Join(dir("cpuacct"), "cpuacct.stat"), fmt.Sprintf("user %d\nsystem %d\n", ticks-ticks/5, ticks/5))
		t.put(filepath.Join(dir("cpuacct"), "cpuacct.usage_percpu"), perCPU(ns))
		t.put(filepath.Join(dir("memory"), "memory.usage_in_bytes"), fmt.Sprintf("%d\n", total.Memory))
		t.put(filepath.Join(dir("memory"), "memory.max_usage_in_bytes"), fmt.Sprintf("%d\n", total.Memory))
		t.put(filepath.Join(dir("memory"), "memory.stat"), v1MemoryStat(own, total))
		return
	}
	dir := filepath.Join(t.Root, path)
	us := ns / 1000
	user, system := us-us/5, us/5
	stat := fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnice_usec 0\n", us, user, system)
	if path != "." {
		stat += "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n"
		t.put(filepath.Join(dir, "memory.current"), fmt.Sprintf("%d\n", total.Memory))
	}
	t.put(filepath.Join(dir, "cpu.stat"), stat)
	t.put(filepath.Join(dir, "memory.stat"), v2MemoryStat(total))
}

// perCPU spreads ns over the CPUs as cpuacct.usage_percpu prints them:
// space-separated with a trailing space.
func perCPU(ns uint64) string {
	var b strings.Builder
	for i := range CPUs {
		share := ns / CPUs
		if i == 0 {
			share += ns % CPUs
		}
		b.WriteString(strconv.FormatUint(share, 10) + " ")
	}
	return b.String() + "\n"
}

// anon is the anonymous part of u: memory that is not page cache.
func anon(u Usage) uint64 {
	if u.InactiveFile > u.Memory {
		return 0
	}
	return u.Memory - u.InactiveFile
}

// v1MemoryStat is a v1 memory.stat: the cgroup's own counters, then the
// hierarchical total_ ones.
func v1MemoryStat(own, total Usage) string {
	lines := func(prefix string, u Usage) string {
		a := anon(u)
		return fmt.Sprintf(""+
			"%[1]scache %[2]d\n%[1]srss %[3]d\n%[1]srss_huge 0\n%[1]sshmem 0\n%[1]smapped_file 0\n"+
			"%[1]sdirty 0\n%[1]swriteback 0\n%[1]sworkingset_refault_anon 0\n%[1]sworkingset_refault_file 0\n"+
			"%[1]sswap 0\n%[1]sswapcached 0\n%[1]spgpgin 0\n%[1]spgpgout 0\n%[1]spgfault 0\n%[1]spgmajfault 0\n"+
			"%[1]sinactive_anon 0\n%[1]sactive_anon %[3]d\n%[1]sinactive_file %[2]d\n%[1]sactive_file 0\n%[1]sunevictable 0\n",
			prefix, u.InactiveFile, a)
	}
	return lines("", own) +
		"hierarchical_memory_limit 9223372036854771712\nhierarchical_memsw_limit 9223372036854771712\n" +
		lines("total_", total)
}

// v2MemoryStat is a v2 memory.stat (hierarchical), Linux 6.x's lines.
func v2MemoryStat(u Usage) string {
	a := anon(u)
	return fmt.Sprintf(""+
		"anon %[1]d\nfile %[2]d\nkernel 0\nkernel_stack 0\npagetables 0\nsec_pagetables 0\npercpu 0\nsock 0\nvmalloc 0\n"+
		"shmem 0\nzswap 0\nzswapped 0\nfile_mapped 0\nfile_dirty 0\nfile_writeback 0\nswapcached 0\nanon_thp 0\n"+
		"file_thp 0\nshmem_thp 0\ninactive_anon 0\nactive_anon %[1]d\ninactive_file %[2]d\nactive_file 0\n"+
		"unevictable 0\nslab_reclaimable 0\nslab_unreclaimable 0\nslab 0\nworkingset_refault_anon 0\n"+
		"workingset_refault_file 0\nworkingset_activate_anon 0\nworkingset_activate_file 0\n"+
		"workingset_restore_anon 0\nworkingset_restore_file 0\nworkingset_nodereclaim 0\npgscan 0\npgsteal 0\n"+
		"pgfault 0\npgmajfault 0\npgrefill 0\npgactivate 0\npgdeactivate 0\npglazyfree 0\npglazyfreed 0\n",
		a, u.InactiveFile)
}
