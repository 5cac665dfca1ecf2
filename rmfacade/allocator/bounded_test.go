package allocator

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler"
	"github.com/weft-sh/weft/translator"
)

// A backlog larger than a cycle's bound is granted in slices, each cycle
// asking for the next at once (Kick) rather than at the next tick, until
// a cycle leaves nothing; every pod is bound once.
func TestBoundedCyclesTakeTheBacklogInSlices(t *testing.T) {
	mgr, now := testRM(t, quota.DefaultQueues)
	put(t, mgr, &records.Node{ID: "n1", Host: "n1", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}})
	pods := &podsAtBoundary{}
	for i := range 10 {
		pods.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "batch", ResourceVersion: "1"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}})
	}
	a := New(mgr, Options{Logger: quiet, Now: func() time.Time { return *now }, Pods: pods, Profile: translator.Plain,
		Scheduler: scheduler.Options{MaxPlacements: 4}})
	var granted []int
	var kicked []bool
	for range 5 {
		n, err := a.Cycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		granted = append(granted, n)
		select {
		case <-a.kick:
			kicked = append(kicked, true)
		default:
			kicked = append(kicked, false)
		}
		if n == 0 {
			break
		}
	}
	if want := []int{4, 4, 2, 0}; !slices.Equal(granted, want) {
		t.Errorf("granted by cycle %v, want %v", granted, want)
	}
	if want := []bool{true, true, false, false}; !slices.Equal(kicked, want) {
		t.Errorf("next cycle asked for at once, by cycle: %v, want %v", kicked, want)
	}
	pending, bound := pods.Pods()
	if len(pending) != 0 || len(bound) != 10 {
		t.Errorf("%d pods waiting, %d bound; want all 10 bound", len(pending), len(bound))
	}
}
