package kubeclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// A clientset from New sends protobuf bodies and asks for protobuf with
// JSON as the fallback, and still works against a server answering JSON;
// the config it was given is left as it was (it may serve CRD clients).
func TestProtobufWithJSONFallback(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // "METHOD path" → Content-Type of a body, else Accept
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		enc := r.Header.Get("Accept")
		var obj any = &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		if r.Method == http.MethodPost {
			enc = r.Header.Get("Content-Type")
			body, _ := io.ReadAll(r.Body)
			// The client's body must decode as what it says it is.
			decoded, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			if err != nil {
				t.Errorf("%s %s: body: %v", r.Method, r.URL.Path, err)
			}
			obj = decoded
		}
		mu.Lock()
		seen[r.Method+" "+r.URL.Path] = enc
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(obj)
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	client, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ContentType != "" || cfg.AcceptContentTypes != "" {
		t.Errorf("the given config changed: %q, %q", cfg.ContentType, cfg.AcceptContentTypes)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	tests := []struct {
		name, request, want string
		call                func(context.Context, kubernetes.Interface) error
	}{
		{"list", "GET /api/v1/pods", AcceptContentTypes, func(ctx context.Context, c kubernetes.Interface) error {
			_, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return err
		}},
		{"create", "POST /api/v1/namespaces/ns/pods", ContentType, func(ctx context.Context, c kubernetes.Interface) error {
			got, err := c.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{})
			if err == nil && got.Name != pod.Name {
				t.Errorf("created %q, want %q", got.Name, pod.Name)
			}
			return err
		}},
		{"bind", "POST /api/v1/namespaces/ns/pods/p/binding", ContentType, func(ctx context.Context, c kubernetes.Interface) error {
			return c.CoreV1().Pods("ns").Bind(ctx, &corev1.Binding{ObjectMeta: pod.ObjectMeta,
				Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}, metav1.CreateOptions{})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(context.Background(), client); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := seen[tc.request]; got != tc.want {
				t.Errorf("%s: %q, want %q", tc.request, got, tc.want)
			}
		})
	}
}
