package cgroups_test

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
)

func TestProcsChildrenExists(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		a := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{}, 100)
		tree.Add(a+"/c1", cgroupstest.Usage{}, 102, 101)
		tree.Add(a+"/c1/sub", cgroupstest.Usage{}, 103)
		tree.Add(a+"/c2", cgroupstest.Usage{})
		b := tree.AddPod(corev1.PodQOSBestEffort, "b", cgroupstest.Usage{}, 200)
		online := tree.AddPod(corev1.PodQOSBurstable, "web", cgroupstest.Usage{}, 300)
		f := tree.FS()

		procs := []struct {
			path string
			want []int
		}{
			{a + "/c1/sub", []int{103}},
			{a + "/c2", nil},
			{a, []int{100, 101, 102, 103}},
			{b, []int{200}},
			{box, []int{100, 101, 102, 103, 200}},
			{"kubepods", []int{100, 101, 102, 103, 200, 300}},
			{online, []int{300}},
		}
		for _, c := range procs {
			if got, err := f.Procs(c.path); err != nil || !slices.Equal(got, c.want) {
				t.Errorf("Procs(%s) = %v, %v; want %v", c.path, got, err, c.want)
			}
		}

		children := []struct {
			path string
			want []string
		}{
			{box, []string{a, b}},
			{a, []string{a + "/c1", a + "/c2"}},
			{a + "/c1/sub", nil},
			{"kubepods", []string{"kubepods/besteffort", "kubepods/burstable"}},
			{".", []string{"kubepods"}},
		}
		for _, c := range children {
			if got, err := f.Children(c.path); err != nil || !slices.Equal(got, c.want) {
				t.Errorf("Children(%s) = %q, %v; want %q", c.path, got, err, c.want)
			}
		}

		for p, want := range map[string]bool{a: true, a + "/c1/sub": true, box: true, ".": true, box + "/podz": false, "": false} {
			if got := f.Exists(p); got != want {
				t.Errorf("Exists(%q) = %v, want %v", p, got, want)
			}
		}

		// A container ending while the pod is listed is skipped.
		tree.Remove(a + "/c1")
		if got, err := f.Procs(box); err != nil || !slices.Equal(got, []int{100, 200}) {
			t.Errorf("Procs(box) after a container ended = %v, %v", got, err)
		}
	})
}

// exited is a started process's end: done closes when it has been
// waited for, err is then Wait's answer.
type exited struct {
	done chan struct{}
	err  error
}

// sleeper starts a process to be killed.
func sleeper(t *testing.T) (*exec.Cmd, *exited) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &exited{done: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		close(e.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-e.done
	})
	return cmd, e
}

func wantKilled(t *testing.T, what string, e *exited) {
	t.Helper()
	select {
	case <-e.done:
		var ee *exec.ExitError
		if !errors.As(e.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("%s ended with %v, want SIGKILL", what, e.err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("%s still running", what)
	}
}

// gonePid is above the kernel's largest pid_max (2^22): kill(2) answers
// ESRCH, as for a process that exited since it was listed.
const gonePid = 1<<22 + 1

func TestKillSignalsEachProcess(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			tree := l.make(t, t.TempDir())
			p1, done1 := sleeper(t)
			p2, done2 := sleeper(t)
			a := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{}, p1.Process.Pid, gonePid)
			// The caller's own pid never gets the signal (if it did, this
			// test would not report).
			tree.Add(a+"/c1", cgroupstest.Usage{}, p2.Process.Pid, os.Getpid())
			if tree.Version == cgroups.V2 {
				tree.RemoveFile(a, "cgroup.kill") // Linux < 5.14
			}
			if err := tree.FS().Kill(a); err != nil {
				t.Fatal(err)
			}
			wantKilled(t, "pod process", done1)
			wantKilled(t, "container process", done2)
		})
	}
}

func TestKillV2UsesCgroupKill(t *testing.T) {
	tree := cgroupstest.V2(t, t.TempDir())
	p, _ := sleeper(t)
	a := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{}, p.Process.Pid)
	if err := tree.FS().Kill(a); err != nil {
		t.Fatal(err)
	}
	if got := tree.Read(a, "cgroup.kill"); got != "1" {
		t.Errorf("cgroup.kill = %q, want 1", got)
	}
	// The kernel does the killing: no signal of Kill's own.
	if err := syscall.Kill(p.Process.Pid, 0); err != nil {
		t.Errorf("process was signalled: %v", err)
	}
}
