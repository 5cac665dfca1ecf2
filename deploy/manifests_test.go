// Package deploy holds Weft's Kubernetes manifests; its test keeps them in
// step with the code that depends on them.
package deploy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// objects decodes every document of the YAML files matching pattern.
func objects(t *testing.T, pattern string) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests match %s: %v", pattern, err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // kustomize's, not the cluster's
		}
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decodeAll(t, f, r)...)
		r.Close()
	}
	return out
}

func as[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &v); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return &v
}

func TestPriorityClassesMatchTranslator(t *testing.T) {
	for _, name := range []string{"weft", "plain", "katalyst", "koordinator"} {
		profile, err := translator.ProfileByName(name)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int32{}
		for _, u := range objects(t, filepath.Join("profiles", name, "*.yaml")) {
			if u.GetKind() != "PriorityClass" {
				continue
			}
			pc := as[schedulingv1.PriorityClass](t, u)
			if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptNever || pc.GlobalDefault {
				t.Errorf("%s/%s: Weft's pods must not preempt through kube-scheduler nor be the default", name, pc.Name)
			}
			got[pc.Name] = pc.Value
		}
		for _, tier := range records.Tiers {
			if v, ok := got[translator.PriorityClassName(tier)]; !ok || v != profile.Priorities[tier] {
				t.Errorf("%s: %s = %d (present %v), translator says %d", name, translator.PriorityClassName(tier), v, ok, profile.Priorities[tier])
			}
		}
	}
}

func TestBaseManifests(t *testing.T) {
	var deployment *appsv1.Deployment
	var service *corev1.Service
	var queues string
	for _, u := range objects(t, filepath.Join("base", "*.yaml")) {
		switch u.GetKind() {
		case "Service":
			if u.GetName() == "weft-rm" {
				service = as[corev1.Service](t, u)
			}
		case "Deployment":
			if u.GetName() == "weft-rm" {
				deployment = as[appsv1.Deployment](t, u)
			}
		case "ConfigMap":
			queues = as[corev1.ConfigMap](t, u).Data["queues.json"]
		}
	}
	if deployment == nil || len(deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("no weft-rm Deployment")
	}
	if sa := deployment.Spec.Template.Spec.ServiceAccountName; sa != "weft-rm" {
		t.Errorf("service account %q", sa)
	}
	// In the cluster, weft-rm must talk to it to launch AMs and read queues.
	if !slices.Contains(deployment.Spec.Template.Spec.Containers[0].Args, "--kubeconfig=in-cluster") {
		t.Errorf("weft-rm is not told to use the cluster: %v", deployment.Spec.Template.Spec.Containers[0].Args)
	}
	// HA: replicas elect an active, keep the state in the API server, and
	// the Service selects the pod the active labels.
	args := deployment.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--state-namespace=weft-system", "--ha-id=$(POD_NAME)", "--ha-pod=weft-system/$(POD_NAME)"} {
		if !slices.Contains(args, want) {
			t.Errorf("weft-rm args lack %s: %v", want, args)
		}
	}
	if r := deployment.Spec.Replicas; r == nil || *r < 2 {
		t.Errorf("weft-rm replicas %v, want a standby", r)
	}
	if service == nil || service.Spec.Selector[wellknown.LabelRMActive] != "true" {
		t.Errorf("the weft-rm Service does not select the active replica: %v", service)
	}
	// The queue tree in the ConfigMap is one weft-rm accepts.
	var qs []quota.QueueConfig
	if err := json.Unmarshal([]byte(queues), &qs); err != nil {
		t.Fatalf("queues.json: %v", err)
	}
	if _, err := quota.NewTree(qs); err != nil {
		t.Fatalf("queues.json: %v", err)
	}
}
