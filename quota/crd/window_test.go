package crd

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/weft-sh/weft/quota/api/v1alpha1"
)

func TestEffectiveQuota(t *testing.T) {
	day := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}
	night := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("24")}
	spec := v1alpha1.QueueSpec{Guaranteed: day, TimeWindows: []v1alpha1.QueueTimeWindow{
		{Name: "night", Start: "22:00", End: "06:00", TimeZone: "Asia/Shanghai", Guaranteed: night},
	}}
	tests := []struct {
		utc    string
		window string
	}{
		{"2026-11-23T14:00:00Z", "night"}, // 22:00 in Shanghai: the window opens
		{"2026-11-23T21:59:00Z", "night"}, // 05:59 the next morning
		{"2026-11-23T22:00:00Z", ""},      // 06:00: closed
		{"2026-11-23T04:00:00Z", ""},      // midday
	}
	for _, tc := range tests {
		now, _ := time.Parse(time.RFC3339, tc.utc)
		g, _, w := Effective(spec, now)
		want := day
		if tc.window != "" {
			want = night
		}
		if w != tc.window || !g.Cpu().Equal(*want.Cpu()) {
			t.Errorf("%s: window %q guarantee %s", tc.utc, w, g.Cpu())
		}
	}
	if _, _, w := Effective(v1alpha1.QueueSpec{TimeWindows: []v1alpha1.QueueTimeWindow{{Name: "x", Start: "09:00", End: "17:00", TimeZone: "Nowhere/Nope"}}}, time.Now()); w != "" {
		t.Error("a window in an unknown zone applied")
	}
}
