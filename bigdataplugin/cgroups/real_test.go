package cgroups_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

const helperEnv = "WEFT_CGROUPS_TEST_HELPER"

// TestRealKernelV1 proves the file formats against the running kernel: it
// makes a cgroup in the cpu, cpuacct and memory hierarchies (below this
// process's own cgroup in each, so a helper process stays within the
// limits this test runs under), writes and reads limits through an FS,
// runs a process in it, and removes it. It needs root on a cgroup v1 host.
func TestRealKernelV1(t *testing.T) {
	const root = "/sys/fs/cgroup"
	if os.Getenv(helperEnv) != "" {
		t.Skip("helper process")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if v, err := cgroups.Detect(root); err != nil || v != cgroups.V1 {
		t.Skipf("needs a cgroup v1 host (Detect: %v, %v)", v, err)
	}
	if err := syscall.Access(filepath.Join(root, "cpu"), 2 /* W_OK */); err != nil {
		t.Skipf("%s/cpu is not writable: %v", root, err)
	}
	f, err := cgroups.New(root, cgroups.V1, cgroups.Cgroupfs)
	if err != nil {
		t.Fatal(err)
	}

	own := ownCgroups(t)
	name := fmt.Sprintf("weft-cgroups-test-%d", os.Getpid())
	paths := map[string]string{} // controller → relative path of the test cgroup
	for _, ctl := range []string{"cpu", "cpuacct", "memory"} {
		paths[ctl] = filepath.Join(strings.TrimPrefix(own[ctl], "/"), name)
		dir := filepath.Join(root, ctl, paths[ctl])
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) { // cpu,cpuacct: made once
			t.Fatal(err)
		}
		t.Cleanup(func() { rmdirCgroup(t, dir) })
	}
	cpu, cpuacct, mem := paths["cpu"], paths["cpuacct"], paths["memory"]
	t.Logf("test cgroups: cpu %s, cpuacct %s, memory %s", cpu, cpuacct, mem)

	t.Run("fake tree matches a new cgroup", func(t *testing.T) {
		compareWithFake(t, root, paths)
	})

	t.Run("CPU quota", func(t *testing.T) {
		cases := []struct {
			quota, period         time.Duration
			wantQuota, wantPeriod time.Duration
			raw                   string
		}{
			{50 * time.Millisecond, 100 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, "50000\n"},
			{250 * time.Microsecond, 20 * time.Millisecond, time.Millisecond, 20 * time.Millisecond, "1000\n"},
			{3 * time.Second, time.Second, 3 * time.Second, time.Second, "3000000\n"},
			{-1, 0, cgroups.Unlimited, 100 * time.Millisecond, "-1\n"},
		}
		for _, c := range cases {
			if err := f.SetCPUQuota(cpu, c.quota, c.period); err != nil {
				t.Fatalf("SetCPUQuota(%v, %v): %v", c.quota, c.period, err)
			}
			q, p, err := f.CPUQuota(cpu)
			if err != nil || q != c.wantQuota || p != c.wantPeriod {
				t.Errorf("CPUQuota after SetCPUQuota(%v, %v) = %v, %v, %v; want %v, %v", c.quota, c.period, q, p, err, c.wantQuota, c.wantPeriod)
			}
			if raw := readRaw(t, root, "cpu", cpu, "cpu.cfs_quota_us"); raw != c.raw {
				t.Errorf("cpu.cfs_quota_us = %q, want %q", raw, c.raw)
			}
		}
	})

	t.Run("CPU shares and idle", func(t *testing.T) {
		if err := f.SetCPUShares(cpu, 512); err != nil {
			t.Fatal(err)
		}
		if s, err := f.CPUShares(cpu); err != nil || s != 512 {
			t.Errorf("CPUShares = %d, %v; want 512", s, err)
		}
		err := f.SetCPUIdle(cpu, true)
		if errors.Is(err, cgroups.ErrUnsupported) {
			t.Skipf("kernel without v1 cpu.idle: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if raw := readRaw(t, root, "cpu", cpu, "cpu.idle"); raw != "1\n" {
			t.Errorf("cpu.idle = %q, want 1", raw)
		}
		// As SetCPUShares says: no shares while idle.
		if err := f.SetCPUShares(cpu, 1024); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("SetCPUShares while idle = %v, want EINVAL", err)
		}
		if err := f.SetCPUIdle(cpu, false); err != nil {
			t.Fatal(err)
		}
		if err := f.SetCPUShares(cpu, 1024); err != nil {
			t.Errorf("SetCPUShares after idle: %v", err)
		}
	})

	t.Run("memory limit", func(t *testing.T) {
		if err := f.SetMemoryLimit(mem, 256<<20); err != nil {
			t.Fatal(err)
		}
		if l, err := f.MemoryLimit(mem); err != nil || l != 256<<20 {
			t.Errorf("MemoryLimit = %d, %v; want 256 MiB", l, err)
		}
		if raw := readRaw(t, root, "memory", mem, "memory.limit_in_bytes"); raw != "268435456\n" {
			t.Errorf("memory.limit_in_bytes = %q", raw)
		}
		if err := f.SetMemoryLimit(mem, -1); err != nil {
			t.Fatal(err)
		}
		if l, err := f.MemoryLimit(mem); err != nil || l != cgroups.Unlimited {
			t.Errorf("MemoryLimit after unlimiting = %d, %v; want unlimited", l, err)
		}
	})

	t.Run("a process in the cgroup", func(t *testing.T) {
		helper, lines, done := startHelper(t)
		pid := helper.Process.Pid
		for ctl, p := range paths {
			if err := os.WriteFile(filepath.Join(root, ctl, p, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
				t.Fatalf("move helper into %s: %v", ctl, err)
			}
		}
		fmt.Fprintln(lines.in, "go") // it allocates 64 MiB and burns 200ms of CPU here
		if got := lines.next(t); got != "ready" {
			t.Fatalf("helper said %q", got)
		}

		if pids, err := f.Procs(cpu); err != nil || !slices.Equal(pids, []int{pid}) {
			t.Errorf("Procs = %v, %v; want [%d]", pids, err, pid)
		}
		if u, err := f.CPUUsage(cpuacct); err != nil || u < 150*time.Millisecond {
			t.Errorf("CPUUsage = %v, %v; want ≥ 150ms", u, err)
		}
		m, err := f.Memory(mem)
		if err != nil || m.Usage < 64<<20 || m.WorkingSet < 60<<20 || m.WorkingSet > m.Usage {
			t.Errorf("Memory = %+v, %v; want ≥ 64 MiB used", m, err)
		}

		// Anonymous memory without swap cannot be reclaimed: v1 refuses
		// a limit below it with EBUSY.
		if swapOn(t) {
			t.Log("swap is on: the kernel could swap instead of refusing; EBUSY not checked")
		} else {
			err := f.SetMemoryLimit(mem, 8<<20)
			if !errors.Is(err, cgroups.ErrBusy) {
				t.Errorf("SetMemoryLimit below usage = %v, want ErrBusy", err)
			}
			if l, _ := f.MemoryLimit(mem); l != cgroups.Unlimited {
				t.Errorf("refused limit left %d", l)
			}
		}

		if err := f.Kill(cpu); err != nil {
			t.Fatal(err)
		}
		wantKilled(t, "helper", done)
		if pids, err := f.Procs(cpu); err != nil || len(pids) != 0 {
			t.Errorf("Procs after Kill = %v, %v", pids, err)
		}
	})
}

// TestRealKernelHelper is the process TestRealKernelV1 runs in its
// cgroup: on a line from stdin it touches 64 MiB and burns 200ms of CPU,
// says "ready" and waits to be killed.
func TestRealKernelHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("run by TestRealKernelV1")
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	mem := make([]byte, 64<<20)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	start := cpuTime()
	for cpuTime()-start < 200*time.Millisecond {
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
	mem[0]++
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type lineIO struct {
	in  io.Writer
	out *bufio.Reader
}

func (l lineIO) next(t *testing.T) string {
	t.Helper()
	s, err := l.out.ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	return strings.TrimSpace(s)
}

func startHelper(t *testing.T) (*exec.Cmd, lineIO, *exited) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealKernelHelper$", "-test.v=false")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &exited{done: make(chan struct{})}
	r := bufio.NewReader(out)
	go func() {
		// Wait closes stdout; read to its end first is not needed as the
		// test reads its one line before Kill.
		e.err = cmd.Wait()
		close(e.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-e.done
	})
	return cmd, lineIO{in, r}, e
}

// ownCgroups maps each v1 controller to this process's cgroup in it.
func ownCgroups(t *testing.T) map[string]string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			own[ctl] = parts[2]
		}
	}
	for _, ctl := range []string{"cpu", "cpuacct", "memory"} {
		if own[ctl] == "" {
			t.Skipf("no %s line in /proc/self/cgroup", ctl)
		}
	}
	return own
}

