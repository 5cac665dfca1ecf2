package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
)

// kubeAPI is a stand-in for kube-apiserver at weft-rm's process boundary:
// it serves a fixed fleet of Ready nodes to weft-rm's node watch, and an
// empty cluster of pods to its pod watch and to the AM launcher's pod
// list. It answers the calls client-go's informers make — a LIST (every
// item in one page, resourceVersion "1", in protobuf when the client
// asks for it as weft-rm's clientsets do, else JSON), then a WATCH held
// open with no events until its timeoutSeconds — and counts any other request, which
// the benchmark reports as a failure: weft-rm asking for something the
// stand-in does not know would mean it measures less than weft-rm does.
//
// Why a stand-in and not the kwok fleet the binding and failover
// benchmarks use: with 10,000 nodes, a real API server and etcd on this
// 2-core machine would hold about 10,000 Node objects in etcd and its
// watch cache, and kwok would keep 10,000 node Leases renewed, all on the
// cores weft-rm is measured on: that load would be the API server's, not
// weft-rm's, and it would leave weft-rm less than the machine. What weft-rm does
// with the nodes — decode the list into its informer, copy every node
// into its store each second, build the scheduler's view of them each
// cycle — it does here in full.
type kubeAPI struct {
	srv   *http.Server
	addr  string
	nodes encoded // the NodeList, encoded once

	mu      sync.Mutex
	unknown map[string]int // "METHOD path" → count
	calls   map[string]int // resource listed or watched → count
}

// nodeName is the fleet's i-th node.
func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// startKubeAPI serves n nodes of 32 CPUs and 256 GiB on a loopback port.
func startKubeAPI(n int) (*kubeAPI, error) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	list := corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
	created := metav1.NewTime(time.Now())
	for i := range n {
		name := nodeName(i)
		list.Items = append(list.Items, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1", CreationTimestamp: created,
				Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%4)}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: created}}},
		})
	}
	nodes, err := encode(&list)
	if err != nil {
		return nil, fmt.Errorf("node list: %w", err)
	}
	emptyPods, err := encode(&corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "1"}})
	if err != nil {
		return nil, fmt.Errorf("pod list: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &kubeAPI{addr: ln.Addr().String(), nodes: nodes, unknown: map[string]int{}, calls: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, r *http.Request) { k.serve(w, r, "nodes", k.nodes) })
	mux.HandleFunc("GET /api/v1/pods", func(w http.ResponseWriter, r *http.Request) { k.serve(w, r, "pods", emptyPods) })
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/pods", func(w http.ResponseWriter, r *http.Request) {
		k.serve(w, r, "pods in "+r.PathValue("ns"), emptyPods)
	})
	// Discovery, for controller-runtime's REST mapper: the core group and
	// the kinds weft-rm's controllers read; no other group (a Queue CRD
	// absent, as on a cluster where Weft runs with --queues).
	discovery := map[string]any{
		"/api": metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: k.addr}}},
		"/apis": metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}},
		"/api/v1": metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1",
			APIResources: []metav1.APIResource{
				{Name: "nodes", SingularName: "node", Namespaced: false, Kind: "Node", Verbs: metav1.Verbs{"get", "list", "watch", "patch", "update"}},
				{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"create", "delete", "get", "list", "watch", "patch", "update"}},
				{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: metav1.Verbs{"create", "delete", "get", "list", "watch", "update"}},
				{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: metav1.Verbs{"create", "delete", "get", "list", "watch", "update"}},
				{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event", Verbs: metav1.Verbs{"create", "patch", "list", "watch"}},
			}},
	}
	for path, doc := range discovery {
		body, err := json.Marshal(doc)
		if err != nil {
			return nil, err
		}
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		k.unknown[r.Method+" "+r.URL.Path]++
		k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the benchmark's API server does not serve %s"}`, r.URL.Path)
	})
	k.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go k.srv.Serve(ln)
	return k, nil
}

// encoded is a list in both encodings the API server serves built-in
// kinds in.
type encoded struct{ json, protobuf []byte }

// encode encodes obj, whose TypeMeta is set, as JSON and as protobuf.
func encode(obj runtime.Object) (encoded, error) {
	var e encoded
	var err error
	if e.json, err = json.Marshal(obj); err != nil {
		return e, err
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		return e, err
	}
	e.protobuf = buf.Bytes()
	return e, nil
}

// serve answers a LIST with body, in protobuf when the request's Accept
// names it first, as kube-apiserver does, or holds a WATCH open without
// events until its timeout or the client leaves (the fleet never
// changes).
func (k *kubeAPI) serve(w http.ResponseWriter, r *http.Request, what string, body encoded) {
	watch := r.URL.Query().Get("watch") == "true"
	proto := strings.HasPrefix(r.Header.Get("Accept"), runtime.ContentTypeProtobuf)
	k.mu.Lock()
	switch {
	case watch:
		k.calls["watch "+what]++
	case proto:
		k.calls["list "+what+" in protobuf"]++
	default:
		k.calls["list "+what]++
	}
	k.mu.Unlock()
	if !watch {
		if proto {
			w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
			w.Write(body.protobuf)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body.json)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	timeout := 5 * time.Minute
	if s, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-time.After(timeout):
	}
}

// kubeconfig writes a kubeconfig naming the stand-in into dir.
func (k *kubeAPI) kubeconfig(dir string) (string, error) {
	path := filepath.Join(dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster:
    server: http://%s
contexts:
- name: bench
  context:
    cluster: bench
    user: bench
users:
- name: bench
  user: {}
current-context: bench
`, k.addr)
	return path, os.WriteFile(path, []byte(cfg), 0o600)
}

// report returns the calls served and those the stand-in could not serve,
// each sorted.
func (k *kubeAPI) report() (served, unknown []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for c, n := range k.calls {
		served = append(served, fmt.Sprintf("%s ×%d", c, n))
	}
	for c, n := range k.unknown {
		unknown = append(unknown, fmt.Sprintf("%s ×%d", c, n))
	}
	sort.Strings(served)
	sort.Strings(unknown)
	return served, unknown
}

// resetCounts starts counting afresh (one weft-rm run's calls).
func (k *kubeAPI) resetCounts() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.unknown, k.calls = map[string]int{}, map[string]int{}
}

func (k *kubeAPI) close() { k.srv.Close() }
