package cgroups_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
)

func TestPaths(t *testing.T) {
	const uid = "3d7c6a5e-8f2b-4c1d-9e0a-1b2c3d4e5f60"
	cases := []struct {
		driver  cgroups.Driver
		qos     corev1.PodQOSClass
		wantQOS string
		wantPod string
	}{
		{cgroups.Cgroupfs, corev1.PodQOSGuaranteed, "kubepods", "kubepods/pod" + uid},
		{cgroups.Cgroupfs, corev1.PodQOSBurstable, "kubepods/burstable", "kubepods/burstable/pod" + uid},
		{cgroups.Cgroupfs, corev1.PodQOSBestEffort, "kubepods/besteffort", "kubepods/besteffort/pod" + uid},
		{cgroups.Systemd, corev1.PodQOSGuaranteed, "kubepods.slice",
			"kubepods.slice/kubepods-pod3d7c6a5e_8f2b_4c1d_9e0a_1b2c3d4e5f60.slice"},
		{cgroups.Systemd, corev1.PodQOSBurstable, "kubepods.slice/kubepods-burstable.slice",
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3d7c6a5e_8f2b_4c1d_9e0a_1b2c3d4e5f60.slice"},
		{cgroups.Systemd, corev1.PodQOSBestEffort, "kubepods.slice/kubepods-besteffort.slice",
			"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3d7c6a5e_8f2b_4c1d_9e0a_1b2c3d4e5f60.slice"},
		// An unknown class must not name any cgroup, least of all the root.
		{cgroups.Cgroupfs, "", "", ""},
		{cgroups.Systemd, "Reclaimed", "", ""},
		{"containerd", corev1.PodQOSBestEffort, "", ""},
	}
	for _, c := range cases {
		if got := c.driver.QOSPath(c.qos); got != c.wantQOS {
			t.Errorf("%s QOSPath(%q) = %q, want %q", c.driver, c.qos, got, c.wantQOS)
		}
		if got := c.driver.PodPath(c.qos, uid); got != c.wantPod {
			t.Errorf("%s PodPath(%q) = %q, want %q", c.driver, c.qos, got, c.wantPod)
		}
	}
	for _, d := range []cgroups.Driver{cgroups.Cgroupfs, cgroups.Systemd} {
		for _, bad := range []string{"", "a/b"} {
			if got := d.PodPath(corev1.PodQOSBestEffort, bad); got != "" {
				t.Errorf("%s PodPath(uid %q) = %q, want \"\"", d, bad, got)
			}
		}
	}
}

func TestFSPathsFollowItsDriver(t *testing.T) {
	for _, d := range []cgroups.Driver{cgroups.Cgroupfs, cgroups.Systemd} {
		f := v1Tree(t).WithDriver(d).FS()
		if got, want := f.QOSPath(corev1.PodQOSBestEffort), d.QOSPath(corev1.PodQOSBestEffort); got != want {
			t.Errorf("%s FS.QOSPath = %q, want %q", d, got, want)
		}
		if got, want := f.PodPath(corev1.PodQOSBurstable, "u-1"), d.PodPath(corev1.PodQOSBurstable, "u-1"); got != want {
			t.Errorf("%s FS.PodPath = %q, want %q", d, got, want)
		}
	}
}

// A node of a shared machine has its kubelet's --cgroup-root for its own
// root: its QoS and pod cgroups are under it, named as that kubelet's
// driver names them (systemd makes a slice of the root too, "-" escaped
// as "_", as the kubelet does: kind's /kubelet is kubelet.slice), and
// "" or "/" is the whole machine, as today.
func TestPathsUnderANodesCgroupRoot(t *testing.T) {
	const uid = "3d7c6a5e-8f2b"
	cases := []struct {
		driver                     cgroups.Driver
		root                       string
		wantNode, wantBox, wantPod string
	}{
		{cgroups.Cgroupfs, "", ".", "kubepods/besteffort", "kubepods/burstable/pod" + uid},
		{cgroups.Cgroupfs, "/", ".", "kubepods/besteffort", "kubepods/burstable/pod" + uid},
		{cgroups.Cgroupfs, "/weft-node-1", "weft-node-1", "weft-node-1/kubepods/besteffort", "weft-node-1/kubepods/burstable/pod" + uid},
		{cgroups.Cgroupfs, "weft-node-1/", "weft-node-1", "weft-node-1/kubepods/besteffort", "weft-node-1/kubepods/burstable/pod" + uid},
		{cgroups.Cgroupfs, "/kind/node-1", "kind/node-1", "kind/node-1/kubepods/besteffort", "kind/node-1/kubepods/burstable/pod" + uid},
		{cgroups.Systemd, "", ".", "kubepods.slice/kubepods-besteffort.slice",
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3d7c6a5e_8f2b.slice"},
		{cgroups.Systemd, "/kubelet", "kubelet.slice", "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice",
			"kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod3d7c6a5e_8f2b.slice"},
		{cgroups.Systemd, "/weft-node-1", "weft_node_1.slice",
			"weft_node_1.slice/weft_node_1-kubepods.slice/weft_node_1-kubepods-besteffort.slice",
			"weft_node_1.slice/weft_node_1-kubepods.slice/weft_node_1-kubepods-burstable.slice/weft_node_1-kubepods-burstable-pod3d7c6a5e_8f2b.slice"},
		{cgroups.Systemd, "/kind/node-1", "kind.slice/kind-node_1.slice", "kind.slice/kind-node_1.slice/kind-node_1-kubepods.slice/kind-node_1-kubepods-besteffort.slice",
			"kind.slice/kind-node_1.slice/kind-node_1-kubepods.slice/kind-node_1-kubepods-burstable.slice/kind-node_1-kubepods-burstable-pod3d7c6a5e_8f2b.slice"},
	}
	for _, c := range cases {
		f, err := v1Tree(t).WithDriver(c.driver).FS().ForNode(c.root)
		if err != nil {
			t.Errorf("%s ForNode(%q): %v", c.driver, c.root, err)
			continue
		}
		if got := f.NodePath(); got != c.wantNode {
			t.Errorf("%s root %q: NodePath = %q, want %q", c.driver, c.root, got, c.wantNode)
		}
		if got := f.QOSPath(corev1.PodQOSBestEffort); got != c.wantBox {
			t.Errorf("%s root %q: QOSPath = %q, want %q", c.driver, c.root, got, c.wantBox)
		}
		if got := f.PodPath(corev1.PodQOSBurstable, uid); got != c.wantPod {
			t.Errorf("%s root %q: PodPath = %q, want %q", c.driver, c.root, got, c.wantPod)
		}
		if got := f.QOSPath("Reclaimed"); got != "" {
			t.Errorf("%s root %q: QOSPath of an unknown class = %q, want \"\"", c.driver, c.root, got)
		}
	}
}

// A cgroup root with an empty level, "." or ".." is refused: it would name
// another cgroup than the kubelet's, or one outside the hierarchy.
func TestCgroupRootRefusesOtherCgroups(t *testing.T) {
	for _, bad := range []string{"/a//b", "/../etc", "/a/./b", "/weft-node-1/.."} {
		if levels, err := cgroups.ParseCgroupRoot(bad); err == nil {
			t.Errorf("ParseCgroupRoot(%q) = %q, want an error", bad, levels)
		}
		if _, err := v1Tree(t).FS().ForNode(bad); err == nil {
			t.Errorf("ForNode(%q): no error", bad)
		}
	}
}
