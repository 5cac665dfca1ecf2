package cgroups_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

// cpusetBox lays out kubepods (all CPUs) holding the big box with pod a
// (containers c1, c2) and pod b, and returns the box's cgroups, parents
// first.
func cpusetBox(tree *cgroupstest.Tree) []string {
	a := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
	tree.Add(a+"/c1", cgroupstest.Usage{})
	tree.Add(a+"/c2", cgroupstest.Usage{})
	b := tree.AddPod(corev1.PodQOSBestEffort, "b", cgroupstest.Usage{})
	return []string{box, a, a + "/c1", a + "/c2", b}
}

// v1CPUSetRules answers a cpuset.cpus write as cgroup v1 does, so a fake
// tree refuses what the kernel would: the new CPUs must be within the
// parent's (else EACCES) and must keep every child's (else EBUSY).
func v1CPUSetRules(t *testing.T, tree *cgroupstest.Tree) func(file, value string) error {
	hroot := filepath.Dir(tree.File(".", "cpuset.cpus"))
	read := func(dir string) []int {
		b, err := os.ReadFile(filepath.Join(dir, "cpuset.cpus"))
		if err != nil {
			t.Fatal(err)
		}
		cpus, err := procstat.ParseCPUList(string(b))
		if err != nil {
			t.Fatal(err)
		}
		return cpus
	}
	subset := func(a, b []int) bool {
		for _, c := range a {
			if !slices.Contains(b, c) {
				return false
			}
		}
		return true
	}
	return func(file, value string) error {
		if filepath.Base(file) != "cpuset.cpus" {
			return nil
		}
		dir := filepath.Dir(filepath.Join(tree.Root, file))
		trial, err := procstat.ParseCPUList(value)
		if err != nil {
			return &fs.PathError{Op: "write", Path: file, Err: syscall.EINVAL}
		}
		if dir != hroot && !subset(trial, read(filepath.Dir(dir))) {
			return &fs.PathError{Op: "write", Path: file, Err: syscall.EACCES}
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() && !subset(read(filepath.Join(dir, e.Name())), trial) {
				return &fs.PathError{Op: "write", Path: file, Err: syscall.EBUSY}
			}
		}
		return nil
	}
}

func TestSetCPUSetTreeV1Order(t *testing.T) {
	const a, b = "kubepods/besteffort/poda", "kubepods/besteffort/podb"
	c1, c2 := a+"/c1", a+"/c2"
	cases := []struct {
		name   string
		before map[string]string // box cgroup → cpuset.cpus; missing ones keep 0-3
		cpus   string
		want   []write // cgroup path, value
	}{
		{
			name: "shrink: children first, deepest first",
			cpus: "2-3",
			want: []write{{b, "2-3"}, {c2, "2-3"}, {c1, "2-3"}, {a, "2-3"}, {box, "2-3"}},
		},
		{
			name:   "grow: parents first",
			before: map[string]string{box: "2-3", a: "2-3", c1: "2-3", c2: "2-3", b: "2-3"},
			cpus:   "0-3",
			want:   []write{{box, "0-3"}, {a, "0-3"}, {c1, "0-3"}, {c2, "0-3"}, {b, "0-3"}},
		},
		{
			name:   "move: grow to the union, then shrink",
			before: map[string]string{box: "0-1", a: "0-1", c1: "0-1", c2: "0-1", b: "0-1"},
			cpus:   "1-2",
			want: []write{
				{box, "0-2"}, {a, "0-2"}, {c1, "0-2"}, {c2, "0-2"}, {b, "0-2"},
				{b, "1-2"}, {c2, "1-2"}, {c1, "1-2"}, {a, "1-2"}, {box, "1-2"},
			},
		},
		{
			name:   "uneven tree: only what differs is written",
			before: map[string]string{c1: "2", b: "0-1"},
			cpus:   "0-1",
			want:   []write{{c1, "0-2"}, {c2, "0-1"}, {c1, "0-1"}, {a, "0-1"}, {box, "0-1"}},
		},
		{name: "unchanged", cpus: "0-3", want: nil},
		{name: "unsorted list", cpus: "3,2", want: []write{{b, "2-3"}, {c2, "2-3"}, {c1, "2-3"}, {a, "2-3"}, {box, "2-3"}}},
	}
	for _, l := range layouts[:2] { // the v1 layouts
		for _, c := range cases {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				tree := l.make(t, t.TempDir())
				all := cpusetBox(tree)
				// Set the "before" values deepest first, as a kernel allows.
				for _, p := range slices.Backward(all) {
					if v, ok := c.before[p]; ok {
						tree.Write(p, "cpuset.cpus", v+"\n")
					}
				}
				f := tree.FS()
				rules := v1CPUSetRules(t, tree)
				got := recordWrites(f, tree.Root, rules)
				if err := f.SetCPUSetTree(box, c.cpus); err != nil {
					t.Fatalf("SetCPUSetTree: %v (writes %v)", err, *got)
				}
				hroot, _ := filepath.Rel(tree.Root, filepath.Dir(tree.File(".", "cpuset.cpus")))
				var rel []write
				for _, w := range *got {
					rel = append(rel, write{strings.TrimSuffix(strings.TrimPrefix(w.file, hroot+"/"), "/cpuset.cpus"), w.value})
				}
				if !slices.Equal(rel, c.want) {
					t.Errorf("writes\n %v\nwant\n %v", rel, c.want)
				}
				want, _ := procstat.ParseCPUList(c.cpus)
				for _, p := range all {
					if got := tree.Read(p, "cpuset.cpus"); got != procstat.FormatCPUList(want) {
						t.Errorf("%s cpuset.cpus = %q, want %q", p, got, procstat.FormatCPUList(want))
					}
				}
				if got := tree.Read("kubepods", "cpuset.cpus"); got != "0-3" {
					t.Errorf("the box's parent changed to %q", got)
				}
			})
		}
	}
}

