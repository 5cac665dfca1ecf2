package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Driver is the kubelet's cgroup driver (its --cgroup-driver flag), which
// decides how pod and QoS cgroups are named.
type Driver string

const (
	Cgroupfs Driver = "cgroupfs"
	Systemd  Driver = "systemd"
)

var (
	// ErrBusy is wrapped by a write the kernel refused with EBUSY: on v1,
	// a memory limit below what the kernel could reclaim to, or a cpuset
	// that would leave a child's CPUs outside its parent's. The caller
	// may retry later or with another value.
	ErrBusy = errors.New("cgroups: kernel refused the value as busy")
	// ErrUnsupported is wrapped when a cgroup exists but this kernel or
	// hierarchy lacks the file (cpu.idle before Linux 5.15 on v1,
	// cgroup.kill before 5.14, cpuset without its hierarchy).
	ErrUnsupported = errors.New("cgroups: not supported by this kernel or cgroup hierarchy")
)

// Unlimited is what CPUQuota and MemoryLimit return, and what SetCPUQuota
// and SetMemoryLimit take, for "no limit" (any negative value will do as
// an argument).
const Unlimited = -1

// FS reads and writes one host's cgroup files. Paths given to its methods
// are cgroup paths relative to each hierarchy's root, as QOSPath and
// PodPath return them ("kubepods/besteffort"); "." is the root cgroup,
// which FS reads but never writes, nor the node's root cgroup (ForNode).
// An FS holds no state beyond its directories and the node's root, and is
// safe for concurrent use.
type FS struct {
	// ProcRoot is the proc filesystem SetOOMScoreAdj writes to; "/proc"
	// when empty.
	ProcRoot string

	root    string
	version Version
	driver  Driver
	// node is the kubelet's --cgroup-root, its levels' names; nil when it
	// is the hierarchy's root (ForNode).
	node []string
	dirs map[controller]string // hierarchy directory of each controller
	// writeFile writes one value to one kernel file; tests wrap it to
	// see the order of writes and to refuse values as the kernel would.
	writeFile func(name, value string) error
}

// New returns an FS for the cgroup filesystem of version v mounted at
// root (normally /sys/fs/cgroup), whose pod cgroups the kubelet names
// with driver d. It checks that root is laid out as v says.
func New(root string, v Version, d Driver) (*FS, error) {
	if d != Cgroupfs && d != Systemd {
		return nil, fmt.Errorf("cgroups: unknown cgroup driver %q (want %q or %q)", d, Cgroupfs, Systemd)
	}
	f := &FS{root: root, version: v, driver: d, writeFile: writeKernelFile}
	switch v {
	case V1:
		dirs, err := v1Hierarchies(root)
		if err != nil {
			return nil, err
		}
		f.dirs = dirs
	case V2:
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
			return nil, fmt.Errorf("cgroups: %s is not a cgroup v2 root: %w", root, err)
		}
		f.dirs = map[controller]string{cpuCtl: root, cpuacctCtl: root, memoryCtl: root, cpusetCtl: root}
	default:
		return nil, fmt.Errorf("cgroups: unknown cgroup version %v", v)
	}
	return f, nil
}

// Open detects root's cgroup version (Detect) and returns an FS for it.
func Open(root string, d Driver) (*FS, error) {
	v, err := Detect(root)
	if err != nil {
		return nil, err
	}
	return New(root, v, d)
}

// Version is the cgroup version f reads and writes.
func (f *FS) Version() Version { return f.version }

// Driver is the kubelet cgroup driver f names pod cgroups by.
func (f *FS) Driver() Driver { return f.driver }

// Root is the directory f was made for.
func (f *FS) Root() string { return f.root }

// dir returns the directory of cgroup path in controller c's hierarchy.
// It refuses absolute paths, paths leaving the hierarchy and the empty
// path: an empty path is a caller's bug (e.g. PodPath of an unknown QoS
// class) that must not turn into the root cgroup.
func (f *FS) dir(c controller, path string) (string, error) {
	if !filepath.IsLocal(path) {
		return "", fmt.Errorf("cgroups: %q is not a cgroup path relative to the hierarchy root", path)
	}
	base, ok := f.dirs[c]
	if !ok {
		return "", fmt.Errorf("cgroups: no %s hierarchy under %s: %w", c, f.root, ErrUnsupported)
	}
	return filepath.Join(base, path), nil
}

