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