func TestV1CPUSetRulesRefuseWrongOrder(t *testing.T) {
	// The fake kernel's rules are what make the order test mean
	// something: shrinking the box before its pods is refused as busy.
	tree := v1Tree(t)
	cpusetBox(tree)
	f := tree.FS()
	recordWrites(f, tree.Root, v1CPUSetRules(t, tree))
	err := f.SetCPUSet(box, "2-3")
	if !errors.Is(err, cgroups.ErrBusy) {
		t.Errorf("shrinking the parent first: error = %v, want ErrBusy", err)
	}
	err = f.SetCPUSet(box+"/poda", "0-4")
	if !errors.Is(err, syscall.EACCES) {
		t.Errorf("growing a child past its parent: error = %v, want EACCES", err)
	}
}

func TestSetCPUSetTreeSkipsEndedPods(t *testing.T) {
	tree := v1Tree(t)
	cpusetBox(tree)
	f := tree.FS()
	rules := v1CPUSetRules(t, tree)
	removed := false
	got := recordWrites(f, tree.Root, func(file, value string) error {
		if !removed { // pod b ends just as the first write comes
			removed = true
			tree.Remove(box + "/podb")
		}
		return rules(file, value)
	})
	if err := f.SetCPUSetTree(box, "3"); err != nil {
		t.Fatalf("SetCPUSetTree: %v", err)
	}
	if len(*got) != 5 || tree.Read(box, "cpuset.cpus") != "3" {
		t.Errorf("writes %v; box %q", *got, tree.Read(box, "cpuset.cpus"))
	}
}

func TestSetCPUSetTreeV2(t *testing.T) {
	// v2 has no subset rule; empty cpusets follow their parent and stay
	// empty.
	tree := cgroupstest.V2(t, t.TempDir())
	all := cpusetBox(tree)
	tree.Write(all[1], "cpuset.cpus", "0-3\n") // pod a is pinned
	f := tree.FS()
	got := recordWrites(f, tree.Root, nil)
	if err := f.SetCPUSetTree(box, "2"); err != nil {
		t.Fatal(err)
	}
	want := []write{{box + "/cpuset.cpus", "2"}, {all[1] + "/cpuset.cpus", "2"}}
	if !slices.Equal(*got, want) {
		t.Errorf("writes %v, want %v", *got, want)
	}
	for _, p := range all[2:] {
		if s, err := f.CPUSet(p); err != nil || s != "" {
			t.Errorf("CPUSet(%s) = %q, %v; want empty", p, s, err)
		}
	}
}

