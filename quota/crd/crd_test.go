package crd

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
)

func queue(name, parent, guaranteed, max string, weight int32) v1alpha1.Queue {
	q := v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{Parent: parent, Weight: weight}}
	if guaranteed != "" {
		q.Spec.Guaranteed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(guaranteed)}
	}
	if max != "" {
		q.Spec.Max = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(max)}
	}
	return q
}

func TestConfigsFromQueues(t *testing.T) {
	stopped := queue("old", "teams", "", "", 1)
	stopped.Spec.State = "Stopped"
	got, err := ConfigsFromQueues([]v1alpha1.Queue{
		queue("cluster", "", "", "64", 1),
		queue("etl", "cluster", "8", "32", 2),
		queue("default", "cluster", "4", "", 1),
		queue("teams", "cluster", "", "", 1),
		queue("a", "teams", "", "", 3), stopped,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		cap, max float32
		state    string
	}{
		"root":           {100, 100, "RUNNING"},
		"root.default":   {33.33, 100, "RUNNING"}, // 4 of the siblings' 12 guaranteed cores
		"root.etl":       {66.67, 50, "RUNNING"},  // 8 of 12; max 32 of the parent's 64
		"root.teams":     {0, 100, "RUNNING"},
		"root.teams.a":   {75, 100, "RUNNING"}, // weight 3 of 4
		"root.teams.old": {25, 100, "STOPPED"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d queues: %+v", len(got), got)
	}
	for _, c := range got {
		w, ok := want[c.Path]
		if !ok || math.Abs(float64(c.Capacity-w.cap)) > 0.01 || c.MaxCapacity != w.max || c.State != w.state {
			t.Errorf("%s: %+v, want %+v", c.Path, c, w)
		}
	}
	if _, err := quota.NewTree(got); err != nil {
		t.Fatalf("the tree is not one weft-rm accepts: %v", err)
	}
	for name, bad := range map[string][]v1alpha1.Queue{
		"two roots":      {queue("a", "", "", "", 1), queue("b", "", "", "", 1)},
		"no root":        {queue("a", "b", "", "", 1), queue("b", "a", "", "", 1)},
		"missing parent": {queue("root", "", "", "", 1), queue("a", "nope", "", "", 1)},
	} {
		if _, err := ConfigsFromQueues(bad); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

// Absolute guarantees and maxima reach the scheduler in its CPU unit (1000
// a vcore), and a time window's quota replaces the queue's own while it
// is in effect.
func TestQuotasFromCRDs(t *testing.T) {
	etl := queue("etl", "cluster", "2", "4", 2)
	etl.Spec.Guaranteed[corev1.ResourceMemory] = resource.MustParse("8Gi")
	etl.Spec.TimeWindows = []v1alpha1.QueueTimeWindow{{Name: "night", Start: "22:00", End: "06:00",
		Guaranteed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		Max:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}}}
	quarter := int32(25)
	etl.Spec.UserLimitPercent = &quarter
	queues := []v1alpha1.Queue{queue("cluster", "", "", "", 1), etl, queue("web", "cluster", "1", "", 1)}
	for _, c := range []struct {
		name                 string
		at                   time.Time
		guaranteedMilli, max int64
	}{
		{"by day", time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), 8000, 16000},
		{"by night", time.Date(2026, 11, 23, 23, 0, 0, 0, time.UTC), 12000, 24000},
	} {
		got, err := QuotasFromCRDs(queues, c.at, 250) // a vcore is 250m: 1 core = 4 vcores
		if err != nil {
			t.Fatal(err)
		}
		byPath := map[string]quota.QueueQuota{}
		for _, q := range got {
			byPath[q.Path] = q
		}
		e := byPath["root.etl"]
		if e.Guaranteed.MilliCPU != c.guaranteedMilli || e.Max == nil || e.Max.MilliCPU != c.max || e.Weight != 2 || e.UserLimitPercent != 25 {
			t.Errorf("%s: root.etl = %+v (max %v)", c.name, e, e.Max)
		}
		if c.name == "by day" && e.Guaranteed.Memory != 8<<30 {
			t.Errorf("%s: memory guarantee %d", c.name, e.Guaranteed.Memory)
		}
		if w := byPath["root.web"]; w.Guaranteed.MilliCPU != 4000 || w.Max != nil {
			t.Errorf("%s: root.web = %+v", c.name, w)
		}
		if _, ok := byPath["root"]; !ok || len(got) != 3 {
			t.Errorf("%s: paths %v", c.name, byPath)
		}
	}
}