// rmdirCgroup removes a test cgroup, waiting for killed processes to leave.
func rmdirCgroup(t *testing.T, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			t.Errorf("rmdir %s: %v", dir, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readRaw(t *testing.T, root, ctl, path, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ctl, path, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func swapOn(t *testing.T) bool {
	b, err := os.ReadFile("/proc/swaps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n") > 1 // a header line, then one per swap area
}

// compareWithFake checks that cgroupstest makes the files a new v1 cgroup
// has, holding what the kernel puts in them.
func compareWithFake(t *testing.T, root string, paths map[string]string) {
	tree := cgroupstest.V1(t, t.TempDir())
	tree.Add("x", cgroupstest.Usage{})
	// Files whose new-cgroup content the package parses must be equal;
	// for others a difference (another kernel's extra line) is logged.
	parsed := map[string]bool{
		"cpu.cfs_period_us": true, "cpu.cfs_quota_us": true, "cpu.shares": true, "cpu.idle": true,
		"cpuacct.usage": true, "memory.limit_in_bytes": true, "memory.usage_in_bytes": true, "cgroup.procs": true,
	}
	skip := map[string]bool{
		"cpuacct.usage_percpu": true, // one field per CPU: the fake has 4
		"memory.swappiness":    true, // the parent's value
		"memory.stat":          true, // compared by key below
	}
	for _, ctl := range []string{"cpu", "cpuacct", "memory"} {
		fakeDir := filepath.Dir(tree.File("x", ctl+".x"))
		entries, err := os.ReadDir(fakeDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() || skip[e.Name()] {
				continue
			}
			fake, _ := os.ReadFile(filepath.Join(fakeDir, e.Name()))
			real, err := os.ReadFile(filepath.Join(root, ctl, paths[ctl], e.Name()))
			switch {
			case err != nil && e.Name() == "cpu.idle":
				t.Logf("kernel without v1 cpu.idle")
			case err != nil:
				t.Errorf("%s: the fake has %s, the kernel does not: %v", ctl, e.Name(), err)
			case string(fake) != string(real) && parsed[e.Name()]:
				t.Errorf("%s/%s: fake %q, kernel %q", ctl, e.Name(), fake, real)
			case string(fake) != string(real):
				t.Logf("%s/%s: fake %q, kernel %q", ctl, e.Name(), fake, real)
			}
		}
	}
	keys := func(s string) []string {
		var k []string
		for line := range strings.Lines(s) {
			key, _, _ := strings.Cut(line, " ")
			k = append(k, key)
		}
		return k
	}
	fake := keys(tree.Read("x", "memory.stat") + "\n")
	real := keys(readRaw(t, root, "memory", paths["memory"], "memory.stat"))
	for _, k := range []string{"inactive_file", "total_inactive_file"} {
		if !slices.Contains(fake, k) || !slices.Contains(real, k) {
			t.Errorf("memory.stat key %s: in fake %v, in kernel %v", k, slices.Contains(fake, k), slices.Contains(real, k))
		}
	}
	if !slices.Equal(fake, real) {
		t.Logf("memory.stat keys differ:\nfake   %v\nkernel %v", fake, real)
	}
}
