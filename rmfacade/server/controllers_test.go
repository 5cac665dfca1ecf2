package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8srest "k8s.io/client-go/rest"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/amlauncher"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/kubeclient"
)

// newFakeAPI answers discovery of the core group and, when queueAPI, of
// weft.io with its Queues, whose list holds a root and a default queue;
// fakeAPI.serve the rest. Anything else is a 404.
func newFakeAPI(t *testing.T, queueAPI bool) *fakeAPI {
	t.Helper()
	f := &fakeAPI{done: make(chan struct{}), objects: map[string]runtime.Object{}, encodings: map[string][]string{}}
	answers := map[string]any{
		"/api": &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}},
		"/api/v1": &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"list", "watch"}},
				{Name: "nodes", Kind: "Node", Verbs: []string{"list", "watch"}},
				{Name: "secrets", Namespaced: true, Kind: "Secret", Verbs: []string{"create", "delete"}},
				{Name: "events", Namespaced: true, Kind: "Event", Verbs: []string{"create", "patch"}}}},
		"/apis": &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}},
	}
	if queueAPI {
		v := metav1.GroupVersionForDiscovery{GroupVersion: "weft.io/v1alpha1", Version: "v1alpha1"}
		answers["/apis"] = &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{Name: "weft.io", Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}}}
		answers["/apis/weft.io/v1alpha1"] = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "weft.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "queues", Kind: "Queue", Verbs: []string{"list", "watch"}}}}
		answers["/apis/weft.io/v1alpha1/queues"] = map[string]any{"apiVersion": "weft.io/v1alpha1", "kind": "QueueList", "metadata": map[string]any{},
			"items": []any{
				map[string]any{"apiVersion": "weft.io/v1alpha1", "kind": "Queue", "metadata": map[string]any{"name": "root"}, "spec": map[string]any{}},
				map[string]any{"apiVersion": "weft.io/v1alpha1", "kind": "Queue", "metadata": map[string]any{"name": "default"},
					"spec": map[string]any{"parent": "root", "submitACL": "*"}},
			}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.note(r)
		w.Header().Set("Content-Type", "application/json")
		if a, ok := answers[r.URL.Path]; ok && r.Method == http.MethodGet && r.URL.Query().Get("watch") == "" {
			json.NewEncoder(w).Encode(a)
			return
		}
		if f.serve(w, r) || f.patchQueueStatus(w, r) {
			return
		}
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound})
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(f.stop)
	f.Server = srv
	return f
}

// fakeAPI is an API server of empty collections: lists of pods and
// nodes are empty, watches show nothing until they are closed, and what
// is created is noted and can be read back by name (not listed).
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	created []string                  // "kind namespace/name"
	objects map[string]runtime.Object // by path, as created
	done    chan struct{}
	// encodings notes, by "METHOD path" of each request, the request's
	// Content-Type (a body's encoding) or, without a body, its Accept.
	encodings map[string][]string
}

func (f *fakeAPI) stop() { close(f.done) }

func (f *fakeAPI) note(r *http.Request) {
	enc := r.Header.Get("Content-Type")
	if r.Method == http.MethodGet {
		enc = r.Header.Get("Accept")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	key := r.Method + " " + r.URL.Path
	if !slices.Contains(f.encodings[key], enc) {
		f.encodings[key] = append(f.encodings[key], enc)
	}
}

// encodingsOf returns the encodings noted for "METHOD path".
func (f *fakeAPI) encodingsOf(key string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.encodings[key])
}

func (f *fakeAPI) createdObjects() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created)
}

// patchQueueStatus notes a patch of a Queue's status and answers with
// the Queue.
func (f *fakeAPI) patchQueueStatus(w http.ResponseWriter, r *http.Request) bool {
	name, ok := strings.CutPrefix(r.URL.Path, "/apis/weft.io/v1alpha1/queues/")
	if name, ok = strings.CutSuffix(name, "/status"); !ok || r.Method != http.MethodPatch {
		return false
	}
	f.mu.Lock()
	f.created = append(f.created, "status of Queue "+name)
	f.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]any{"apiVersion": "weft.io/v1alpha1", "kind": "Queue", "metadata": map[string]any{"name": name}})
	return true
}

// serve answers lists, watches and creations of pods, nodes and secrets.
func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) bool {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[0] != "api" {
		return false
	}
	f.mu.Lock()
	obj, ok := f.objects[r.URL.Path]
	f.mu.Unlock()
	if ok && r.Method == http.MethodGet {
		json.NewEncoder(w).Encode(obj)
		return true
	}
	resource := parts[len(parts)-1]
	if len(parts) == 5 && parts[2] == "namespaces" || len(parts) == 3 {
		// A collection: /api/v1/pods, /api/v1/namespaces/ns/pods.
	} else {
		return false
	}
	kinds := map[string]string{"pods": "Pod", "nodes": "Node", "secrets": "Secret", "events": "Event"}
	kind, ok := kinds[resource]
	if !ok {
		return false
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") != "":
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
	case r.Method == http.MethodGet:
		json.NewEncoder(w).Encode(map[string]any{"apiVersion": "v1", "kind": kind + "List", "metadata": map[string]any{"resourceVersion": "1"},
			"items": []any{}})
	case r.Method == http.MethodPost:
		// JSON or, from controller-runtime's clients, protobuf.
		body, _ := io.ReadAll(r.Body)
		obj, gvk, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return true
		}
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		m, _ := apimeta.Accessor(obj)
		f.mu.Lock()
		f.created = append(f.created, fmt.Sprintf("%s %s/%s", kind, parts[3], m.GetName()))
		f.objects[r.URL.Path+"/"+m.GetName()] = obj
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(obj)
	default:
		return false
	}
	return true
}

