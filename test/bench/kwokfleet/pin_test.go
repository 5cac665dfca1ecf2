package kwokfleet

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"
)

func TestSplitCPUs(t *testing.T) {
	four := cpuset.New(0, 1, 2, 3)
	for _, tc := range []struct {
		list          string
		allowed       cpuset.CPUSet
		wantCP, wantR string
		wantErr       string
	}{
		{list: "0", allowed: cpuset.New(0, 1), wantCP: "0", wantR: "1"},
		{list: "1-2", allowed: four, wantCP: "1-2", wantR: "0,3"},
		{list: "0,3", allowed: four, wantCP: "0,3", wantR: "1-2"},
		{list: "0-1", allowed: cpuset.New(0, 1), wantErr: "leave none"},
		{list: "2", allowed: cpuset.New(0, 1), wantErr: "not all of them"},
		{list: "x", allowed: four, wantErr: `"x"`},
		{list: "", allowed: four, wantErr: "none"},
	} {
		got, err := splitCPUs(tc.list, tc.allowed)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q of %s: error %v, want one saying %q", tc.list, tc.allowed, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q of %s: %v", tc.list, tc.allowed, err)
			continue
		}
		if got.controlPlane.String() != tc.wantCP || got.rest.String() != tc.wantR {
			t.Errorf("%q of %s: control plane %s, rest %s; want %s, %s", tc.list, tc.allowed, got.controlPlane, got.rest, tc.wantCP, tc.wantR)
		}
	}
}

// TestPinProcess pins a running child, every thread of it, and reads the
// kernel's record of where its threads may run.
func TestPinProcess(t *testing.T) {
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Size() < 2 {
		t.Skipf("one CPU (%s): nothing to pin apart", allowed)
	}
	one := cpuset.New(allowed.List()[allowed.Size()-1])
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := pinProcess(cmd.Process.Pid, one); err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			got = strings.TrimSpace(v)
		}
	}
	if got != one.String() {
		t.Errorf("child runs on CPUs %q after pinning, want %s", got, one)
	}
	if err := pinProcess(1<<30, one); err == nil {
		t.Error("pinning a process that does not exist: no error")
	}
}
