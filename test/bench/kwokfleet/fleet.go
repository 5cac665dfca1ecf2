// Package kwokfleet is the benchmarks' cluster: a private control plane
// (etcd, kube-apiserver, kube-controller-manager; no kube-scheduler, and
// no kubelet unless Options.RealNode), away from the e2e suites' cluster,
// with a fleet of kwok's fake nodes — and the processes a benchmark
// starts on it.
package kwokfleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator/kubeclient"
)

// NodeLabel is the label every fleet node carries: "type=kwok" on kwok's
// nodes, "type=real" (RealLabel) on the real one.
const NodeLabel = "type"

// RealLabel is NodeLabel's value on the real node (Options.RealNode).
const RealLabel = "real"

// Options configures a fleet.
type Options struct {
	// Nodes is how many kwok nodes (NodeCPU, NodeMemory, 110 pods each).
	Nodes int
	// NodeCPU and NodeMemory are each node's capacity and allocatable
	// (default 32 and 256Gi).
	NodeCPU, NodeMemory resource.Quantity
	// Keep leaves the control plane (and an earlier run's objects) up.
	Keep bool
	// Logs is where kwok's log goes, and the benchmark's processes' (a
	// directory removed with the fleet if unset).
	Logs string
	// RealNode brings the control plane up with its node, this machine's
	// kubelet and containerd (test/kube/node-up.sh, state under the
	// fleet's WEFT_KUBE_STATE), beside the kwok nodes, labelled
	// NodeLabel=RealLabel. Off by default: the other benchmarks measure
	// the control plane alone. Only one cluster's node can run on the
	// machine (they would share the kubelet's cgroup root and ports):
	// with the e2e suites' node up, Start fails naming it.
	RealNode bool
	// ControlPlaneCPUs, when set (a Linux CPU list: "0", "0-1"), runs
	// the control plane (etcd, kube-apiserver, kube-controller-manager)
	// on these CPUs alone, and kwok, the benchmark and every process it
	// starts on the others, as a cluster's control plane has machines
	// of its own: a benchmark of the API server's ceiling then measures
	// the API server, not what its clients' CPU leaves it on a shared
	// machine. Unset, all share every CPU. A control plane kept (Keep)
	// stays pinned after the benchmark, until it is brought down.
	ControlPlaneCPUs string
}

// Fleet is a running control plane with its kwok nodes.
type Fleet struct {
	Cluster *kube.Cluster
	// Bin holds Weft's commands, built for this run; Logs, the logs;
	// Work is scratch space, removed with the fleet.
	Bin, Logs, Work string
	// Client is the benchmark's own client, with limits high enough that
	// it is never what a run measures.
	Client kubernetes.Interface
	// RealNode is the real node's name (Options.RealNode), else "".
	RealNode string
	kwok     *kube.Process
	keep     bool
}

// NodeName is the name of the fleet's i-th node.
func NodeName(i int) string { return fmt.Sprintf("kwok-node-%04d", i) }

// Start builds Weft's commands, brings the control plane up (purging an
// earlier run's unless Keep), starts kwok and creates the nodes, and
// returns once every node is Ready and schedulable.
func Start(ctx context.Context, o Options) (f *Fleet, err error) {
	var split *cpuSplit
	if o.ControlPlaneCPUs != "" {
		// Checked before the minutes of building and setup.
		allowed, err := allowedCPUs()
		if err != nil {
			return nil, err
		}
		s, err := splitCPUs(o.ControlPlaneCPUs, allowed)
		if err != nil {
			return nil, err
		}
		split = &s
	}
	f = &Fleet{keep: o.Keep, Logs: o.Logs}
	defer func() {
		if err != nil {
			f.Stop()
			f = nil
		}
	}()
	if f.Work, err = os.MkdirTemp("", "weft-bench-"); err != nil {
		return f, err
	}
	if f.Logs == "" {
		f.Logs = filepath.Join(f.Work, "logs")
	}
	if err := os.MkdirAll(f.Logs, 0o755); err != nil {
		return f, err
	}
	f.Bin = filepath.Join(f.Work, "bin")
	if err := e2e.BuildBinaries(ctx, f.Bin); err != nil {
		return f, err
	}
	kwokBin, err := kube.Kwok(ctx)
	if err != nil {
		return f, err
	}
	os.Setenv("WEFT_KUBE_STATE", filepath.Join(kube.Cache(), "bench-kube"))
	os.Setenv("WEFT_ETCD_PORT", "24790")
	os.Setenv("WEFT_APISERVER_PORT", "27443")
	os.Setenv("WEFT_KUBE_NODE", "0")
	if o.RealNode {
		os.Setenv("WEFT_KUBE_NODE", "1")
	}
	os.Setenv("WEFT_KUBE_SCHEDULER", "0")
	if !o.Keep {
		// An earlier run's nodes and pods would be measured with this one.
		if err := kube.Purge(ctx); err != nil {
			return f, err
		}
	}
	if split != nil {
		// The control plane's processes start on its CPUs, so that each
		// sizes itself (GOMAXPROCS) to them; pinControlPlane below pins
		// one already running (Keep) too.
		if err := pinProcess(os.Getpid(), split.controlPlane); err != nil {
			return f, err
		}
	}
	if f.Cluster, err = kube.Up(ctx); err != nil {
		return f, err
	}
	if split != nil {
		if err := pinControlPlane(*split, kube.ControlPlanePIDs()); err != nil {
			return f, err
		}
		fmt.Printf("control plane on CPUs %s; kwok, the benchmark and what it starts on CPUs %s\n", split.controlPlane, split.rest)
	}
	cluster := f.Cluster
	cfg := *cluster.Config
	cfg.QPS, cfg.Burst = 5000, 10000
	if f.Client, err = kubeclient.New(&cfg); err != nil {
		return f, err
	}
	if f.kwok, err = kube.StartProcess(filepath.Join(f.Logs, "kwok.log"), kwokBin, kube.KwokArgs(cluster.Kubeconfig)...); err != nil {
		return f, err
	}
	if o.RealNode {
		if f.RealNode, err = f.labelRealNode(ctx); err != nil {
			return f, err
		}
	}
	fmt.Printf("creating %d kwok nodes…\n", o.Nodes)
	if err := f.createNodes(ctx, o); err != nil {
		return f, err
	}
	return f, f.waitNodesSchedulable(ctx, o.Nodes)
}

