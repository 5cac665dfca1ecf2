package server

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	k8srest "k8s.io/client-go/rest"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// queuesFromKubernetes reads the Queue tree from the cluster, as YARN's
// view and as the objects. It returns nils when the Queue API is not
// installed or holds no queues.
func queuesFromKubernetes(ctx context.Context, cfg *k8srest.Config) ([]quota.QueueConfig, []v1alpha1.Queue, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	list, err := client.Resource(v1alpha1.GroupVersion.WithResource("queues")).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list queues: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil, nil
	}
	queues := make([]v1alpha1.Queue, len(list.Items))
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &queues[i]); err != nil {
			return nil, nil, fmt.Errorf("queue %s: %w", u.GetName(), err)
		}
	}
	configs, err := quota.ConfigsFromQueues(queues)
	return configs, queues, err
}

// quotas are the scheduler's queue quotas: from the Queue objects when
// the tree comes from the cluster (absolute guarantees and maxima, time
// windows applied), else from the configured capacities as shares of
// the cluster.
func (s *Server) quotas(cluster quota.Resource, now time.Time) ([]quota.QueueQuota, error) {
	if crds := s.crds.Load(); crds != nil {
		return quota.QuotasFromCRDs(*crds, now, s.cfg.Launcher.Profile.VCoreMilli())
	}
	return quota.QuotasFromQueues(s.Manager.Queues().Queues(), cluster), nil
}

// writeQueueStatus publishes each Queue's status as the RM sees it:
// application counts, resources held, the guarantee in effect and the
// borrowed part above it. Parents add up their children. Unchanged
// statuses are not written again.
func (s *Server) writeQueueStatus(ctx context.Context) error {
	client, err := dynamic.NewForConfig(s.cfg.Kubernetes)
	if err != nil {
		return err
	}
	res := client.Resource(v1alpha1.GroupVersion.WithResource("queues"))
	list, err := res.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list queues: %w", err)
	}
	queues := make([]v1alpha1.Queue, len(list.Items))
	children := map[string][]string{}
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &queues[i]); err != nil {
			return fmt.Errorf("queue %s: %w", u.GetName(), err)
		}
		if p := queues[i].Spec.Parent; p != "" {
			children[p] = append(children[p], queues[i].Name)
		}
	}
	type usage struct {
		running, pending int32
		used             records.Resource
	}
	own := map[string]*usage{}
	snap := s.Manager.Snapshot()
	for _, a := range snap.Applications(state.ApplicationFilter{}) {
		if a.State.Terminal() {
			continue
		}
		u := own[a.Queue]
		if u == nil {
			u = &usage{}
			own[a.Queue] = u
		}
		if a.State == records.AppRunning {
			u.running++
		} else {
			u.pending++
		}
		// The AM holds its resources once its container exists, and the
		// containers granted to it theirs until they complete.
		if att := snap.Attempt(records.AttemptID{App: a.ID, ID: a.CurrentAttempt}); att != nil &&
			(att.State == records.AttemptLaunched || att.State == records.AttemptRunning) {
			u.used = u.used.Add(a.AMResource)
		}
		for _, c := range snap.ContainersOfApp(a.ID) {
			if c.ID.ID != 1 && c.State != records.ContainerComplete {
				u.used = u.used.Add(c.Resource)
			}
		}
	}
	var total func(name string, seen map[string]bool) usage
	total = func(name string, seen map[string]bool) usage {
		var t usage
		if seen[name] {
			return t // a cycle: ConfigsFromQueues refuses such a tree anyway
		}
		seen[name] = true
		if u := own[name]; u != nil {
			t = *u
		}
		for _, c := range children[name] {
			ct := total(c, seen)
			t.running, t.pending, t.used = t.running+ct.running, t.pending+ct.pending, t.used.Add(ct.used)
		}
		return t
	}
	now := time.Now()
	for _, q := range queues {
		t := total(q.Name, map[string]bool{})
		guaranteed, _, window := quota.Effective(q.Spec, now)
		used := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(t.used.VCores)*s.cfg.Launcher.Profile.VCoreMilli(), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(t.used.MemoryMB<<20, resource.BinarySI),
		}
		borrowed := corev1.ResourceList{}
		for name, u := range used {
			g := guaranteed[name]
			if u.Cmp(g) > 0 {
				b := u.DeepCopy()
				b.Sub(g)
				borrowed[name] = b
			}
		}
		status := v1alpha1.QueueStatus{Used: used, Guaranteed: guaranteed, Borrowed: borrowed, ActiveWindow: window,
			RunningApplications: t.running, PendingApplications: t.pending, ObservedGeneration: q.Generation}
		body, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
		if err != nil {
			return err
		}
		key := fmt.Sprint(body)
		if s.queueStatus[q.Name] == key {
			continue
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Queue",
			"metadata": map[string]any{"name": q.Name}, "status": body,
		}}
		if _, err := res.ApplyStatus(ctx, q.Name, obj, metav1.ApplyOptions{FieldManager: "weft-rm", Force: true}); err != nil {
			return fmt.Errorf("queue %s status: %w", q.Name, err)
		}
		s.queueStatus[q.Name] = key
	}
	return nil
}
