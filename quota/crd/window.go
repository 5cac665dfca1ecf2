package crd

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/quota/api/v1alpha1"
)

// Effective returns the guarantee and maximum a queue has at now: those of
// the first of its time windows that contains now, else its own.
func Effective(spec v1alpha1.QueueSpec, now time.Time) (guaranteed, max corev1.ResourceList, window string) {
	for _, w := range spec.TimeWindows {
		if inWindow(w, now) {
			return w.Guaranteed, w.Max, w.Name
		}
	}
	return spec.Guaranteed, spec.Max, ""
}

// inWindow reports whether now, in the window's time zone, falls in
// [start, end); a window whose end is before its start crosses midnight.
func inWindow(w v1alpha1.QueueTimeWindow, now time.Time) bool {
	loc := time.UTC
	if w.TimeZone != "" {
		l, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			return false
		}
		loc = l
	}
	start, err1 := time.Parse("15:04", w.Start)
	end, err2 := time.Parse("15:04", w.End)
	if err1 != nil || err2 != nil {
		return false
	}
	t := now.In(loc)
	m := t.Hour()*60 + t.Minute()
	s, e := start.Hour()*60+start.Minute(), end.Hour()*60+end.Minute()
	if s <= e {
		return m >= s && m < e
	}
	return m >= s || m < e
}
