package kwokfleet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/test/kube"
)

func TestRealNodeOf(t *testing.T) {
	kwok := func(name string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kube.KwokNodeAnnotation: "fake"}}}
	}
	real := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm"}}
	for _, tc := range []struct {
		name  string
		nodes []corev1.Node
		want  string
	}{
		{"the one kwok does not manage", []corev1.Node{kwok(NodeName(0)), real, kwok(NodeName(1))}, "vm"},
		{"kwok's nodes only", []corev1.Node{kwok(NodeName(0))}, ""},
		{"none", nil, ""},
	} {
		if got := RealNodeOf(tc.nodes); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
