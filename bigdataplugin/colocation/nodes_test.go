package colocation

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/protos/yarn/records"
)

// Several nodes on one machine (kind-style): each kubelet has a cgroup
// subtree of its own, its --cgroup-root, which the agent is told as
// Config.NodeCgroup.
const (
	node1 = "/weft-node-1"
	node2 = "/weft-node-2"
)

// sharedLayout is how a machine the nodes share lays out its cgroups.
type sharedLayout struct {
	name   string
	tree   func(cgroupstest.TB, string) *cgroupstest.Tree
	driver cgroups.Driver
}

// sharedLayouts are both cgroup versions, and the systemd driver, which
// names the node's cgroups otherwise than its --cgroup-root.
var sharedLayouts = []sharedLayout{
	{"v1", cgroupstest.V1, cgroups.Cgroupfs},
	{"v2", cgroupstest.V2, cgroups.Cgroupfs},
	{"v2 systemd", cgroupstest.V2, cgroups.Systemd},
}

// forNode is tree's FS for the node whose kubelet's --cgroup-root is
// root ("": the whole machine).
func forNode(t *testing.T, tree *cgroupstest.Tree, root string) *cgroups.FS {
	t.Helper()
	f, err := tree.FS().ForNode(root)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sharedMachine lays out a machine in l: on the node whose --cgroup-root
// is root an online pod (uid-web) and a batch pod (uid-low), on node2 a
// busy online pod (uid-busy), all idle yet. It returns the tree, the
// node's FS and the three pods' cgroups.
func sharedMachine(t *testing.T, l sharedLayout, root string) (tree *cgroupstest.Tree, me *cgroups.FS, web, low, busy string) {
	t.Helper()
	tree = l.tree(t, t.TempDir()).WithDriver(l.driver)
	me = forNode(t, tree, root)
	web = me.PodPath(corev1.PodQOSBurstable, "uid-web")
	low = me.PodPath(corev1.PodQOSBestEffort, "uid-low")
	busy = forNode(t, tree, node2).PodPath(corev1.PodQOSBurstable, "uid-busy")
	for _, p := range []string{web, low, busy} {
		tree.Add(p, cgroupstest.Usage{})
	}
	return tree, me, web, low, busy
}

// limitNode sets the node cgroup path's CFS quota (per 100ms) and memory
// limit (negative: none), as whoever made the node does: the agent
// never writes the node's root, so the machine's FS does.
func limitNode(t *testing.T, tree *cgroupstest.Tree, path string, quota time.Duration, memory int64) {
	t.Helper()
	machine := tree.FS()
	if err := machine.SetCPUQuota(path, quota, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := machine.SetMemoryLimit(path, memory); err != nil {
		t.Fatal(err)
	}
}

// newSharedNode is a fake node whose agent is told it is the cgroup
// root of a machine it shares.
func newSharedNode(t *testing.T, tree *cgroupstest.Tree, root string, objs ...client.Object) *node {
	n := newNode(t, tree, objs...)
	n.nodeCgroup = root
	n.agent = n.newAgent()
	return n
}

// The Meter reads /proc on a whole machine, whatever cgroups the
// machine holds; on a node of a shared machine it reads the node's
// cgroup — its CPU time and working set — and not /proc, which counts
// the other node's busy CPU and memory too. Online usage is the node's
// less its batch pods' either way.
func TestMeterMeasuresOnlyItsNode(t *testing.T) {
	for _, tc := range []struct {
		name, root string
		want       Usage
	}{
		{"a whole machine is measured from /proc", "",
			Usage{Online: Amount{MilliCPU: 4000, Memory: 19 * gib}, Batch: Amount{MilliCPU: 500, Memory: gib}, NodeMemory: 20 * gib}},
		{"a node of a shared machine is measured from its cgroup", node1,
			Usage{Online: Amount{MilliCPU: 1000, Memory: 2 * gib}, Batch: Amount{MilliCPU: 500, Memory: gib}, NodeMemory: 3 * gib,
				Capacity: Amount{MilliCPU: cgroupstest.CPUs * 1000, Memory: 32 * gib}}},
	} {
		for _, l := range sharedLayouts {
			t.Run(tc.name+"/"+l.name, func(t *testing.T) {
				tree, me, web, low, busy := sharedMachine(t, l, tc.root)
				proc := t.TempDir()
				writeProc(t, proc, 0, 8*gib)
				m := &Meter{FS: me, ProcRoot: proc, NumCPU: cgroupstest.CPUs}
				pods := []PodCgroup{{UID: "uid-low", Path: low}}
				if _, _, ok, err := m.Measure(t0, pods); ok || err != nil {
					t.Fatalf("first reading: ok %t, %v; want primed", ok, err)
				}

				// A second in which the node's online pod used a CPU and
				// 2 GiB (and 1 GiB of inactive page cache, which is not
				// its working set), its batch pod half a CPU and 1 GiB,
				// and the other node three CPUs and 16 GiB: /proc shows
				// the machine, 4.5 CPUs and 20 GiB.
				tree.SetUsage(web, cgroupstest.Usage{CPU: time.Second, Memory: 3 * uint64(gib), InactiveFile: uint64(gib)})
				tree.SetUsage(low, cgroupstest.Usage{CPU: 500 * time.Millisecond, Memory: uint64(gib)})
				tree.SetUsage(busy, cgroupstest.Usage{CPU: 3 * time.Second, Memory: 16 * uint64(gib)})
				writeProc(t, proc, 4500*time.Millisecond, 20*gib)
				u, perPod, ok, err := m.Measure(t0.Add(time.Second), pods)
				if err != nil || !ok {
					t.Fatalf("ok %t, %v", ok, err)
				}
				want := tc.want
				want.At = t0.Add(time.Second)
				if u != want {
					t.Errorf("usage %+v\nwant  %+v", u, want)
				}
				if p := perPod["uid-low"]; p != (Amount{MilliCPU: 500, Memory: gib}) {
					t.Errorf("batch pod %+v, want 500m 1 GiB", p)
				}
			})
		}
	}
}

// A node's capacity is its cgroup's limits where it sets them — its CFS
// quota or its CPUs, whichever is less, and its memory limit — else the
// machine's (its CPUs, /proc's MemTotal).
func TestMeterNodeCapacityFromItsLimits(t *testing.T) {
	const none = -1
	for _, tc := range []struct {
		name  string
		quota time.Duration
		cpus  string
		mem   int64
		want  Amount
	}{
		{"no limits: the machine's", none, "", none, Amount{MilliCPU: 4000, Memory: 32 * gib}},
		{"a CFS quota", 150 * time.Millisecond, "", none, Amount{MilliCPU: 1500, Memory: 32 * gib}},
		{"a cpuset", none, "0-1", none, Amount{MilliCPU: 2000, Memory: 32 * gib}},
		{"a quota beyond the cpuset: the cpuset", 300 * time.Millisecond, "0-1", none, Amount{MilliCPU: 2000, Memory: 32 * gib}},
		{"a cpuset beyond the quota: the quota", 150 * time.Millisecond, "0-2", none, Amount{MilliCPU: 1500, Memory: 32 * gib}},
		{"a memory limit", none, "", 6 * gib, Amount{MilliCPU: 4000, Memory: 6 * gib}},
	} {
		for _, l := range sharedLayouts[:2] {
			t.Run(tc.name+"/"+l.name, func(t *testing.T) {
				tree := l.tree(t, t.TempDir())
				me := forNode(t, tree, node1)
				tree.Add(me.NodePath(), cgroupstest.Usage{})
				limitNode(t, tree, me.NodePath(), tc.quota, tc.mem)
				if tc.cpus != "" {
					effective := map[cgroups.Version]string{cgroups.V1: "cpuset.effective_cpus", cgroups.V2: "cpuset.cpus.effective"}[tree.Version]
					tree.Write(me.NodePath(), "cpuset.cpus", tc.cpus+"\n")
					tree.Write(me.NodePath(), effective, tc.cpus+"\n")
				}
				proc := t.TempDir()
				writeProc(t, proc, 0, 8*gib)
				m := &Meter{FS: me, ProcRoot: proc, NumCPU: cgroupstest.CPUs}
				m.Measure(t0, nil)
				u, _, ok, err := m.Measure(t0.Add(time.Second), nil)
				if err != nil || !ok || u.Capacity != tc.want {
					t.Errorf("capacity %+v (ok %t, %v), want %+v", u.Capacity, ok, err, tc.want)
				}
			})
		}
	}
}

// The agent of a node of a shared machine offers watermark × the node's
// capacity (its cgroup's limits, though the Node's allocatable shows the
// whole machine) less the node's own online usage — not the machine's —
// and bounds the big box under the node's cgroup, never the machine's
// kubepods.
func TestAgentOfANodeOfASharedMachine(t *testing.T) {
	for _, l := range sharedLayouts {
		t.Run(l.name, func(t *testing.T) {
			tree, me, web, low, busy := sharedMachine(t, l, node1)
			// The node may use 3 CPUs and 16 GiB of the machine's 4 and
			// 32 GiB; its Node shows the machine's allocatable, 8 CPUs.
			limitNode(t, tree, me.NodePath(), 300*time.Millisecond, 16*gib)
			n := newSharedNode(t, tree, node1, newBatchPod("low", "uid-low", records.TierLow, "1000", "2Gi", t0, ""))
			n.tick(0)

			tree.SetUsage(web, cgroupstest.Usage{CPU: time.Second, Memory: 2 * uint64(gib)})
			tree.SetUsage(low, cgroupstest.Usage{CPU: 500 * time.Millisecond, Memory: uint64(gib)})
			tree.SetUsage(busy, cgroupstest.Usage{CPU: 2 * time.Second, Memory: 20 * uint64(gib)})
			n.used = 24 * gib
			n.tick(3500 * time.Millisecond) // /proc: the machine
			// Online: the node's 1.5 CPUs less its batch pod's 0.5, and its
			// 3 GiB less the batch pod's 1 GiB (/proc would say 3000m and
			// 23 GiB). 80% of 3000m − 1000m; 85% of 16 GiB − 2 GiB.
			wantMem := pctOf(16*gib, 85) - 2*gib
			if c, m, _ := n.published(); c != 1400 || m != wantMem {
				t.Errorf("published %dm %d bytes, want 1400m %d", c, m, wantMem)
			}
			box := me.QOSPath(corev1.PodQOSBestEffort)
			if q, _, err := me.CPUQuota(box); err != nil || q != 140*time.Millisecond {
				t.Errorf("box %s quota %s (%v), want 140ms", box, q, err)
			}
			if lim, err := me.MemoryLimit(low); err != nil || lim != 2*gib {
				t.Errorf("batch pod memory limit %d (%v), want its request 2 GiB", lim, err)
			}
			machine := tree.FS()
			if _, _, err := machine.CPUQuota(machine.QOSPath(corev1.PodQOSBestEffort)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the machine's BestEffort cgroup: %v, want none made", err)
			}
		})
	}
}

// Two agents on one machine, each told its own node's cgroup, each bound
// their own node's box only: when online work rises on one node and its
// box shrinks, not a file of the other node's subtree changes.
func TestTwoNodesOnOneMachineBoundOnlyTheirOwnBoxes(t *testing.T) {
	for _, l := range sharedLayouts {
		t.Run(l.name, func(t *testing.T) {
			tree := l.tree(t, t.TempDir()).WithDriver(l.driver)
			fs1, fs2 := forNode(t, tree, node1), forNode(t, tree, node2)
			web1 := fs1.PodPath(corev1.PodQOSBurstable, "uid-web-1")
			for _, p := range []string{web1, fs2.PodPath(corev1.PodQOSBurstable, "uid-web-2"),
				fs1.PodPath(corev1.PodQOSBestEffort, "uid-low-1"), fs2.PodPath(corev1.PodQOSBestEffort, "uid-low-2")} {
				tree.Add(p, cgroupstest.Usage{Memory: uint64(gib) / 2})
			}
			a := newSharedNode(t, tree, node1, newBatchPod("low", "uid-low-1", records.TierLow, "1000", "1Gi", t0, ""))
			b := newSharedNode(t, tree, node2, newBatchPod("low", "uid-low-2", records.TierLow, "1000", "1Gi", t0, ""))
			for _, n := range []*node{a, b} {
				n.tick(0)
				n.tick(0)
			}
			box1, box2 := fs1.QOSPath(corev1.PodQOSBestEffort), fs2.QOSPath(corev1.PodQOSBestEffort)
			quota := func(f *cgroups.FS, box string) time.Duration {
				t.Helper()
				q, _, err := f.CPUQuota(box)
				if err != nil {
					t.Fatal(err)
				}
				return q
			}
			// Each node may use the machine's 4 CPUs (its cpuset): 80%.
			if q1, q2 := quota(fs1, box1), quota(fs2, box2); q1 != 320*time.Millisecond || q2 != 320*time.Millisecond {
				t.Fatalf("boxes' quotas %s and %s, want 320ms each", q1, q2)
			}
			before := subtreeFiles(t, tree, fs2.NodePath())

			// Node 1's online pod takes 3 CPUs: its box shrinks.
			for i := 1; i <= 2; i++ {
				tree.SetUsage(web1, cgroupstest.Usage{CPU: time.Duration(i) * 3 * time.Second, Memory: uint64(gib) / 2})
				a.tick(0)
			}
			if q := quota(fs1, box1); q != 20*time.Millisecond {
				t.Errorf("node 1's box quota %s with its online work at 3 CPUs, want 20ms", q)
			}
			after := subtreeFiles(t, tree, fs2.NodePath())
			for name, was := range before {
				if now, ok := after[name]; !ok || now != was {
					t.Errorf("node 2's %s changed: %q → %q", name, was, now)
				}
			}
			if len(after) != len(before) {
				t.Errorf("node 2's subtree had %d files, has %d", len(before), len(after))
			}
		})
	}
}

// subtreeFiles are the files of cgroup path and its descendants in every
// hierarchy of tree, by name, with their content.
func subtreeFiles(t *testing.T, tree *cgroupstest.Tree, path string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(tree.Root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tree.Root, name)
		if !slices.Contains(strings.Split(filepath.Dir(rel), string(filepath.Separator)), path) {
			return nil
		}
		b, err := os.ReadFile(name)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no files under %s", path)
	}
	return files
}

// An agent told a node cgroup that does not exist goes blind, as for
// any file it cannot read: it offers nothing and says which cgroup is
// missing; once the cgroup is there, it offers again.
func TestAgentOfAMissingNodeCgroupIsBlind(t *testing.T) {
	for _, l := range sharedLayouts {
		t.Run(l.name, func(t *testing.T) {
			tree := l.tree(t, t.TempDir()).WithDriver(l.driver)
			tree.Add(forNode(t, tree, node2).QOSPath(corev1.PodQOSBestEffort), cgroupstest.Usage{})
			n := newSharedNode(t, tree, node1)
			n.tick(0)
			n.tick(time.Second)
			if c, m, ok := n.published(); !ok || c != 0 || m != 0 {
				t.Errorf("offers %dm %d bytes (published %t) without its node's cgroup", c, m, ok)
			}
			me := forNode(t, tree, node1)
			if e := n.event(ReasonBlind); !strings.Contains(e, "node's cgroup "+me.NodePath()+" is missing") {
				t.Errorf("event %q, want one naming the missing cgroup %s", e, me.NodePath())
			}

			tree.Add(me.QOSPath(corev1.PodQOSBestEffort), cgroupstest.Usage{})
			n.tick(time.Second)
			n.tick(time.Second)
			if c, _, _ := n.published(); c == 0 {
				t.Error("nothing offered once the node's cgroup is there")
			}
			if e := n.event(ReasonRecovered); e == "" {
				t.Error("no Event for the recovery")
			}
		})
	}
}

// The node's cgroup is a flag of each node: the cluster-wide ConfigMap
// cannot name it, merging it keeps the flag's, and one that would leave
// the hierarchy or name another cgroup than the kubelet's is refused.
func TestNodeCgroupIsEachNodesFlag(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeCgroup = node1
	if _, err := cfg.Merge("nodeCgroup: /weft-node-2\n"); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("a ConfigMap naming the node cgroup: %v, want an unknown field", err)
	}
	if got, err := cfg.Merge("cpuWatermarkPercent: 70\n"); err != nil || got.NodeCgroup != node1 {
		t.Errorf("merged node cgroup %q (%v), want the flag's %s", got.NodeCgroup, err, node1)
	}
	for _, bad := range []string{"/weft-node-1/../weft-node-2", "/a//b", "./a"} {
		cfg.NodeCgroup = bad
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "node cgroup") {
			t.Errorf("node cgroup %q: %v, want refused", bad, err)
		}
	}
	for _, good := range []string{"", "/", "/weft-node-1", "weft-node-1", "/kind/weft-node-1/"} {
		cfg.NodeCgroup = good
		if err := cfg.Validate(); err != nil {
			t.Errorf("node cgroup %q: %v", good, err)
		}
	}
}
