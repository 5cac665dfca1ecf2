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

// queuesFromKubernetes reads the Queue tree from the cluster. It returns
// nil when the Queue API is not installed or holds no queues.
func queuesFromKubernetes(ctx context.Context, cfg *k8srest.Config) ([]quota.QueueConfig, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	list, err := client.Resource(v1alpha1.GroupVersion.WithResource("queues")).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	queues := make([]v1alpha1.Queue, len(list.Items))
	for i, u := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &queues[i]); err != nil {
			return nil, fmt.Errorf("queue %s: %w", u.GetName(), err)
		}
	}
	return quota.ConfigsFromQueues(queues)
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
		// The AM holds its resources once its container exists.
		if att := snap.Attempt(records.AttemptID{App: a.ID, ID: a.CurrentAttempt}); att != nil &&
			(att.State == records.AttemptLaunched || att.State == records.AttemptRunning) {
			u.used = u.used.Add(a.AMResource)
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
			corev1.ResourceCPU:    *resource.NewQuantity(int64(t.used.VCores), resource.DecimalSI),
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
