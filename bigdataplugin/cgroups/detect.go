package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Version is a cgroup filesystem's version.
type Version int

const (
	// V1 has one hierarchy per controller (root/cpu, root/memory, ...).
	V1 Version = 1
	// V2 is the unified hierarchy: one tree under root.
	V2 Version = 2
)

func (v Version) String() string {
	switch v {
	case V1:
		return "v1"
	case V2:
		return "v2"
	}
	return fmt.Sprintf("Version(%d)", int(v))
}

// controller names a v1 hierarchy (on v2 all are the one tree).
type controller string

const (
	cpuCtl     controller = "cpu"
	cpuacctCtl controller = "cpuacct"
	memoryCtl  controller = "memory"
	cpusetCtl  controller = "cpuset"
)

// required are the v1 hierarchies the package cannot work without; cpuset
// is optional (its writes answer ErrUnsupported when it is not mounted).
var required = []controller{cpuCtl, cpuacctCtl, memoryCtl}

// Detect tells which cgroup version is mounted at root: V2 when
// root/cgroup.controllers exists, V1 when the cpu, cpuacct and memory
// hierarchies are there (as separate directories or combined, e.g.
// "cpu,cpuacct"). Any other layout is an error, never a guess: writing a
// limit into the wrong file would silently not bound anything.
//
// A hybrid host (v1 controllers with the v2 tree at root/unified holding
// no controllers) is V1, as the kubelet sees it.
func Detect(root string) (Version, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return V2, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("cgroups: detect version at %s: %w", root, err)
	}
	if _, err := v1Hierarchies(root); err != nil {
		return 0, err
	}
	return V1, nil
}

// v1Hierarchies finds each controller's hierarchy directory under root.
// A controller is found in a directory named after it, or failing that in
// one whose comma-separated name lists it ("cpu,cpuacct"); a symbolic
// link (cpu → cpu,cpuacct) is followed so that each controller's files are
// named in the directory that really holds them.
func v1Hierarchies(root string) (map[controller]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("cgroups: detect version at %s: %w", root, err)
	}
	dirs := make(map[controller]string)
	for _, c := range []controller{cpuCtl, cpuacctCtl, memoryCtl, cpusetCtl} {
		var candidates []string
		for _, e := range entries {
			if e.Name() == string(c) {
				candidates = append([]string{e.Name()}, candidates...)
			} else if slices.Contains(strings.Split(e.Name(), ","), string(c)) {
				candidates = append(candidates, e.Name())
			}
		}
		for _, name := range candidates {
			dir := filepath.Join(root, name)
			if link, err := os.Readlink(dir); err == nil {
				if !filepath.IsAbs(link) {
					link = filepath.Join(root, link)
				}
				dir = link
			}
			if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
				dirs[c] = dir
				break
			}
		}
	}
	var missing []string
	for _, c := range required {
		if dirs[c] == "" {
			missing = append(missing, string(c))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cgroups: %s is neither cgroup v2 (no cgroup.controllers) nor v1 (no %s hierarchy)",
			root, strings.Join(missing, ", "))
	}
	return dirs, nil
}
