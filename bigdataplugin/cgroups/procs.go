package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// taskCtl is the hierarchy processes are listed from on v1: the kubelet
// makes every pod cgroup in each hierarchy, and the cpu one is the one the
// agent limits.
const taskCtl = cpuCtl

// Exists reports whether the cgroup exists (on v1, in the cpu hierarchy).
func (f *FS) Exists(path string) bool {
	dir, err := f.dir(taskCtl, path)
	if err != nil {
		return false
	}
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

// Children returns the paths of the cgroup's direct children (on v1, in
// the cpu hierarchy), sorted: for the big box, its pods' cgroups.
func (f *FS) Children(path string) ([]string, error) {
	return f.children(taskCtl, path)
}

func (f *FS) children(c controller, path string) ([]string, error) {
	dir, err := f.dir(c, path)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fileError("list", dir, "", err)
	}
	var kids []string
	for _, e := range entries {
		if e.IsDir() {
			kids = append(kids, filepath.Join(path, e.Name()))
		}
	}
	return kids, nil // ReadDir sorts by name
}

// descendants returns every cgroup below path in controller c's
// hierarchy, each parent before its children. Subtrees that vanish while
// being walked are left out; path itself vanishing is an error.
func (f *FS) descendants(c controller, path string) ([]string, error) {
	kids, err := f.children(c, path)
	if err != nil {
		return nil, err
	}
	var all []string
	for _, k := range kids {
		below, err := f.descendants(c, k)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		all = append(all, k)
		all = append(all, below...)
	}
	return all, nil
}

// Procs returns the pids of every process in the cgroup and its
// descendants (a pod's processes live in its containers' cgroups, below
// the pod's), sorted. v1 reads the cpu hierarchy.
func (f *FS) Procs(path string) ([]int, error) {
	pids, err := f.procsOf(path)
	if err != nil {
		return nil, err
	}
	tree, err := f.descendants(taskCtl, path)
	if err != nil {
		return nil, err
	}
	for _, p := range tree {
		more, err := f.procsOf(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a container ended
		}
		if err != nil {
			return nil, err
		}
		pids = append(pids, more...)
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// procsOf reads one cgroup's own cgroup.procs, a pid per line.
func (f *FS) procsOf(path string) ([]int, error) {
	s, err := f.read(taskCtl, path, "cgroup.procs")
	if err != nil {
		return nil, err
	}
	var pids []int
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		pid, err := strconv.Atoi(line)
		// A pid ≤ 0 would make kill(2) signal a process group or every
		// process; no kernel lists one.
		if err != nil || pid <= 0 {
			return nil, malformed(filepath.Join(f.dirs[taskCtl], path, "cgroup.procs"), s)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// killRounds bounds how often Kill lists and signals a tree whose
// processes keep forking.
const killRounds = 5

// Kill ends every process in the cgroup and its descendants, as the agent
// evicts a batch pod. On v2 with cgroup.kill (Linux ≥ 5.14) the kernel
// does it atomically; otherwise each pid Procs lists gets SIGKILL, in
// rounds until a round finds no process it has not signalled (children
// forked meanwhile); after 5 rounds that still found new ones it gives up
// with an error, and the caller may call again. A process that has already
// exited is no error. Kill returns once the signals are sent, not when the
// processes are gone; it never signals pid 1 or the calling process, which
// no pod cgroup holds.
func (f *FS) Kill(path string) error {
	dir, err := f.writableDir(taskCtl, path)
	if err != nil {
		return err
	}
	if f.version == V2 {
		err := f.writeIn(dir, "cgroup.kill", "1")
		if !errors.Is(err, ErrUnsupported) {
			return err
		}
	}
	self := os.Getpid()
	signalled := map[int]bool{1: true, self: true}
	for range killRounds {
		pids, err := f.Procs(path)
		if err != nil {
			return err
		}
		sent := 0
		for _, pid := range pids {
			if signalled[pid] {
				continue
			}
			signalled[pid] = true
			sent++
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("cgroups: kill pid %d of %s: %w", pid, path, err)
			}
		}
		if sent == 0 {
			return nil
		}
	}
	return fmt.Errorf("cgroups: kill %s: new processes still appearing after %d rounds of SIGKILL", path, killRounds)
}

// SetOOMScoreAdj writes pid's oom_score_adj (-1000..1000) under ProcRoot,
// so the kernel's OOM killer picks batch processes before online ones.
// A process that has exited is no error.
func (f *FS) SetOOMScoreAdj(pid, adj int) error {
	if pid <= 0 {
		return fmt.Errorf("cgroups: oom_score_adj: invalid pid %d", pid)
	}
	if adj < -1000 || adj > 1000 {
		return fmt.Errorf("cgroups: oom_score_adj %d of pid %d is outside -1000..1000", adj, pid)
	}
	root := f.ProcRoot
	if root == "" {
		root = "/proc"
	}
	name := filepath.Join(root, strconv.Itoa(pid), "oom_score_adj")
	err := f.writeFile(name, strconv.Itoa(adj))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil {
		return fileError("write", name, strconv.Itoa(adj), err)
	}
	return nil
}
