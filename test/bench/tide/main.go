// Command tide measures the tidal controller on a pool of kwok nodes with
// online pods: how long weft-tide takes to lend -move nodes to batch
// (Online → OnlineToOffline → Offline: tainted, online pods evicted) and
// to take them back (→ OfflineToOnline → Online, notice 0, no hooks), and
// its CPU per node transition, beside the floor measured in the same run:
// the benchmark itself writing the same labels, taints and annotations
// and evicting the same pods straight to the API server, with the same
// client limits and parallelism and no deciding at all. Targets: each
// move at most 1.5× the floor, the controller under one core.
//
//	go run ./test/bench/tide [-nodes 1000] [-move 100] [-rounds 1]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/test/bench/kwokfleet"
	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator/wellknown"
)

type options struct {
	nodes, move, rounds int
	qps                 float64
	burst, parallelism  int
	keep                bool
	logs                string
}

func main() {
	ctrllog.SetLogger(logr.Discard()) // the controller-runtime client used here logs nothing worth reading
	var o options
	flag.IntVar(&o.nodes, "nodes", 1000, "kwok nodes in the pool, one online pod (1 CPU) on each")
	flag.IntVar(&o.move, "move", 100, "nodes lent and taken back per move")
	flag.IntVar(&o.rounds, "rounds", 1, "rounds; each measures weft-tide and the floor")
	flag.Float64Var(&o.qps, "qps", 200, "API client QPS of weft-tide and of the floor")
	flag.IntVar(&o.burst, "burst", 400, "API client burst of weft-tide and of the floor")
	flag.IntVar(&o.parallelism, "parallelism", 16, "nodes written at once, by weft-tide (--parallelism) and by the floor")
	flag.BoolVar(&o.keep, "keep-cluster", false, "leave the benchmark's control plane up")
	flag.StringVar(&o.logs, "logs", "", "keep weft-tide's and kwok's logs in this directory")
	flag.Parse()
	err := kwokfleet.Run(45*time.Minute, kwokfleet.Options{Nodes: o.nodes, Keep: o.keep, Logs: o.logs}, func(ctx context.Context, fleet *kwokfleet.Fleet) error {
		return measure(ctx, o, fleet)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "tide:", err)
		os.Exit(1)
	}
}

const (
	poolName = "bench"
	onlineNS = "online"
)

func measure(ctx context.Context, o options, fleet *kwokfleet.Fleet) error {
	bin, logs := fleet.Bin, fleet.Logs
	// The nodes' informer ends with the measurement, before the fleet.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	b := &bench{o: o, fleet: fleet, client: fleet.Client}
	if err := b.setup(ctx); err != nil {
		return err
	}

	var weftLend, weftBack, floorLend, floorBack []time.Duration
	var cpu time.Duration
	for round := 1; round <= o.rounds; round++ {
		lend, back, c, err := b.weft(ctx, filepath.Join(bin, "weft-tide"), filepath.Join(logs, fmt.Sprintf("weft-tide-%d.log", round)))
		if err != nil {
			return fmt.Errorf("weft-tide, round %d: %w", round, err)
		}
		weftLend, weftBack, cpu = append(weftLend, lend), append(weftBack, back), cpu+c
		fmt.Printf("round %d  weft-tide  lend %d nodes %6.2fs, take back %6.2fs, CPU %.2fs (%.1f ms per transition, %.2f cores)\n",
			round, o.move, lend.Seconds(), back.Seconds(), c.Seconds(), perTransition(c, o.move), c.Seconds()/(lend+back).Seconds())
		if err := b.restore(ctx); err != nil {
			return err
		}
		lend, back, err = b.floor(ctx)
		if err != nil {
			return fmt.Errorf("floor, round %d: %w", round, err)
		}
		floorLend, floorBack = append(floorLend, lend), append(floorBack, back)
		fmt.Printf("round %d  floor      lend %d nodes %6.2fs, take back %6.2fs\n", round, o.move, lend.Seconds(), back.Seconds())
		if err := b.restore(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("\n%d kwok nodes, %d moved each way, client QPS %g burst %d parallelism %d for both, median of %d round(s):\n",
		o.nodes, o.move, o.qps, o.burst, o.parallelism, o.rounds)
	wl, wb, fl, fb := median(weftLend), median(weftBack), median(floorLend), median(floorBack)
	fmt.Printf("  lend       weft-tide %6.2fs  floor %6.2fs  ratio %.2f× (target ≤ 1.5×)\n", wl.Seconds(), fl.Seconds(), wl.Seconds()/fl.Seconds())
	fmt.Printf("  take back  weft-tide %6.2fs  floor %6.2fs  ratio %.2f× (target ≤ 1.5×)\n", wb.Seconds(), fb.Seconds(), wb.Seconds()/fb.Seconds())
	var wall time.Duration
	for i := range weftLend {
		wall += weftLend[i] + weftBack[i]
	}
	fmt.Printf("  weft-tide CPU: %.1f ms per node transition, %.2f cores while moving (target < 1)\n",
		perTransition(cpu, o.move*o.rounds), cpu.Seconds()/wall.Seconds())
	return nil
}

// perTransition is CPU per node transition in ms: a node lent and taken
// back walks four.
func perTransition(cpu time.Duration, nodes int) float64 {
	return float64(cpu.Milliseconds()) / float64(4*nodes)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

type bench struct {
	o      options
	fleet  *kwokfleet.Fleet
	client kubernetes.Interface
	ctrl   client.Client
	nodes  cache.Store
}

// setup installs the TidePool CRD, a pool over every kwok node that
// lends nothing yet, and one online pod per node, and starts watching
// the nodes.
func (b *bench) setup(ctx context.Context) error {
	if _, err := b.fleet.Cluster.Apply(ctx, "deploy/crds/weft.io_tidepools.yaml"); err != nil {
		return err
	}
	scheme, err := tide.NewScheme()
	if err != nil {
		return err
	}
	if b.ctrl, err = client.New(b.fleet.Cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	zero := int32(0)
	pool := &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: poolName}, Spec: v1alpha1.TidePoolSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{kwokfleet.NodeLabel: "kwok"}},
		MaxLentNodes: &zero, Notice: &metav1.Duration{}, WatermarkPercent: 90, BandPercent: 5,
	}}
	// The CRD is served a moment after it is created.
	for deadline := time.Now().Add(time.Minute); ; {
		err = b.ctrl.Create(ctx, pool)
		if err == nil || apierrors.IsAlreadyExists(err) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("create pool: %w", err)
		}
		time.Sleep(time.Second)
	}
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: onlineNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	factory := informers.NewSharedInformerFactory(b.client, 0)
	inf := factory.Core().V1().Nodes().Informer()
	b.nodes = inf.GetStore()
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	return b.restore(ctx)
}

