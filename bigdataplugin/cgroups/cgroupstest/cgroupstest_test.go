package cgroupstest_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLayouts(t *testing.T) {
	cases := []struct {
		name  string
		make  func(cgroupstest.TB, string) *cgroupstest.Tree
		files map[string]string // path under root → exact content of a new cgroup "x"
		links map[string]string
	}{
		{
			name: "v1",
			make: cgroupstest.V1,
			files: map[string]string{
				"cpu/x/cpu.cfs_quota_us":         "-1\n",
				"cpu/x/cpu.cfs_period_us":        "100000\n",
				"cpu/x/cpu.shares":               "1024\n",
				"cpu/x/cpu.idle":                 "0\n",
				"cpu/x/cgroup.procs":             "",
				"cpuacct/x/cpuacct.usage":        "0\n",
				"cpuacct/x/cpuacct.stat":         "user 0\nsystem 0\n",
				"cpuacct/x/cpuacct.usage_percpu": "0 0 0 0 \n",
				"memory/x/memory.limit_in_bytes": "9223372036854771712\n",
				"memory/x/memory.usage_in_bytes": "0\n",
				"cpuset/cpuset.cpus":             "0-3\n",
				"cpuset/x/cpuset.cpus":           "0-3\n", // the parent's
				"cpuset/x/cpuset.mems":           "0\n",
			},
		},
		{
			name: "v1 cpu,cpuacct",
			make: cgroupstest.V1Combined,
			files: map[string]string{
				"cpu,cpuacct/x/cpu.cfs_quota_us":      "-1\n",
				"cpu,cpuacct/x/cpuacct.usage":         "0\n",
				"cpu/x/cpu.shares":                    "1024\n", // through the link
				"memory/x/memory.limit_in_bytes":      "9223372036854771712\n",
				"cpuset/x/cpuset.cpus":                "0-3\n",
				"cpu,cpuacct/x/cgroup.procs":          "",
				"cpu,cpuacct/x/cgroup.clone_children": "0\n",
			},
			links: map[string]string{"cpu": "cpu,cpuacct", "cpuacct": "cpu,cpuacct"},
		},
		{
			name: "v2",
			make: cgroupstest.V2,
			files: map[string]string{
				"cgroup.controllers":      "cpuset cpu io memory hugetlb pids rdma misc\n",
				"cgroup.subtree_control":  "cpuset cpu io memory hugetlb pids\n", // x was made below
				"x/cpu.max":               "max 100000\n",
				"x/cpu.weight":            "100\n",
				"x/cpu.idle":              "0\n",
				"x/memory.max":            "max\n",
				"x/memory.current":        "0\n",
				"x/cpuset.cpus":           "\n",
				"x/cpuset.cpus.effective": "0-3\n",
				"x/cgroup.kill":           "",
				"x/cgroup.procs":          "",
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			tree := c.make(t, root)
			tree.Add("x", cgroupstest.Usage{})
			for name, want := range c.files {
				if got := read(t, filepath.Join(root, name)); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			for link, want := range c.links {
				if got, err := os.Readlink(filepath.Join(root, link)); err != nil || got != want {
					t.Errorf("link %s → %q, %v; want %q", link, got, err, want)
				}
			}
			if v, err := cgroups.Detect(root); err != nil || v != tree.Version {
				t.Errorf("Detect = %v, %v; want %v", v, err, tree.Version)
			}
			// No scratch files left where a reader could list them.
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if strings.Contains(d.Name(), ".cgroupstest") {
					t.Errorf("scratch file left: %s", p)
				}
				return nil
			})
		})
	}
}

