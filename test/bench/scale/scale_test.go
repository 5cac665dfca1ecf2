package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/weft-sh/weft/translator/kubeclient"
)

// TestKubeAPIServesInformers checks the stand-in against client-go itself:
// informers (as weft-rm's node and pod watches) list every node, Ready and
// with its allocatable, and an empty cluster of pods — in protobuf to a
// client that asks for it as weft-rm's do, else JSON — and stay synced on
// the held-open watch; a resource it does not serve is counted, not
// answered.
func TestKubeAPIServesInformers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(*rest.Config) *rest.Config
		suffix string // of the lists served
	}{
		{"JSON", func(c *rest.Config) *rest.Config { return c }, ""},
		{"protobuf", kubeclient.Protobuf, " in protobuf"},
	} {
		t.Run(tc.name, func(t *testing.T) { testKubeAPIServesInformers(t, tc.client, tc.suffix) })
	}
}

func testKubeAPIServesInformers(t *testing.T, config func(*rest.Config) *rest.Config, suffix string) {
	k, err := startKubeAPI(25)
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	path, err := k.kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(config(cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := coreinformers.NewNodeInformer(client, 0, cache.Indexers{})
	pods := coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = "status.phase!=Succeeded"
	})
	go nodes.Run(ctx.Done())
	go pods.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, pods.HasSynced) {
		t.Fatal("informers did not sync")
	}
	list, err := corelisters.NewNodeLister(nodes.GetIndexer()).List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 25 {
		t.Fatalf("listed %d nodes, want 25", len(list))
	}
	for _, n := range list {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if cpu := n.Status.Allocatable[corev1.ResourceCPU]; !ready || cpu.Cmp(resource.MustParse("32")) != 0 || len(n.Spec.Taints) > 0 {
			t.Errorf("node %s: ready %v, allocatable CPU %s, taints %v", n.Name, ready, cpu.String(), n.Spec.Taints)
		}
	}
	if got := len(pods.GetStore().List()); got != 0 {
		t.Errorf("%d pods, want none", got)
	}
	if _, err := client.CoreV1().Secrets("weft-jobs").Get(ctx, "x", metav1.GetOptions{}); err == nil {
		t.Error("a Secret was served")
	}
	served, unknown := k.report()
	want := map[string]bool{"list nodes" + suffix + " ×1": false, "watch nodes ×1": false, "list pods" + suffix + " ×1": false, "watch pods ×1": false}
	for _, s := range served {
		if _, ok := want[s]; ok {
			want[s] = true
		}
	}
	for s, seen := range want {
		if !seen {
			t.Errorf("served %v, missing %q", served, s)
		}
	}
	if len(unknown) != 1 || unknown[0] != "GET /api/v1/namespaces/weft-jobs/secrets/x ×1" {
		t.Errorf("unknown calls %v, want the Secret's", unknown)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // unsorted: 100 … 1
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(7), 50, 7 * time.Millisecond},
		{"median of 1..100", ms(hundred...), 50, 50 * time.Millisecond},
		{"p99 of 1..100", ms(hundred...), 99, 99 * time.Millisecond},
		{"max", ms(hundred...), 100, 100 * time.Millisecond},
		{"p99 of 3 is the largest", ms(1, 2, 3), 99, 3 * time.Millisecond},
	} {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("%s: p%v = %s, want %s", tc.name, tc.p, got, tc.want)
		}
	}
}

// TestWriteQueues: shares of every leaf add up to root's 100, as the
// queue tree requires, however many leaves.
func TestWriteQueues(t *testing.T) {
	for _, n := range []int{1, 3, 7, 20} {
		path, names, err := writeQueues(t.TempDir(), n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var qs []struct {
			Path     string  `json:"path"`
			Capacity float32 `json:"capacity"`
		}
		if err := json.Unmarshal(b, &qs); err != nil {
			t.Fatal(err)
		}
		var sum float32
		for _, q := range qs[1:] {
			sum += q.Capacity
		}
		if len(names) != n || len(qs) != n+1 || qs[0].Path != "root" || sum < 99.99 || sum > 100.01 {
			t.Errorf("%d leaves: %d names, %d queues, root %q, shares sum to %v", n, len(names), len(qs), qs[0].Path, sum)
		}
		if filepath.Base(path) != "queues.json" {
			t.Errorf("written to %s", path)
		}
	}
}

// TestParseCycles reads the allocator's log lines as slog's text handler
// writes them, other lines ignored.
func TestParseCycles(t *testing.T) {
	logs := `time=2026-11-26T04:29:16.497Z level=INFO msg="application accepted" app=application_1_0100 count=7
time=2026-11-26T04:29:16.584Z level=INFO msg="granted containers" count=100 pending=100 build=41ms decide=27ms grant=12ms
time=2026-11-26T04:29:21.223Z level=INFO msg="granted containers" count=9900 pending=9900 build=685ms decide=1.933s grant=2.021s
time=2026-11-26T04:29:22.000Z level=INFO msg="granted containers" count=1 pending=1 build=6ms decide=0s grant=1ms`
	got := parseCycles(logs)
	want := cycleTimes{count: 10001, build: 732 * time.Millisecond, decide: 1960 * time.Millisecond}
	if got != want {
		t.Errorf("parseCycles = %+v, want %+v", got, want)
	}
}

// TestDecisionsPerSecond reads the scheduler core's metric from its
// benchmark's output, as `go test` prints it.
func TestDecisionsPerSecond(t *testing.T) {
	cases := []struct {
		name, out string
		want      float64
		ok        bool
	}{
		{"a run", `goos: linux
BenchmarkSchedule/10k/score=100/cycle+apply-2   	       3	 806606472 ns/op	       537.7 apply-ms	    119131 decisions/s	     96000 pods/cycle
PASS`, 119131, true},
		{"no such benchmark", "testing: warning: no tests to run\nPASS\n", 0, false},
		{"without the metric", "BenchmarkSchedule/10k/score=100/cycle+apply-2 3 806606472 ns/op\n", 0, false},
	}
	for _, c := range cases {
		got, ok := decisionsPerSecond(c.out)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
