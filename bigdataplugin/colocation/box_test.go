package colocation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

// The box's CPU: a CFS quota for the amount (at least the kernel's 1ms),
// the least weight or, with Idle, the idle class and no weight written
// (the kernel refuses one on an idle group); with cpuset, the whole cores
// the quota fills. Its memory limit never goes below what the
// box holds, nor below what its pods were granted.
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
			l, err := box.Enforce(Amount{MilliCPU: 1500, Memory: gib}, 0, true)
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
			if l, _ := box.Enforce(Amount{}, 0, false); l.CPUQuota != time.Millisecond {
				t.Errorf("quota %s for nothing, want the kernel's least 1ms", l.CPUQuota)
			}
			tree.Write("kubepods/besteffort", tc.file, "1024\n")
			box.Idle = true
			if _, err := box.Enforce(Amount{MilliCPU: 1000, Memory: 4 * gib}, 0, false); err != nil {
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

// The box's memory limit against what it may hold (target), what it holds
// (3 GiB) and what its pods were granted: the most of the three, so that
// memory granted to running pods comes back by eviction, never through
// the kernel's OOM killer at the box's limit.
func TestBoxMemoryKeepsGrants(t *testing.T) {
	for _, tc := range []struct {
		name            string
		target, granted int64
		want            int64
	}{
		{"target above all", 6 * gib, 5 * gib, 6 * gib},
		{"online grew: grants kept", gib, 5 * gib, 5 * gib},
		{"grants below what it holds", gib, 2 * gib, 3 * gib},
		{"nothing granted", gib, 0, 3 * gib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := cgroupstest.V1(t, t.TempDir())
			tree.AddPod(corev1.PodQOSBestEffort, "uid", cgroupstest.Usage{Memory: 3 * uint64(gib)})
			box := &Box{FS: tree.FS()}
			l, err := box.Enforce(Amount{MilliCPU: 1000, Memory: tc.target}, tc.granted, false)
			if err != nil {
				t.Fatal(err)
			}
			if l.Memory != tc.want {
				t.Errorf("limit %d MiB, want %d MiB", l.Memory>>20, tc.want>>20)
			}
			if got := strings.TrimSpace(tree.Read("kubepods/besteffort", "memory.limit_in_bytes")); got != fmt.Sprint(tc.want) {
				t.Errorf("memory.limit_in_bytes = %s, want %d", got, tc.want)
			}
		})
	}
}

// The box of a node of a shared machine is bound only to the whole cores
// within its node's CPUs: a cpuset beyond the node's the kernel refuses
// (v1) or ignores (v2), and the other cores are other nodes'. Released,
// it gets every CPU of its node, not of the machine.
func TestBoxOfANodeBindsOnlyItsCores(t *testing.T) {
	for _, l := range sharedLayouts[:2] {
		t.Run(l.name, func(t *testing.T) {
			tree := l.tree(t, t.TempDir())
			me := forNode(t, tree, node1)
			tree.Add(me.NodePath(), cgroupstest.Usage{})
			effective := map[cgroups.Version]string{cgroups.V1: "cpuset.effective_cpus", cgroups.V2: "cpuset.cpus.effective"}[tree.Version]
			tree.Write(me.NodePath(), "cpuset.cpus", "0-1\n")
			tree.Write(me.NodePath(), effective, "0-1\n")
			tree.AddPod(corev1.PodQOSBestEffort, "uid", cgroupstest.Usage{}) // the machine's box: not this node's
			tree.Add(me.PodPath(corev1.PodQOSBestEffort, "uid"), cgroupstest.Usage{})
			box := &Box{FS: me, Cores: []procstat.Core{{0}, {1}, {2}, {3}}}
			// 1.5 CPUs fill one whole core: the highest of the node's.
			l, err := box.Enforce(Amount{MilliCPU: 1500, Memory: gib}, 0, true)
			if err != nil || l.CPUs != "1" {
				t.Errorf("cpuset %q (%v), want 1, the node's highest core", l.CPUs, err)
			}
			if got := tree.Read(me.QOSPath(corev1.PodQOSBestEffort), "cpuset.cpus"); got != "1" {
				t.Errorf("box cpuset.cpus = %q, want 1", got)
			}
			if err := box.Release(); err != nil {
				t.Fatal(err)
			}
			if got := tree.Read(me.QOSPath(corev1.PodQOSBestEffort), "cpuset.cpus"); got != "0-1" {
				t.Errorf("released box cpuset.cpus = %q, want the node's 0-1", got)
			}
			if got := tree.Read("kubepods/besteffort", "cpuset.cpus"); got != map[cgroups.Version]string{cgroups.V1: "0-3", cgroups.V2: ""}[tree.Version] {
				t.Errorf("the machine's box cpuset.cpus = %q, written", got)
			}
		})
	}
}
