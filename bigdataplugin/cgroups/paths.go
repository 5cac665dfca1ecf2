package cgroups

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// QOSPath returns the cgroup the kubelet makes for a QoS class, relative
// to each hierarchy's root, for a kubelet whose --cgroup-root is the
// hierarchy's root (a node that is the whole machine): Guaranteed pods
// sit directly in the top "kubepods" cgroup, Burstable and BestEffort
// ones in a child of it. BestEffort's is the colocation agent's big box.
// An unknown class gives "", which FS refuses as a path.
func (d Driver) QOSPath(qos corev1.PodQOSClass) string { return d.path(qosName(nil, qos)) }

// PodPath returns the cgroup of the pod with the given UID and QoS class,
// for a kubelet whose --cgroup-root is the hierarchy's root. The cgroupfs
// driver names it pod<uid> under the QoS cgroup; the systemd driver makes
// a slice whose name repeats its parents' ("-" separates levels in
// systemd unit names, so the UID's dashes become underscores). An
// unknown class or an empty UID gives "".
func (d Driver) PodPath(qos corev1.PodQOSClass, uid string) string {
	return d.path(podName(nil, qos, uid))
}

// qosName is the kubelet's name of a QoS class's cgroup (its CgroupName:
// the names of the levels from the hierarchy's root) under the
// kubelet's cgroup root; nil for an unknown class.
func qosName(root []string, qos corev1.PodQOSClass) []string {
	name := append(slices.Clone(root), "kubepods")
	switch qos {
	case corev1.PodQOSGuaranteed:
		return name
	case corev1.PodQOSBurstable, corev1.PodQOSBestEffort:
		return append(name, strings.ToLower(string(qos)))
	}
	return nil
}

// podName is the kubelet's name of a pod's cgroup under root; nil for an
// unknown class or a UID that is empty or would make two levels.
func podName(root []string, qos corev1.PodQOSClass, uid string) []string {
	name := qosName(root, qos)
	if name == nil || uid == "" || strings.Contains(uid, "/") {
		return nil
	}
	return append(name, "pod"+uid)
}

// path lays out the cgroup the kubelet names name as driver d does: the
// cgroupfs driver makes a directory of each level; the systemd driver a
// slice whose unit name joins all levels down to it with "-", each
// level's own dashes escaped as underscores (the kubelet's
// CgroupName.ToSystemd). No name, or an unknown driver, gives "".
func (d Driver) path(name []string) string {
	if len(name) == 0 {
		return ""
	}
	switch d {
	case Cgroupfs:
		return strings.Join(name, "/")
	case Systemd:
		dirs := make([]string, len(name))
		unit := ""
		for i, level := range name {
			if i > 0 {
				unit += "-"
			}
			unit += strings.ReplaceAll(level, "-", "_")
			dirs[i] = unit + ".slice"
		}
		return strings.Join(dirs, "/")
	}
	return ""
}

// ParseCgroupRoot splits a kubelet's --cgroup-root, which the kubelet
// takes in the cgroupfs form whatever its driver ("/weft-node-1",
// "/a/b"), into the names of its levels. "" and "/" are the hierarchy's
// root (nil): the kubelet of a node that is the whole machine. Empty
// levels, "." and ".." are refused: they would name another cgroup than
// the kubelet's, or leave the hierarchy.
func ParseCgroupRoot(root string) ([]string, error) {
	trimmed := strings.Trim(root, "/")
	if trimmed == "" {
		return nil, nil
	}
	levels := strings.Split(trimmed, "/")
	for _, l := range levels {
		if l == "" || l == "." || l == ".." {
			return nil, fmt.Errorf("cgroups: cgroup root %q: %q is not a cgroup's name", root, l)
		}
	}
	return levels, nil
}

// ForNode returns an FS like f for the node whose kubelet was given
// cgroupRoot as its --cgroup-root (ParseCgroupRoot), as on a machine that
// holds several nodes, each in its own subtree: its QOSPath, PodPath and
// NodePath are under that root, named by f's driver as the kubelet names
// them, and it never writes the node's root cgroup, whose limits are the
// whole node's.
func (f *FS) ForNode(cgroupRoot string) (*FS, error) {
	root, err := ParseCgroupRoot(cgroupRoot)
	if err != nil {
		return nil, err
	}
	g := *f
	g.node = root
	return &g, nil
}

// NodePath is the node's root cgroup: the kubelet's --cgroup-root named
// by the driver ("weft-node-1", or "weft_node_1.slice" with systemd), or
// "." when the node is the whole machine.
func (f *FS) NodePath() string {
	if len(f.node) == 0 {
		return "."
	}
	return f.driver.path(f.node)
}

// QOSPath is f's driver's QOSPath, under the node's root cgroup.
func (f *FS) QOSPath(qos corev1.PodQOSClass) string { return f.driver.path(qosName(f.node, qos)) }

// PodPath is f's driver's PodPath, under the node's root cgroup.
func (f *FS) PodPath(qos corev1.PodQOSClass, uid string) string {
	return f.driver.path(podName(f.node, qos, uid))
}
