package colocation

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

// The box's CPU: a CFS quota for the amount (at least the kernel's 1ms),
// the least weight or, with Idle, the idle class and no weight written
// (the kernel refuses one on an idle group); with cpuset, the whole cores
// the quota fills. Its memory limit never goes below what the
// box holds.
func TestBoxEnforce(t *testing.T) {
	for _, tc := range []struct {
		name string
		tree func(cgroupstest.TB, string) *cgroupstest.Tree
		file string
	}{{"v1", cgroupstest.V1, "cpu.shares"}, {"v2", cgroupstest.V2, "cpu.weight"}} {
		t.Run(tc.name, func(t *testing.T) {
			tree := tc.tree(t, t.TempDir())
			tree.AddPod(corev1.PodQOSBestEffort, "uid", cgroupstest.Usage{Memory: 3 * uint64(gib)})
			cores := []procstat.Core{{0}, {1}, {2}, {3}}
			box := &Box{FS: tree.FS(), Cores: cores}
			l, err := box.Enforce(Amount{MilliCPU: 1500, Memory: gib}, true)
			if err != nil {
				t.Fatal(err)
			}
			if l.CPUQuota != 150*time.Millisecond || l.Memory != 3*gib || l.CPUs != "3" {
				t.Errorf("limits %+v, want 150ms, 3 GiB (what it holds, not 1 GiB), cpus 3 (the one whole core 1.5 fills)", l)
			}
			weight := strings.TrimSpace(tree.Read("kubepods/besteffort", tc.file))
			if weight != "2" && weight != "1" {
				t.Errorf("%s = %s, want the least", tc.file, weight)
			}
			if l, _ := box.Enforce(Amount{}, false); l.CPUQuota != time.Millisecond {
				t.Errorf("quota %s for nothing, want the kernel's least 1ms", l.CPUQuota)
			}
			tree.Write("kubepods/besteffort", tc.file, "1024\n")
			box.Idle = true
			if _, err := box.Enforce(Amount{MilliCPU: 1000, Memory: 4 * gib}, false); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(tree.Read("kubepods/besteffort", "cpu.idle")); got != "1" {
				t.Errorf("cpu.idle = %s", got)
			}
			if got := strings.TrimSpace(tree.Read("kubepods/besteffort", tc.file)); got != "1024" {
				t.Errorf("%s written on an idle group: %s", tc.file, got)
			}
		})
	}
}
