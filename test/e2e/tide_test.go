package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The tidal controller on the local control plane, over a pool of kwok
// nodes: the API server, kube-controller-manager (the Deployment's
// ReplicaSet, the PodDisruptionBudget's status) and kube-scheduler are
// real; kwok plays the kubelets. weft-tide and weft-rm (Weft's scheduler,
// binding the batch pods) run as processes.
var _ = Describe("The tidal controller over a pool of kwok nodes", Ordered, func() {
	const (
		poolLabel = "weft.io/e2e-tide"
		ns        = "weft-e2e-tide"
		scheduler = "weft-e2e-tide"
		nodes     = 4
	)
	var (
		cluster *kube.Cluster
		ctrl    client.Client
	)
	nodeName := func(i int) string { return fmt.Sprintf("tide-kwok-%d", i) }

	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err = kube.Up(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kube.Down)
		kwokBin, err := kube.Kwok(ctx)
		Expect(err).NotTo(HaveOccurred())
		kwok, err := kube.StartProcess(filepath.Join(GinkgoT().TempDir(), "kwok.log"), kwokBin, kube.KwokArgs(cluster.Kubeconfig)...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kwok.Stop)
		ctrl = tideClient(ctx, cluster)
	}, NodeTimeout(10*time.Minute))

	It("refuses invalid pools at the API server, saying why", func(ctx SpecContext) {
		valid := func() *v1alpha1.TidePool {
			return &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: "invalid"}, Spec: v1alpha1.TidePoolSpec{
				NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: "none"}}}}
		}
		for _, c := range []struct {
			name   string
			breaks func(*v1alpha1.TidePool)
			says   string
		}{
			{"watermark over 100", func(p *v1alpha1.TidePool) { p.Spec.WatermarkPercent = 150 }, "spec.watermarkPercent"},
			{"window ending before it starts", func(p *v1alpha1.TidePool) {
				p.Spec.Windows = []v1alpha1.TimedWindow{{From: metav1.NewTime(time.Now()), To: metav1.NewTime(time.Now().Add(-time.Hour))}}
			}, "to must be after from"},
			{"hook that is not HTTP", func(p *v1alpha1.TidePool) { p.Spec.Hooks = []v1alpha1.Hook{{Name: "x", URL: "ftp://example"}} }, "spec.hooks[0].url"},
			{"unknown policy", func(p *v1alpha1.TidePool) { p.Spec.Policy = "Random" }, "spec.policy"},
		} {
			p := valid()
			c.breaks(p)
			err := ctrl.Create(ctx, p)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", c.name, err)
			Expect(err.Error()).To(ContainSubstring(c.says), c.name)
		}
	}, SpecTimeout(time.Minute))

	It("lends nodes as an online Deployment scales in and takes them back, after notice, as it scales out", func(ctx SpecContext) {
		core := cluster.Client.CoreV1()
		_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		Expect(ignoreAlreadyExists(err)).To(Succeed())
		// Nodes of 8 CPUs; what is left of them and of the namespace must
		// not reach the suites after (they count one node).
		DeferCleanup(func(ctx SpecContext) {
			_ = ctrl.Delete(ctx, &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}})
			zero := int64(0)
			_ = cluster.Client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{})
			_ = core.Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
			for i := range nodes {
				_ = core.Nodes().Delete(ctx, nodeName(i), metav1.DeleteOptions{})
			}
			_ = core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		})
		for i := range nodes {
			capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
				corev1.ResourcePods: resource.MustParse("110")}
			_, err := core.Nodes().Create(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Annotations: map[string]string{kube.KwokNodeAnnotation: "fake"},
					Labels: map[string]string{poolLabel: "pool", corev1.LabelHostname: nodeName(i)}},
				Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
			}, metav1.CreateOptions{})
			Expect(ignoreAlreadyExists(err)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			list, err := core.Nodes().List(ctx, metav1.ListOptions{LabelSelector: poolLabel})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(nodes))
			for _, n := range list.Items {
				g.Expect(n.Spec.Taints).To(BeEmpty(), "node %s", n.Name)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		// Every state each node walks, in order, and the fewest web pods
		// Ready at once once the service settled: the informer sees what
		// the API server stored.
		var (
			mu       sync.Mutex
			walked   = map[string][]v1alpha1.NodeState{}
			minReady = -1
			settled  bool
			// batchGone is when each batch pod was first seen evicted.
			batchGone = map[string]time.Time{}
		)
		factory := informers.NewSharedInformerFactoryWithOptions(cluster.Client, 0)
		nodeInf := factory.Core().V1().Nodes().Informer()
		onNode := func(obj any) {
			n, ok := obj.(*corev1.Node)
			if !ok || n.Labels[poolLabel] == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			s := tide.StateOf(n)
			if w := walked[n.Name]; len(w) == 0 || w[len(w)-1] != s {
				walked[n.Name] = append(w, s)
			}
		}
		_, _ = nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onNode, UpdateFunc: func(_, obj any) { onNode(obj) }})
		podInf := factory.Core().V1().Pods().Informer()
		onPod := func(obj any, deleted bool) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			mu.Lock()
			defer mu.Unlock()
			if p, ok := obj.(*corev1.Pod); ok && p.Namespace == ns && p.Labels[wellknown.LabelTier] != "" {
				if _, seen := batchGone[p.Name]; !seen && (p.DeletionTimestamp != nil || deleted) {
					batchGone[p.Name] = time.Now()
				}
			}
			if !settled {
				return
			}
			ready := 0
			for _, o := range podInf.GetStore().List() {
				p := o.(*corev1.Pod)
				if p.Namespace == ns && p.Labels["app"] == "web" && p.DeletionTimestamp == nil && podReady(p) {
					ready++
				}
			}
			if minReady < 0 || ready < minReady {
				minReady = ready
			}
		}
		_, _ = podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) { onPod(o, false) },
			UpdateFunc: func(_, o any) { onPod(o, false) }, DeleteFunc: func(o any) { onPod(o, true) }})
		stop := make(chan struct{})
		DeferCleanup(func() { close(stop) })
		go nodeInf.Run(stop)
		go podInf.Run(stop)

		// The hooks' endpoint.
		var calls []tide.HookCall
		hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var c tide.HookCall
			if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			calls = append(calls, c)
			mu.Unlock()
		}))
		DeferCleanup(hooks.Close)

		// The online service: 8 replicas of 3 CPUs, two per node (24 of
		// 32 CPUs: 75%), at most one unavailable at a time.
		replicas := int32(8)
		labels := map[string]string{"app": "web"}
		_, err = cluster.Client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					NodeSelector: map[string]string{poolLabel: "pool"},
					Containers: []corev1.Container{{Name: "web", Image: "fake", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		one := intstr.FromInt32(1)
		_, err = cluster.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		webReady := func(g Gomega, want int) []corev1.Pod {
			list, err := core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			g.Expect(err).NotTo(HaveOccurred())
			var ready []corev1.Pod
			for _, p := range list.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					ready = append(ready, p)
				}
			}
			g.Expect(ready).To(HaveLen(want))
			return ready
		}
		Eventually(func(g Gomega) { webReady(g, 8) }).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		// The pool: lend below 80%, take back above 85%, 20 s of notice.
		Expect(ctrl.Create(ctx, &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: "e2e"}, Spec: v1alpha1.TidePoolSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: "pool"}}, WatermarkPercent: 80, BandPercent: 5,
			MinOnlineNodes: 1, Notice: &metav1.Duration{Duration: 20 * time.Second}, DrainTimeout: &metav1.Duration{Duration: 3 * time.Minute},
			Hooks: []v1alpha1.Hook{{Name: "cmdb", URL: hooks.URL + "/tide"}},
		}})).To(Succeed())
		tideProc := startTide(cluster, scheduler)
		startRM(ctx, "--kubeconfig", cluster.Kubeconfig, "--local-node=false", "--profile", "plain", "--scheduler-name", scheduler,
			"--cluster-id", "tide-e2e", "--namespace", ns)

		// At 75% nothing is lent; the node lent next (two pods each: by
		// name) has its web pods marked to go first on scale-in.
		Eventually(func(g Gomega) {
			var pool v1alpha1.TidePool
			g.Expect(ctrl.Get(ctx, types.NamespacedName{Name: "e2e"}, &pool)).To(Succeed())
			g.Expect(pool.Status.LevelPercent).To(Equal(int32(75)))
			g.Expect(pool.Status.Nodes.Online).To(Equal(int32(nodes)))
			for _, p := range webReady(g, 8) {
				if p.Spec.NodeName == nodeName(0) {
					g.Expect(p.Annotations).To(HaveKeyWithValue("controller.kubernetes.io/pod-deletion-cost", "-1"), "pod %s", p.Name)
				}
			}
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		// The trough: 3 replicas, 9 of 32 CPUs. Two nodes are lent (9/16
		// = 56%; a third would make 113%): their web pods evicted within
		// the PDB, the hook told.
		mu.Lock()
		settled = true
		mu.Unlock()
		scale(ctx, cluster, ns, "web", 3)
		var lent []string
		Eventually(func(g Gomega) {
			list, err := core.Nodes().List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelTideState + "=" + string(v1alpha1.StateOffline)})
			g.Expect(err).NotTo(HaveOccurred())
			lent = nil
			for _, n := range list.Items {
				lent = append(lent, n.Name)
			}
			g.Expect(lent).To(HaveLen(2))
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		// No web pod on them (one bound as a node was being lent, by a
		// kube-scheduler that had not seen its taint yet, is evicted).
		noWebOnLent := func(g Gomega) {
			for _, p := range webReady(g, 3) {
				g.Expect(lent).NotTo(ContainElement(p.Spec.NodeName))
			}
		}
		Eventually(noWebOnLent).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		Consistently(noWebOnLent).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
		mu.Lock()
		for _, n := range lent {
			Expect(walked[n]).To(Equal([]v1alpha1.NodeState{v1alpha1.StateOnline, v1alpha1.StateOnlineToOffline, v1alpha1.StateOffline}), "node %s", n)
			Expect(calls).To(ContainElement(tide.HookCall{Pool: "e2e", Node: n, From: v1alpha1.StateOnline, To: v1alpha1.StateOffline}))
		}
		Expect(minReady).To(BeNumerically(">=", 2), "the PDB allows one web pod down at a time")
		mu.Unlock()

		// Batch work takes each lent node whole: 8 CPUs, bound by Weft's
		// scheduler, tolerating the lent nodes' taint.
		for i := range 2 {
			_, err := core.Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("batch-%d", i), Namespace: ns,
					Labels: map[string]string{wellknown.LabelTier: records.TierLow.String()}},
				Spec: corev1.PodSpec{SchedulerName: scheduler, NodeSelector: map[string]string{poolLabel: "pool"},
					Tolerations: translator.BatchTolerations,
					Containers: []corev1.Container{{Name: "task", Image: "fake", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func(g Gomega) {
			var on []string
			for i := range 2 {
				p, err := core.Pods(ns).Get(ctx, fmt.Sprintf("batch-%d", i), metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(podReady(p)).To(BeTrue(), "pod %s", p.Name)
				on = append(on, p.Spec.NodeName)
			}
			g.Expect(on).To(ConsistOf(lent))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		// The peak: 8 replicas again, 24 CPUs on 16 online: both nodes
		// come back. Their batch pods run through the notice and are
		// evicted at its deadline; then the nodes are Online and the web
		// pods waiting land on them.
		scale(ctx, cluster, ns, "web", 8)
		deadlines := map[string]time.Time{}
		Eventually(func(g Gomega) {
			for _, name := range lent {
				n, err := core.Nodes().Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tide.StateOf(n)).To(Equal(v1alpha1.StateOfflineToOnline))
				d, err := time.Parse(time.RFC3339, n.Annotations[wellknown.AnnotationTideNoticeDeadline])
				g.Expect(err).NotTo(HaveOccurred())
				deadlines[name] = d
			}
		}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		// The controller dies mid-transition; a new one carries the moves
		// on from what the Nodes hold.
		tideProc.Kill()
		startTide(cluster, scheduler)
		batchOn := map[string]string{}
		for i := range 2 {
			p, err := core.Pods(ns).Get(ctx, fmt.Sprintf("batch-%d", i), metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			batchOn[p.Name] = p.Spec.NodeName
		}
		Eventually(func(g Gomega) {
			func() {
				mu.Lock()
				defer mu.Unlock()
				for name, node := range batchOn {
					// Evicted at the deadline, no earlier (to the second the
					// annotation keeps), and not long after.
					gone, ok := batchGone[name]
					g.Expect(ok).To(BeTrue(), "pod %s still runs", name)
					g.Expect(gone).To(BeTemporally(">=", deadlines[node].Add(-time.Second)), "pod %s evicted before the deadline", name)
					g.Expect(gone).To(BeTemporally("<", deadlines[node].Add(15*time.Second)), "pod %s outlived the notice", name)
				}
			}()
			web := webReady(g, 8)
			var onLent int
			for _, p := range web {
				if slices.Contains(lent, p.Spec.NodeName) {
					onLent++
				}
			}
			g.Expect(onLent).To(BeNumerically(">", 0), "web pods on the nodes taken back")
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		mu.Lock()
		defer mu.Unlock()
		for _, n := range lent {
			Expect(walked[n]).To(Equal([]v1alpha1.NodeState{v1alpha1.StateOnline, v1alpha1.StateOnlineToOffline, v1alpha1.StateOffline,
				v1alpha1.StateOfflineToOnline, v1alpha1.StateOnline}), "node %s", n)
			Expect(calls).To(ContainElement(tide.HookCall{Pool: "e2e", Node: n, From: v1alpha1.StateOffline, To: v1alpha1.StateOnline}))
		}
	}, SpecTimeout(10*time.Minute))
})

// lendNode makes node a pool of its own (name), lent while online work
// requests under 10% of it and taken back past 20% or when online pods
// wait, with notice; runs weft-tide over the cluster until the spec ends;
// and waits until the node is lent (Offline). The spec's end removes the
// pool and leaves the node as it was found.
func lendNode(ctx SpecContext, ctrl client.Client, cluster *kube.Cluster, name, node string, notice time.Duration) {
	GinkgoHelper()
	Expect(ctrl.Create(ctx, &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.TidePoolSpec{
		NodeSelector:     metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelHostname: node}},
		WatermarkPercent: 10, BandPercent: 10, Notice: &metav1.Duration{Duration: notice},
	}})).To(Succeed())
	DeferCleanup(removePool, ctrl, cluster, name, node)
	startTide(cluster, podbinder.DefaultSchedulerName)
	Eventually(func(g Gomega) {
		n, err := cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tide.StateOf(n)).To(Equal(v1alpha1.StateOffline))
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// removePool deletes a TidePool and leaves its node as it was found:
// no tide taint, label or annotation.
func removePool(ctx SpecContext, ctrl client.Client, cluster *kube.Cluster, pool, node string) {
	core := cluster.Client.CoreV1()
	_ = ctrl.Delete(ctx, &v1alpha1.TidePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != wellknown.TaintTide {
			taints = append(taints, t)
		}
	}
	n.Spec.Taints = taints
	delete(n.Labels, wellknown.LabelTideState)
	delete(n.Labels, wellknown.LabelTidePool)
	for _, a := range []string{wellknown.AnnotationTideSince, wellknown.AnnotationTideNoticeDeadline, wellknown.AnnotationTideNoticedPods, wellknown.AnnotationTideKilledPods, wellknown.AnnotationTideHooksDone} {
		delete(n.Annotations, a)
	}
	_, _ = core.Nodes().Update(ctx, n, metav1.UpdateOptions{})
}

// startTide runs weft-tide over the cluster until the spec ends, with
// batchScheduler's pods as batch work.
func startTide(cluster *kube.Cluster, batchScheduler string) *kube.Process {
	GinkgoHelper()
	log := filepath.Join(GinkgoT().TempDir(), "weft-tide.log")
	proc, err := kube.StartProcess(log, filepath.Join(binDir, "weft-tide"), "--kubeconfig", cluster.Kubeconfig, "--leader-elect=false",
		"--batch-scheduler-name", batchScheduler, "--busy-interval", "1s")
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		proc.Stop()
		if CurrentSpecReport().Failed() {
			b, _ := os.ReadFile(log)
			GinkgoWriter.Printf("weft-tide logs:\n%s\n", b)
		}
	})
	return proc
}

// tideClient is a client of the cluster that knows TidePools, with their
// CRD applied.
func tideClient(ctx SpecContext, cluster *kube.Cluster) client.Client {
	GinkgoHelper()
	root, err := repoRoot()
	Expect(err).NotTo(HaveOccurred())
	_, err = cluster.Apply(ctx, filepath.Join(root, "deploy", "crds", "weft.io_tidepools.yaml"))
	Expect(err).NotTo(HaveOccurred())
	scheme, err := tide.NewScheme()
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	// The CRD is served a moment after it is applied.
	Eventually(func() error { return c.List(ctx, &v1alpha1.TidePoolList{}) }).WithTimeout(time.Minute).Should(Succeed())
	return c
}

// scale sets a Deployment's replicas.
func scale(ctx SpecContext, cluster *kube.Cluster, ns, name string, replicas int32) {
	GinkgoHelper()
	_, err := cluster.Client.AppsV1().Deployments(ns).Patch(ctx, name, types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The notice path on the real node, with real YARN jobs: the node lent
// whole to batch work runs a DistributedShell job of short containers and
// a MapReduce job of long maps; online pods wait; the node is taken back
// with notice. The short containers end within it and are not killed;
// the maps are told (a PreemptionMessage) and killed PREEMPTED at the
// deadline, their AM with them; the MapReduce job still SUCCEEDS (its AM's
// next attempt, which the lost one does not use up, runs them again once
// the node is back Online), and the waiting online pod lands on the node.
var _ = Describe("The tide on the real node, with YARN jobs", Ordered, func() {
	const notice = 45 * time.Second
	var (
		y    *yarnOnKube
		ctrl client.Client
		node string
	)
	BeforeAll(func(ctx SpecContext) {
		cluster := clusterForJobs(ctx)
		nodes, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.Items).To(HaveLen(1))
		node = nodes.Items[0].Name
		ctrl = tideClient(ctx, cluster)
		y = startYarnOnKube(ctx, cluster, "3.4.1")
	}, NodeTimeout(20*time.Minute))

	It("gives batch work notice, kills only what outlives it, and the jobs succeed", func(ctx SpecContext) {
		core := y.cluster.Client.CoreV1()
		// Nothing else online on the node: lending it moves nothing.
		pods, err := core.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			Expect(p.Namespace).To(Equal(jobsNamespace), "pod %s/%s on the node", p.Namespace, p.Name)
		}
		// The peak below (15% of the node) takes it back and then keeps it.
		lendNode(ctx, ctrl, y.cluster, "real", node, notice)

		// A MapReduce job of two long maps (the default, no-op preemption
		// policy: its AM lets the RM end what it was told of), and a
		// DistributedShell job of containers ending well within the notice.
		tests := y.jobclientTests()
		Expect(y.dist.Classpath).To(ContainSubstring(tests))
		sleep := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.mapreduce.SleepJob",
			"-Dmapreduce.map.memory.mb=512", "-Dyarn.app.mapreduce.am.resource.mb=768", "-m", "2", "-r", "0", "-mt", "90000")
		var sleepOut bytes.Buffer
		sleep.Stdout, sleep.Stderr = &sleepOut, &sleepOut
		Expect(sleep.Start()).To(Succeed())
		sleepDone := make(chan error, 1)
		go func() { sleepDone <- sleep.Wait() }()
		sleepApp := y.waitRunning(ctx, "Sleep job", 3, func() error {
			select {
			case err := <-sleepDone:
				return fmt.Errorf("the sleep job ended early (%v):\n%s", err, sleepOut.String())
			default:
				return nil
			}
		})
		dsDone := make(chan string, 1)
		stopDS := y.watchPods(ctx, func() string { return y.appByName("ds-within-notice") })
		go func() {
			defer GinkgoRecover()
			err, out := y.distShell(ctx, "ds-within-notice", "-num_containers", "2", "-shell_command", "sleep 20")
			if err != nil {
				out = err.Error() + "\n" + out
			} else {
				out = ""
			}
			dsDone <- out
		}()
		y.waitRunning(ctx, "ds-within-notice", 3)

		// The peak: an online pod no Online node can take.
		n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		request := *resource.NewMilliQuantity(n.Status.Allocatable.Cpu().MilliValue()*15/100, resource.DecimalSI)
		peak := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "peak", Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: images.BusyboxRef, Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: request}}}}}}
		_, err = core.Pods("default").Create(ctx, peak, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			zero := int64(0)
			_ = core.Pods("default").Delete(ctx, "peak", metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		var deadline time.Time
		Eventually(func(g Gomega) {
			n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tide.StateOf(n)).To(Equal(v1alpha1.StateOfflineToOnline))
			deadline, err = time.Parse(time.RFC3339, n.Annotations[wellknown.AnnotationTideNoticeDeadline])
			g.Expect(err).NotTo(HaveOccurred())
		}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("node %s taken back, notice until %s\n", node, deadline.Format(time.RFC3339))

		// The short job ends within the notice, none of its pods killed.
		Eventually(dsDone).WithTimeout(notice + 30*time.Second).Should(Receive(BeEmpty()))
		Expect(time.Now()).To(BeTemporally("<", deadline.Add(5*time.Second)), "the short job outlived the notice")
		for _, p := range stopDS() {
			Expect(p.Status.Phase).NotTo(Equal(corev1.PodFailed), "pod %s: %v", p.Name, p.Status.Conditions)
		}
		// The maps were told, and killed at the deadline.
		Eventually(y.rm.Logs).WithTimeout(10 * time.Second).Should(ContainSubstring("container on a node taken back from batch: notice given"))
		Eventually(func(g Gomega) {
			n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tide.StateOf(n)).To(Equal(v1alpha1.StateOnline))
			p, err := core.Pods("default").Get(ctx, "peak", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Spec.NodeName).To(Equal(node))
		}).WithTimeout(notice + 2*time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(time.Now()).To(BeTemporally(">=", deadline))
		events, err := core.Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=TideNoticeOutcome,involvedObject.name=" + node})
		Expect(err).NotTo(HaveOccurred())
		Expect(events.Items).NotTo(BeEmpty())
		outcome := events.Items[len(events.Items)-1].Message
		GinkgoWriter.Println(outcome)
		Expect(outcome).To(MatchRegexp(`\d+ of \d+ batch pods ended within the notice, [1-9]\d* killed`))

		// The MapReduce job succeeds all the same.
		Eventually(sleepDone).WithTimeout(6*time.Minute).Should(Receive(BeNil()), func() string { return sleepOut.String() + y.amSyslog("Sleep job") })
		var info struct {
			App struct {
				State, FinalStatus                                  string
				NumNonAMContainerPreempted, NumAMContainerPreempted int
			}
		}
		getJSON("http://"+y.rm.WebAddr+"/ws/v1/cluster/apps/"+sleepApp, &info)
		Expect(info.App.FinalStatus).To(Equal("SUCCEEDED"))
		GinkgoWriter.Printf("sleep job: %+v\n", info.App)
	}, SpecTimeout(15*time.Minute))
})
