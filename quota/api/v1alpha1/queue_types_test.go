package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestSchemeAndDeepCopy(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&Queue{})
	if err != nil || len(gvks) != 1 || gvks[0].Group != "weft.io" || gvks[0].Kind != "Queue" {
		t.Fatalf("kinds %v, %v", gvks, err)
	}
	q := &Queue{Spec: QueueSpec{Parent: "root", Guaranteed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
		TimeWindows: []QueueTimeWindow{{Name: "night", Start: "22:00", End: "06:00"}}}}
	c := q.DeepCopy()
	c.Spec.Guaranteed[corev1.ResourceCPU] = resource.MustParse("8")
	c.Spec.TimeWindows[0].Name = "day"
	if got := q.Spec.Guaranteed[corev1.ResourceCPU]; got.String() != "4" || q.Spec.TimeWindows[0].Name != "night" {
		t.Fatal("DeepCopy shares state with the original")
	}
}
