package kubeclient

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

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

// Many requests at once over a client's new transport open a connection
// only when those it holds are full: 300 at once on connections of at
// most 100 streams take a handful, not one each (client-go's own
// transport, net/http's, dialed one per waiting request).
func TestManyRequestsFewConnections(t *testing.T) {
	var (
		mu    sync.Mutex
		conns int
	)
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("%s over HTTP/%d.%d, want HTTP/2", r.URL.Path, r.ProtoMajor, r.ProtoMinor)
		}
		<-release // every request in flight at once
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}})
	}))
	srv.EnableHTTP2 = true
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 100}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	client, err := New(&rest.Config{Host: srv.URL, QPS: -1, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	const requests = 300
	var wg sync.WaitGroup
	errs := make(chan error, requests)
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.CoreV1().Pods("ns").Get(context.Background(), fmt.Sprint("p", i), metav1.GetOptions{})
			errs <- err
		}()
	}
	// Until all 300 are in flight (or a connection too many shows).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
		mu.Lock()
		n := conns
		mu.Unlock()
		if n >= 3 && len(errs) == 0 {
			time.Sleep(200 * time.Millisecond) // let any further dial show
			break
		}
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if conns > 5 {
		t.Errorf("%d connections for %d requests at most 100 to a connection, want 3 to 5", conns, requests)
	}
}

// A clientset from New asks for responses uncompressed, through
// multiplexed's transport and through client-go's (a config with a proxy
// function keeps client-go's): the API server gzips every list over 128 KiB
// for a client that asks. (Over plain HTTP client-go uses Go's default
// transport, which asks whatever the config says; no API server serves so.)
func TestResponsesUncompressed(t *testing.T) {
	for _, transport := range []string{"multiplexed", "client-go's"} {
		t.Run(transport, func(t *testing.T) {
			asked := make(chan string, 1)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case asked <- r.Header.Get("Accept-Encoding"):
				default:
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(&corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}})
			}))
			srv.EnableHTTP2 = true
			srv.StartTLS()
			defer srv.Close()
			cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
				CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
			if transport == "client-go's" {
				cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
			}
			client, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.DisableCompression {
				t.Error("the given config changed")
			}
			if _, err := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if enc := <-asked; enc != "" {
				t.Errorf("Accept-Encoding %q, want none", enc)
			}
		})
	}
}