// Stop stops kwok and, unless Keep, the control plane.
func (f *Fleet) Stop() error {
	if f.kwok != nil {
		f.kwok.Stop()
	}
	defer os.RemoveAll(f.Work)
	if f.keep || f.Cluster == nil {
		return nil
	}
	return kube.Down(context.Background())
}

// Processes are the fleet's own processes by name: the control plane's
// (kube.ControlPlanePIDs) and kwok's — whose CPU a benchmark accounts
// beside the process it measures.
func (f *Fleet) Processes() map[string]int {
	pids := kube.ControlPlanePIDs()
	if f.kwok != nil {
		pids["kwok"] = f.kwok.PID()
	}
	return pids
}

// ClientWith is a client of the fleet's API server with the given
// limits. Like Client it speaks protobuf (kubeclient.Protobuf), as
// kube-scheduler and weft-rm do, so that a benchmark's own binders cost
// the API server what the schedulers' calls cost it.
//
// It has connections of its own (kubeclient.Protobuf gives each config a
// transport), as a process that starts has: a binder sharing the
// benchmark's transport — warm from creating the pods, and from the
// rounds before — would skip the dialing every scheduler pays at its
// start (test/bench/binding: its first bind 0.02 s after its start on a
// warm transport of client-go's, 0.5–1 s on a new one).
func (f *Fleet) ClientWith(qps float64, burst int) *kubernetes.Clientset {
	c := *f.Cluster.Config
	c.QPS, c.Burst = float32(qps), burst
	return kubernetes.NewForConfigOrDie(kubeclient.Protobuf(&c))
}

func (f *Fleet) createNodes(ctx context.Context, o Options) error {
	cpu, mem := o.NodeCPU, o.NodeMemory
	if cpu.IsZero() {
		cpu = resource.MustParse("32")
	}
	if mem.IsZero() {
		mem = resource.MustParse("256Gi")
	}
	return Parallel(ctx, o.Nodes, 64, func(i int) error {
		name := NodeName(i)
		capacity := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem, corev1.ResourcePods: resource.MustParse("110")}
		_, err := f.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{kube.KwokNodeAnnotation: "fake"},
				Labels: map[string]string{NodeLabel: "kwok", corev1.LabelHostname: name}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// labelRealNode labels the kubelet's node NodeLabel=RealLabel and
// returns its name: the one node kwok does not manage.
func (f *Fleet) labelRealNode(ctx context.Context) (string, error) {
	nodes, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("real node: %w", err)
	}
	name := RealNodeOf(nodes.Items)
	if name == "" {
		return "", errors.New("real node: the kubelet's Node is not registered")
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, NodeLabel, RealLabel)
	if _, err := f.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("label real node %s: %w", name, err)
	}
	fmt.Printf("real node %s joins the fleet\n", name)
	return name, nil
}

// RealNodeOf is the name of the first node of nodes kwok does not manage
// (no KwokNodeAnnotation), or "".
func RealNodeOf(nodes []corev1.Node) string {
	for _, n := range nodes {
		if _, fake := n.Annotations[kube.KwokNodeAnnotation]; !fake {
			return n.Name
		}
	}
	return ""
}

// waitNodesSchedulable waits until every kwok node is Ready and the node
// lifecycle controller has lifted its not-ready taint.
func (f *Fleet) waitNodesSchedulable(ctx context.Context, n int) error {
	start := time.Now()
	for {
		nodes, err := f.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: NodeLabel + "=kwok"})
		if err != nil {
			return err
		}
		ok := 0
		for _, node := range nodes.Items {
			ready := false
			for _, c := range node.Status.Conditions {
				ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
			}
			if ready && len(node.Spec.Taints) == 0 {
				ok++
			}
		}
		if ok >= n {
			fmt.Printf("%d nodes schedulable after %s\n", ok, time.Since(start).Round(time.Second))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d nodes schedulable: %w", ok, n, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// Parallel runs fn for 0..n-1, width at a time, and returns the first
// error.
func Parallel(ctx context.Context, n, width int, fn func(int) error) error {
	var (
		next     atomic.Int64
		firstErr error
		mu       sync.Mutex
		wg       sync.WaitGroup
	)
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// Run runs a benchmark over a fleet started for it and stopped after:
// bounded by timeout, ended early by SIGINT or SIGTERM.
func Run(timeout time.Duration, o Options, bench func(ctx context.Context, f *Fleet) error) (err error) {
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, timeout)
	defer cancel()
	fleet, err := Start(ctx, o)
	if err != nil {
		return err
	}
	defer func() {
		if serr := fleet.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	return bench(ctx, fleet)
}