// writableDir is dir for writes, which the root cgroup never gets, nor
// the node's own: their limits are the whole node's, and Kill of them
// would end every process of the node.
func (f *FS) writableDir(c controller, path string) (string, error) {
	switch filepath.Clean(path) {
	case ".":
		return "", fmt.Errorf("cgroups: refusing to write the root cgroup (path %q)", path)
	case f.NodePath():
		return "", fmt.Errorf("cgroups: refusing to write the node's root cgroup (path %q)", path)
	}
	return f.dir(c, path)
}

// read returns the content of file in cgroup path of controller c.
func (f *FS) read(c controller, path, file string) (string, error) {
	dir, err := f.dir(c, path)
	if err != nil {
		return "", err
	}
	name := filepath.Join(dir, file)
	b, err := os.ReadFile(name)
	if err != nil {
		return "", fileError("read", name, "", err)
	}
	return string(b), nil
}

// write writes value to file in cgroup path of controller c. When the
// file is missing but the cgroup is not, the error wraps ErrUnsupported
// instead of fs.ErrNotExist, so "this kernel cannot" and "the pod ended"
// stay apart.
func (f *FS) write(c controller, path, file, value string) error {
	dir, err := f.writableDir(c, path)
	if err != nil {
		return err
	}
	return f.writeIn(dir, file, value)
}

func (f *FS) writeIn(dir, file, value string) error {
	name := filepath.Join(dir, file)
	err := f.writeFile(name, value)
	if err == nil {
		return nil
	}
	if err := lacksFile("write", dir, file, err); err != nil {
		return err
	}
	return fileError("write", name, value, err)
}

// lacksFile is the error for err from op on file of the cgroup in dir
// when the file is missing but the cgroup is not: it wraps
// ErrUnsupported, so that "this kernel or hierarchy cannot" and "the
// pod ended" stay apart. It is nil for any other error.
func lacksFile(op, dir, file string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if fi, serr := os.Stat(dir); serr != nil || !fi.IsDir() {
		return nil
	}
	return fmt.Errorf("cgroups: %s %s: no such file: %w", op, filepath.Join(dir, file), ErrUnsupported)
}

// writeKernelFile writes value with one write(2), as the kernel parses one
// value per write, to a file that must exist: cgroup files are made by the
// kernel, and creating one in a vanished cgroup's place would hide that
// the pod ended.
func writeKernelFile(name, value string) error {
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = fh.WriteString(value)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// fileError wraps err from op (read or write, of value) on the file name.
// The kernel answers ENODEV for a file whose cgroup was removed after it
// was opened; that is the pod ending too, so it also wraps fs.ErrNotExist.
// EBUSY wraps ErrBusy.
func fileError(op, name, value string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // name says which file; the syscall's name adds nothing
	}
	what := op + " " + name
	if op == "write" {
		what = fmt.Sprintf("write %q to %s", value, name)
	}
	switch {
	case errors.Is(err, syscall.ENODEV):
		return fmt.Errorf("cgroups: %s: %w (%w)", what, err, fs.ErrNotExist)
	case errors.Is(err, syscall.EBUSY):
		return fmt.Errorf("cgroups: %s: %w (%w)", what, err, ErrBusy)
	}
	return fmt.Errorf("cgroups: %s: %w", what, err)
}

// malformed is the error for a file whose content is not what the kernel
// writes there.
func malformed(file, content string) error {
	if len(content) > 200 {
		content = content[:200] + "..."
	}
	return fmt.Errorf("cgroups: %s: unexpected content %q", file, content)
}

// readUint reads a file holding one unsigned number.
func (f *FS) readUint(c controller, path, file string) (uint64, error) {
	s, err := f.read(c, path, file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, malformed(filepath.Join(f.dirs[c], path, file), s)
	}
	return n, nil
}

// readInt reads a file holding one signed number.
func (f *FS) readInt(c controller, path, file string) (int64, error) {
	s, err := f.read(c, path, file)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, malformed(filepath.Join(f.dirs[c], path, file), s)
	}
	return n, nil
}

// readKey reads the value of key from a flat keyed file ("key value"
// lines: cpu.stat, memory.stat).
func (f *FS) readKey(c controller, path, file, key string) (uint64, error) {
	s, err := f.read(c, path, file)
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(s) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		if k != key {
			continue
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, malformed(filepath.Join(f.dirs[c], path, file), line)
		}
		return n, nil
	}
	return 0, fmt.Errorf("cgroups: %s: no %s line", filepath.Join(f.dirs[c], path, file), key)
}