// restore brings the pool back to where each measurement starts: every
// node Online with no tide marks, one online pod on each, the pool
// lending nothing.
func (b *bench) restore(ctx context.Context) error {
	if err := b.patchPool(ctx, `{"spec":{"maxLentNodes":0,"minOnlineNodes":0}}`); err != nil {
		return err
	}
	err := kwokfleet.Parallel(ctx, b.o.nodes, 64, func(i int) error {
		name := kwokfleet.NodeName(i)
		n, err := b.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if tide.StateOf(n) != v1alpha1.StateOnline || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == wellknown.TaintTide }) {
			return fmt.Errorf("node %s left %s with taints %v", name, tide.StateOf(n), n.Spec.Taints)
		}
		_, err = b.client.CoreV1().Pods(onlineNS).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + name, Namespace: onlineNS},
			Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "fake", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("restore the pool: %w", err)
	}
	return nil
}

func (b *bench) patchPool(ctx context.Context, patch string) error {
	pool := &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}
	return b.ctrl.Patch(ctx, pool, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// states counts the pool's nodes per tide state, from the informer.
func (b *bench) states() map[v1alpha1.NodeState]int {
	out := map[v1alpha1.NodeState]int{}
	for _, o := range b.nodes.List() {
		out[tide.StateOf(o.(*corev1.Node))]++
	}
	return out
}

// waitStates waits until the informer's nodes satisfy ok, and returns
// when it first saw them do so.
func (b *bench) waitStates(ctx context.Context, what string, ok func(map[v1alpha1.NodeState]int) bool) (time.Time, error) {
	for {
		if s := b.states(); ok(s) {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%s: nodes %v: %w", what, b.states(), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// weft measures weft-tide: started over the settled pool, it is given
// room to lend -move nodes, then told to keep every node Online.
func (b *bench) weft(ctx context.Context, bin, logFile string) (lend, back, cpu time.Duration, err error) {
	proc, err := kube.StartProcess(logFile, bin, "--kubeconfig", b.fleet.Cluster.Kubeconfig, "--leader-elect=false",
		"--kube-api-qps", fmt.Sprint(b.o.qps), "--kube-api-burst", fmt.Sprint(b.o.burst), "--parallelism", fmt.Sprint(b.o.parallelism), "--log-level", "DEBUG")
	if err != nil {
		return 0, 0, 0, err
	}
	defer proc.Stop()
	// Started and settled: it has claimed every node and said so.
	for {
		var pool v1alpha1.TidePool
		if err := b.ctrl.Get(ctx, types.NamespacedName{Name: poolName}, &pool); err != nil {
			return 0, 0, 0, err
		}
		if meta.IsStatusConditionTrue(pool.Status.Conditions, tide.ConditionReady) && int(pool.Status.Nodes.Online) == b.o.nodes &&
			pool.Status.ObservedGeneration == pool.Generation {
			break
		}
		select {
		case <-ctx.Done():
			return 0, 0, 0, ctx.Err()
		case <-proc.Exited():
			return 0, 0, 0, fmt.Errorf("weft-tide exited; see %s", logFile)
		case <-time.After(200 * time.Millisecond):
		}
	}
	cpu0, err := e2e.ProcessCPU(proc.PID())
	if err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	if err := b.patchPool(ctx, fmt.Sprintf(`{"spec":{"maxLentNodes":%d}}`, b.o.move)); err != nil {
		return 0, 0, 0, err
	}
	end, err := b.waitStates(ctx, "lend", func(s map[v1alpha1.NodeState]int) bool { return s[v1alpha1.StateOffline] == b.o.move })
	if err != nil {
		return 0, 0, 0, err
	}
	lend = end.Sub(start)
	start = time.Now()
	if err := b.patchPool(ctx, fmt.Sprintf(`{"spec":{"minOnlineNodes":%d}}`, b.o.nodes)); err != nil {
		return 0, 0, 0, err
	}
	end, err = b.waitStates(ctx, "take back", func(s map[v1alpha1.NodeState]int) bool { return s[v1alpha1.StateOnline] == b.o.nodes })
	if err != nil {
		return 0, 0, 0, err
	}
	back = end.Sub(start)
	cpu1, err := e2e.ProcessCPU(proc.PID())
	return lend, back, cpu1 - cpu0, err
}

// floor makes the same moves with no controller: the benchmark picks
// -move nodes and, -parallelism at a time, writes what weft-tide writes
// (state label, taint, annotations), evicts each node's online pods and
// waits for them to go, and writes the next state.
func (b *bench) floor(ctx context.Context) (lend, back time.Duration, err error) {
	cl := b.fleet.ClientWith(b.o.qps, b.o.burst)
	names := make([]string, b.o.move)
	for i := range names {
		names[i] = kwokfleet.NodeName(i)
	}
	start := time.Now()
	// What a controller knows from its cache, the floor asks once.
	pods, err := cl.CoreV1().Pods(onlineNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	byNode := map[string][]string{}
	for _, p := range pods.Items {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p.Name)
	}
	err = kwokfleet.Parallel(ctx, len(names), b.o.parallelism, func(i int) error {
		node := names[i]
		if err := setState(ctx, cl, node, v1alpha1.StateOnlineToOffline, wellknown.TaintTideTransition, nil); err != nil {
			return err
		}
		for _, p := range byNode[node] {
			err := cl.PolicyV1().Evictions(onlineNS).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p, Namespace: onlineNS}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		for _, p := range byNode[node] {
			for {
				if _, err := cl.CoreV1().Pods(onlineNS).Get(ctx, p, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					break
				} else if err != nil {
					return err
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		return setState(ctx, cl, node, v1alpha1.StateOffline, wellknown.TaintTideOffline, nil)
	})
	if err != nil {
		return 0, 0, err
	}
	end, err := b.waitStates(ctx, "floor lend", func(s map[v1alpha1.NodeState]int) bool { return s[v1alpha1.StateOffline] == b.o.move })
	if err != nil {
		return 0, 0, err
	}
	lend = end.Sub(start)
	start = time.Now()
	err = kwokfleet.Parallel(ctx, len(names), b.o.parallelism, func(i int) error {
		deadline := time.Now().UTC().Format(time.RFC3339)
		if err := setState(ctx, cl, names[i], v1alpha1.StateOfflineToOnline, wellknown.TaintTideTransition,
			map[string]any{wellknown.AnnotationTideNoticeDeadline: deadline, wellknown.AnnotationTideNoticedPods: "0"}); err != nil {
			return err
		}
		return setState(ctx, cl, names[i], v1alpha1.StateOnline, "", map[string]any{wellknown.AnnotationTideNoticeDeadline: nil, wellknown.AnnotationTideNoticedPods: nil})
	})
	if err != nil {
		return 0, 0, err
	}
	end, err = b.waitStates(ctx, "floor take back", func(s map[v1alpha1.NodeState]int) bool { return s[v1alpha1.StateOnline] == b.o.nodes })
	return lend, end.Sub(start), err
}

// setState writes a node's tide state as weft-tide does: one patch of
// its label, taint and annotations (the taint list read first, as a
// controller reads it from its cache).
func setState(ctx context.Context, cl kubernetes.Interface, node string, s v1alpha1.NodeState, taint string, annotations map[string]any) error {
	n, err := cl.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != wellknown.TaintTide {
			taints = append(taints, t)
		}
	}
	if taint != "" {
		taints = append(taints, corev1.Taint{Key: wellknown.TaintTide, Value: taint, Effect: corev1.TaintEffectNoSchedule})
	}
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations[wellknown.AnnotationTideSince] = time.Now().UTC().Format(time.RFC3339)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": map[string]string{wellknown.LabelTideState: string(s)}, "annotations": annotations},
		"spec":     map[string]any{"taints": taints},
	})
	if err != nil {
		return err
	}
	_, err = cl.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
