package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

// CPUSet returns the cgroup's cpuset.cpus as the kernel prints it
// ("0-3,8-11"; "" when empty, which on v2 means "the parent's").
func (f *FS) CPUSet(path string) (string, error) {
	s, err := f.read(cpusetCtl, path, "cpuset.cpus")
	if err != nil {
		return "", err
	}
	cpus, err := procstat.ParseCPUList(s)
	if err != nil {
		return "", malformed(filepath.Join(f.dirs[cpusetCtl], path, "cpuset.cpus"), s)
	}
	return procstat.FormatCPUList(cpus), nil
}

// EffectiveCPUs returns the CPUs the cgroup's tasks may run on: its own
// cpuset, or where it has none (v2's empty cpuset.cpus), its nearest
// ancestor's — v1's cpuset.effective_cpus, v2's cpuset.cpus.effective.
// Without the cpuset hierarchy (v1), or with the cpuset controller not
// enabled for the cgroup (v2), the error wraps ErrUnsupported.
func (f *FS) EffectiveCPUs(path string) ([]int, error) {
	file := "cpuset.cpus.effective"
	if f.version == V1 {
		file = "cpuset.effective_cpus"
	}
	dir, err := f.dir(cpusetCtl, path)
	if err != nil {
		return nil, err
	}
	s, err := f.read(cpusetCtl, path, file)
	if err != nil {
		if lerr := lacksFile("read", dir, file, err); lerr != nil {
			return nil, lerr
		}
		return nil, err
	}
	cpus, err := procstat.ParseCPUList(s)
	if err != nil {
		return nil, malformed(filepath.Join(dir, file), s)
	}
	return cpus, nil
}

// SetCPUSet writes the cgroup's cpuset.cpus, the CPUs its tasks may run
// on, in the kernel's list format ("2-3,6"). On v1 the kernel refuses a
// set that is not within the parent's or that leaves out a child's CPUs;
// SetCPUSetTree changes a whole tree in an order it accepts.
func (f *FS) SetCPUSet(path, cpus string) error {
	list, err := canonicalCPUs(cpus)
	if err != nil {
		return err
	}
	return f.write(cpusetCtl, path, "cpuset.cpus", list)
}

func canonicalCPUs(cpus string) (string, error) {
	list, err := procstat.ParseCPUList(cpus)
	if err != nil {
		return "", fmt.Errorf("cgroups: cpuset: %w", err)
	}
	if len(list) == 0 {
		return "", fmt.Errorf("cgroups: cpuset: empty CPU list (a cgroup without CPUs cannot run its tasks)")
	}
	return procstat.FormatCPUList(list), nil
}

// SetCPUSetTree sets cpuset.cpus of the cgroup and of every cgroup below
// it to cpus, e.g. to move the big box and all its pods onto the CPUs
// online work leaves. v1 requires each cgroup's CPUs to be within its
// parent's at every moment, so the tree is changed in two passes: first
// each cgroup that lacks some of the new CPUs grows to its old CPUs plus
// the new ones, parents before children; then each cgroup that has CPUs
// beyond the new ones shrinks to them, children (deepest first) before
// parents. A pure grow or shrink writes each cgroup once, in the one
// order the kernel accepts.
//
// Descendants that vanish meanwhile (pods ending) are skipped; on v2,
// descendants whose cpuset.cpus is empty inherit the parent's and are left
// so. Cgroups are never created: a new v1 cpuset cgroup has no CPUs and
// no memory nodes, and making one usable is the kubelet's business.
func (f *FS) SetCPUSetTree(path, cpus string) error {
	if _, err := canonicalCPUs(cpus); err != nil {
		return err
	}
	target, _ := procstat.ParseCPUList(cpus)
	if _, err := f.writableDir(cpusetCtl, path); err != nil {
		return err
	}
	below, err := f.descendants(cpusetCtl, path) // parents before children
	if err != nil {
		return err
	}
	type cgroup struct {
		path string
		cpus []int
	}
	var tree []cgroup
	for _, p := range append([]string{path}, below...) {
		s, err := f.CPUSet(p)
		if p != path && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if p != path && f.version == V2 && s == "" {
			continue
		}
		cur, _ := procstat.ParseCPUList(s)
		tree = append(tree, cgroup{p, cur})
	}
	for i, c := range tree {
		grown := procstat.FormatCPUList(append(slices.Clone(c.cpus), target...))
		if grown != procstat.FormatCPUList(c.cpus) {
			if err := f.setCPUSetIn(path, c.path, grown); err != nil {
				return err
			}
			tree[i].cpus, _ = procstat.ParseCPUList(grown)
		}
	}
	want := procstat.FormatCPUList(target)
	for _, c := range slices.Backward(tree) {
		if procstat.FormatCPUList(c.cpus) != want {
			if err := f.setCPUSetIn(path, c.path, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// setCPUSetIn writes one cgroup of top's tree; a descendant that vanished
// is skipped, top itself vanishing is an error.
func (f *FS) setCPUSetIn(top, p, cpus string) error {
	err := f.write(cpusetCtl, p, "cpuset.cpus", cpus)
	if p != top && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