// With Kubernetes, New wires the RM's controllers under one manager — the
// Queue controller only when the tree comes from Queue objects whose API
// is served —, Serve runs them (a submission gets its AM pod) and stops
// them with itself.
func TestControllersWired(t *testing.T) {
	tests := []struct {
		name          string
		queueAPI      bool
		wantQueueSync bool
	}{
		{"queues from the cluster", true, true},
		{"no Queue API", false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI(t, tc.queueAPI)
			srv, err := New(Config{ClientAddr: "127.0.0.1:0", SchedulerAddr: "127.0.0.1:0", WebAddr: "127.0.0.1:0", DataDir: t.TempDir(),
				Kubernetes: &k8srest.Config{Host: api.URL}, Launcher: amlauncher.Options{Namespace: "weft-jobs"},
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if srv.controllers == nil || srv.nodes == nil {
				t.Fatal("no controllers with Kubernetes")
			}
			if got := srv.queueSync != nil; got != tc.wantQueueSync {
				t.Fatalf("queue controller %v, want %v", got, tc.wantQueueSync)
			}
			if tc.queueAPI {
				if _, ok := srv.Manager.Queues().Queue("default"); !ok || len(srv.queueSync.Objects()) != 2 {
					t.Errorf("the tree read at start is not the RM's")
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ctx) }()
			// /metrics serves the RM's series and the controllers' together,
			// each family once (both registries carry Go's collectors), from
			// the controllers' start on.
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				metrics := scrapeMetrics(t, "http://"+srv.lnWeb.Addr().String()+"/metrics")
				counts := map[string]int{}
				for _, family := range []string{"go_goroutines", "process_cpu_seconds_total", "weft_scheduling_cycle_seconds", "controller_runtime_reconcile_total"} {
					counts[family] = strings.Count(metrics, "# TYPE "+family+" ")
				}
				if counts["go_goroutines"] > 1 || counts["process_cpu_seconds_total"] > 1 {
					t.Fatalf("/metrics repeats a family: %v", counts)
				}
				if !slices.Contains(slices.Collect(maps.Values(counts)), 0) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("/metrics lacks a family: %v", counts)
				}
			}
			if tc.queueAPI {
				// A submission: its AM's Secret and pod are created, the
				// attempt is LAUNCHED and the Queues' status written, with
				// no ticker to wait for.
				id := srv.Manager.NewApplicationID()
				if err := srv.Manager.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default"}); err != nil {
					t.Fatal(err)
				}
				attempt := records.AttemptID{App: id, ID: 1}
				pod := "Pod weft-jobs/" + translator.PodName(records.ContainerID{Attempt: attempt, ID: 1}.String())
				for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
					att := srv.Manager.Snapshot().Attempt(attempt)
					created := api.createdObjects()
					if att.State == records.AttemptLaunched && slices.Contains(created, pod) &&
						slices.Contains(created, "Secret weft-jobs/"+translator.SecretName(records.ContainerID{Attempt: attempt, ID: 1}.String())) &&
						slices.Contains(created, "status of Queue root") && slices.Contains(created, "status of Queue default") {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("attempt %s, created %v", att.State, api.createdObjects())
					}
				}
			}
			// The clientset of built-in kinds (node and pod informers, the
			// binder) speaks protobuf; the Queue CRD stays JSON, which is
			// all the API server serves custom resources in.
			encodings := []struct {
				request  string
				protobuf bool
			}{
				{"GET /api/v1/nodes", true},
				{"GET /api/v1/pods", true},
				{"GET /apis/weft.io/v1alpha1/queues", false},
			}
			for _, e := range encodings {
				got := api.encodingsOf(e.request)
				// The informers list once they start, perhaps after /metrics.
				for deadline := time.Now().Add(20 * time.Second); e.protobuf && len(got) == 0 && time.Now().Before(deadline); got = api.encodingsOf(e.request) {
					time.Sleep(20 * time.Millisecond)
				}
				jsonOnly := len(got) > 0 && !slices.ContainsFunc(got, func(a string) bool { return strings.Contains(a, "protobuf") })
				switch {
				case e.protobuf && !slices.Equal(got, []string{kubeclient.AcceptContentTypes}):
					t.Errorf("%s: Accept %q, want %q", e.request, got, kubeclient.AcceptContentTypes)
				case !e.protobuf && tc.queueAPI && !jsonOnly:
					t.Errorf("%s: Accept %q, want JSON", e.request, got)
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("Serve did not return once its context ended")
			}
		})
	}
}

// Embedded, without Kubernetes, there is no manager.
func TestEmbeddedHasNoControllers(t *testing.T) {
	srv, stop := serve(t, t.TempDir(), rm.Options{})
	defer stop()
	if srv.controllers != nil || srv.queueSync != nil {
		t.Fatal("controllers without Kubernetes")
	}
}

// scrapeMetrics GETs a /metrics page, which must answer 200.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%.800s", url, resp.Status, body)
	}
	return string(body)
}