func TestAccounting(t *testing.T) {
	for _, mk := range []func(cgroupstest.TB, string) *cgroupstest.Tree{cgroupstest.V1, cgroupstest.V1Combined, cgroupstest.V2} {
		tree := mk(t, t.TempDir())
		t.Run(tree.Version.String(), func(t *testing.T) {
			a := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{CPU: time.Second, Memory: 1000, InactiveFile: 100}, 10)
			tree.Add(a+"/c", cgroupstest.Usage{CPU: 2 * time.Second, Memory: 500, InactiveFile: 50}, 11)
			b := tree.AddPod(corev1.PodQOSBestEffort, "b", cgroupstest.Usage{CPU: 4 * time.Second, Memory: 2000})
			box := "kubepods/besteffort"

			cpu := func(p string) string {
				if tree.Version == cgroups.V2 {
					line, _, _ := strings.Cut(tree.Read(p, "cpu.stat"), "\n")
					return line
				}
				return tree.Read(p, "cpuacct.usage")
			}
			memUsage := func(p string) string {
				if tree.Version == cgroups.V2 {
					return tree.Read(p, "memory.current")
				}
				return tree.Read(p, "memory.usage_in_bytes")
			}
			wantCPU := func(d time.Duration) string {
				if tree.Version == cgroups.V2 {
					return "usage_usec " + strconv.FormatInt(d.Microseconds(), 10)
				}
				return strconv.FormatInt(d.Nanoseconds(), 10)
			}
			checks := []struct {
				path string
				cpu  time.Duration
				mem  string
			}{
				{a + "/c", 2 * time.Second, "500"},
				{a, 3 * time.Second, "1500"},
				{b, 4 * time.Second, "2000"},
				{box, 7 * time.Second, "3500"},
				{"kubepods", 7 * time.Second, "3500"},
			}
			for _, c := range checks {
				if got := cpu(c.path); got != wantCPU(c.cpu) {
					t.Errorf("%s CPU = %q, want %q", c.path, got, wantCPU(c.cpu))
				}
				if got := memUsage(c.path); got != c.mem {
					t.Errorf("%s memory = %q, want %q", c.path, got, c.mem)
				}
			}
			if got := cpu("."); got != wantCPU(7*time.Second) {
				t.Errorf("root CPU = %q", got)
			}

			stat := tree.Read(a, "memory.stat") + "\n"
			want := []string{"\ninactive_file 150\n"}
			if tree.Version == cgroups.V1 {
				want = []string{"\ninactive_file 100\n", "\ntotal_inactive_file 150\n", "\ntotal_rss 1350\n"}
			}
			for _, w := range want {
				if !strings.Contains("\n"+stat, w) {
					t.Errorf("%s memory.stat lacks %q:\n%s", a, w, stat)
				}
			}
			if got := tree.Read(a+"/c", "cgroup.procs"); got != "11" {
				t.Errorf("cgroup.procs = %q", got)
			}

			// Changing a container's usage moves every ancestor's.
			tree.SetUsage(a+"/c", cgroupstest.Usage{CPU: 5 * time.Second, Memory: 100})
			if got := cpu(box); got != wantCPU(10*time.Second) {
				t.Errorf("box CPU after SetUsage = %q", got)
			}
			if got := memUsage(box); got != "3100" {
				t.Errorf("box memory after SetUsage = %q", got)
			}

			// An ended pod's CPU time stays counted; its memory does not.
			tree.Remove(a)
			if got := cpu(box); got != wantCPU(10*time.Second) {
				t.Errorf("box CPU after a pod ended = %q", got)
			}
			if got := memUsage(box); got != "2000" {
				t.Errorf("box memory after a pod ended = %q", got)
			}
			if _, err := os.Stat(tree.File(a, "cpu.shares")); !os.IsNotExist(err) {
				t.Errorf("ended pod's cgroup still there: %v", err)
			}

			tree.SetProcs(b, 7, 8)
			if got := tree.Read(b, "cgroup.procs"); got != "7\n8" {
				t.Errorf("cgroup.procs = %q", got)
			}
		})
	}
}

func TestDriverAndFileHelpers(t *testing.T) {
	root := t.TempDir()
	tree := cgroupstest.V2(t, root).WithDriver(cgroups.Systemd)
	p := tree.AddPod(corev1.PodQOSBestEffort, "1-2", cgroupstest.Usage{})
	if want := "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1_2.slice"; p != want {
		t.Errorf("AddPod = %q, want %q", p, want)
	}
	f := tree.FS()
	if f.Driver() != cgroups.Systemd || !f.Exists(p) {
		t.Errorf("FS driver %v, pod exists %v", f.Driver(), f.Exists(p))
	}
	tree.Write(p, "cpu.max", "5000 100000\n")
	if got := tree.Read(p, "cpu.max"); got != "5000 100000" {
		t.Errorf("Read = %q", got)
	}
	tree.RemoveFile(p, "cgroup.kill")
	if _, err := os.Stat(filepath.Join(root, p, "cgroup.kill")); !os.IsNotExist(err) {
		t.Errorf("RemoveFile left cgroup.kill: %v", err)
	}
	v1 := cgroupstest.V1(t, t.TempDir())
	for file, hier := range map[string]string{"cpu.shares": "cpu", "cpuacct.usage": "cpuacct", "memory.stat": "memory", "cpuset.cpus": "cpuset", "cgroup.procs": "cpu"} {
		if got, want := v1.File("a/b", file), filepath.Join(v1.Root, hier, "a/b", file); got != want {
			t.Errorf("File(%s) = %s, want %s", file, got, want)
		}
	}
}

func TestConcurrentReadersSeeWholeFiles(t *testing.T) {
	// The agent's tests read while the test moves usage: a reader must
	// never find a file empty or half-written.
	tree := cgroupstest.V1(t, t.TempDir())
	p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{CPU: time.Second})
	f := tree.FS()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.CPUUsage("kubepods/besteffort"); err != nil {
				t.Errorf("CPUUsage during updates: %v", err)
				return
			}
			if _, err := f.Memory(p); err != nil {
				t.Errorf("Memory during updates: %v", err)
				return
			}
		}
	}()
	for i := range 200 {
		tree.SetUsage(p, cgroupstest.Usage{CPU: time.Duration(i) * time.Second, Memory: uint64(i) << 20})
	}
	close(stop)
	wg.Wait()
}