func TestSetCPUSet(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		tree.Add(box, cgroupstest.Usage{})
		f := tree.FS()
		cases := []struct {
			cpus, want, wantErr string
		}{
			{cpus: "0-1,3", want: "0-1,3"},
			{cpus: "3,1,0", want: "0-1,3"},
			{cpus: "2\n", want: "2"},
			{cpus: "", wantErr: "empty CPU list"},
			{cpus: "0-3:2/4", wantErr: "not a CPU number"},
			{cpus: "3-1", wantErr: "runs backwards"},
		}
		for _, c := range cases {
			err := f.SetCPUSet(box, c.cpus)
			if c.wantErr != "" {
				wantErrContaining(t, "SetCPUSet("+c.cpus+")", err, c.wantErr)
				wantErrContaining(t, "SetCPUSetTree("+c.cpus+")", f.SetCPUSetTree(box, c.cpus), c.wantErr)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, err := f.CPUSet(box); err != nil || got != c.want {
				t.Errorf("CPUSet after SetCPUSet(%q) = %q, %v; want %q", c.cpus, got, err, c.want)
			}
		}
	})
}

func TestCPUSetUnsupportedWithoutHierarchy(t *testing.T) {
	root := t.TempDir()
	tree := cgroupstest.V1(t, root)
	tree.Add(box, cgroupstest.Usage{})
	if err := os.RemoveAll(filepath.Join(root, "cpuset")); err != nil {
		t.Fatal(err)
	}
	f := tree.FS()
	if err := f.SetCPUSet(box, "0"); !errors.Is(err, cgroups.ErrUnsupported) {
		t.Errorf("SetCPUSet without a cpuset hierarchy: error = %v, want ErrUnsupported", err)
	}
	if _, err := f.CPUSet(box); !errors.Is(err, cgroups.ErrUnsupported) {
		t.Errorf("CPUSet without a cpuset hierarchy: error = %v, want ErrUnsupported", err)
	}
}

// EffectiveCPUs are the CPUs a cgroup's tasks may run on: its own cpuset
// or its parent's; without the cpuset hierarchy, or with the controller
// not enabled for the cgroup, ErrUnsupported, and for a cgroup that
// vanished fs.ErrNotExist.
func TestEffectiveCPUs(t *testing.T) {
	forEachLayout(t, func(t *testing.T, tree *cgroupstest.Tree) {
		p := tree.AddPod(corev1.PodQOSBestEffort, "a", cgroupstest.Usage{})
		f := tree.FS()
		if cpus, err := f.EffectiveCPUs(p); err != nil || !slices.Equal(cpus, []int{0, 1, 2, 3}) {
			t.Errorf("EffectiveCPUs = %v, %v; want the machine's 0-3", cpus, err)
		}
		file := map[cgroups.Version]string{cgroups.V1: "cpuset.effective_cpus", cgroups.V2: "cpuset.cpus.effective"}[tree.Version]
		tree.Write(p, file, "1,3\n")
		if cpus, err := f.EffectiveCPUs(p); err != nil || !slices.Equal(cpus, []int{1, 3}) {
			t.Errorf("EffectiveCPUs = %v, %v; want 1,3", cpus, err)
		}
		tree.Write(p, file, "one\n")
		wantErrContaining(t, "EffectiveCPUs of a malformed file", func() error { _, err := f.EffectiveCPUs(p); return err }(), file, "unexpected content")
		tree.RemoveFile(p, file)
		if _, err := f.EffectiveCPUs(p); !errors.Is(err, cgroups.ErrUnsupported) {
			t.Errorf("EffectiveCPUs without the file: error = %v, want ErrUnsupported", err)
		}
		tree.Remove(p)
		_, err := f.EffectiveCPUs(p)
		wantNotExist(t, "EffectiveCPUs of an ended pod", err)
	})
	root := t.TempDir()
	tree := cgroupstest.V1(t, root)
	tree.Add(box, cgroupstest.Usage{})
	if err := os.RemoveAll(filepath.Join(root, "cpuset")); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.FS().EffectiveCPUs(box); !errors.Is(err, cgroups.ErrUnsupported) {
		t.Errorf("EffectiveCPUs without a cpuset hierarchy: error = %v, want ErrUnsupported", err)
	}
}
