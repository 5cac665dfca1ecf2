package cgroups

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// QOSPath returns the cgroup the kubelet makes for a QoS class, relative
// to each hierarchy's root: Guaranteed pods sit directly in the top
// "kubepods" cgroup, Burstable and BestEffort ones in a child of it.
// BestEffort's is the colocation agent's big box. An unknown class gives
// "", which FS refuses as a path.
func (d Driver) QOSPath(qos corev1.PodQOSClass) string {
	switch d {
	case Cgroupfs:
		switch qos {
		case corev1.PodQOSGuaranteed:
			return "kubepods"
		case corev1.PodQOSBurstable:
			return "kubepods/burstable"
		case corev1.PodQOSBestEffort:
			return "kubepods/besteffort"
		}
	case Systemd:
		switch qos {
		case corev1.PodQOSGuaranteed:
			return "kubepods.slice"
		case corev1.PodQOSBurstable:
			return "kubepods.slice/kubepods-burstable.slice"
		case corev1.PodQOSBestEffort:
			return "kubepods.slice/kubepods-besteffort.slice"
		}
	}
	return ""
}

// PodPath returns the cgroup of the pod with the given UID and QoS class.
// The cgroupfs driver names it pod<uid> under the QoS cgroup; the systemd
// driver makes a slice whose name repeats its parents' ("-" separates
// levels in systemd unit names, so the UID's dashes become underscores).
// An unknown class or an empty UID gives "".
func (d Driver) PodPath(qos corev1.PodQOSClass, uid string) string {
	parent := d.QOSPath(qos)
	if parent == "" || uid == "" || strings.Contains(uid, "/") {
		return ""
	}
	switch d {
	case Cgroupfs:
		return parent + "/pod" + uid
	case Systemd:
		prefix := "kubepods-"
		if qos != corev1.PodQOSGuaranteed {
			prefix += strings.ToLower(string(qos)) + "-"
		}
		return parent + "/" + prefix + "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	}
	return ""
}

// QOSPath is f's driver's QOSPath.
func (f *FS) QOSPath(qos corev1.PodQOSClass) string { return f.driver.QOSPath(qos) }

// PodPath is f's driver's PodPath.
func (f *FS) PodPath(qos corev1.PodQOSClass, uid string) string { return f.driver.PodPath(qos, uid) }
