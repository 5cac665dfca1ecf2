package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/weft-sh/weft/scheduler/sim"
)

const (
	onlineNS  = "online"
	onlineApp = "web"
)

// createOnline makes the online service: a Deployment of the scenario's
// replicas (its requests), scaled by scaleOnline and placed by
// bindOnline, with no replica yet.
func createOnline(ctx context.Context, cl kubernetes.Interface, o sim.Online) error {
	if _, err := cl.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: onlineNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("online namespace: %w", err)
	}
	zero := int32(0)
	labels := map[string]string{"app": onlineApp}
	req := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(o.PodMilliCPU, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(int64(o.PodMemoryGiB*(1<<30)), resource.BinarySI)}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: onlineApp, Namespace: onlineNS}, Spec: appsv1.DeploymentSpec{
		Replicas: &zero, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: onlineImage, Resources: corev1.ResourceRequirements{Requests: req}}},
			// Evicted replicas go at once, as the simulation's drain of a
			// lent node takes its Intervals.Drain in any case.
			TerminationGracePeriodSeconds: new(int64)}},
	}}
	if _, err := cl.AppsV1().Deployments(onlineNS).Create(ctx, d, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("online deployment: %w", err)
	}
	return nil
}

// scaleOnline resizes the Deployment to the workload's replica count at
// each step, as an HPA following the day would: step i at the scenario's
// Start − WarmUp + i×Intervals.Scale.
func scaleOnline(ctx context.Context, cl kubernetes.Interface, c clock, s *sim.Scenario, replicas []int) error {
	first := s.Start.Add(-s.WarmUp.Duration)
	end := s.Start.Add(s.Duration.Duration)
	for i, n := range replicas {
		at := first.Add(time.Duration(i) * s.Intervals.Scale.Duration)
		if !at.Before(end) {
			return nil
		}
		if err := sleepUntil(ctx, c.Wall(at)); err != nil {
			return err
		}
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
		if _, err := cl.AppsV1().Deployments(onlineNS).Patch(ctx, onlineApp, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "scale"); err != nil {
			return fmt.Errorf("online scale to %d: %w", n, err)
		}
	}
	return nil
}

// placement is one decision of bindOnline's: pod to node, or none.
type placement struct {
	Pod, Node string
}

// placeOnline chooses nodes for pending online pods as the simulation's
// stand-in for kube-scheduler does (sim's placeOnline): oldest first,
// each to the schedulable node with the fewest replicas that has room for
// its requests, by name among equals. perNode is the replicas on each
// schedulable node; room, how many fit on each (nodes differ when the
// real node runs beside the kwok nodes).
func placeOnline(pending []string, perNode, room map[string]int) []placement {
	names := make([]string, 0, len(perNode))
	for n := range perNode {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]placement, 0, len(pending))
	for _, p := range pending {
		best := ""
		for _, n := range names {
			if perNode[n] < room[n] && (best == "" || perNode[n] < perNode[best]) {
				best = n
			}
		}
		out = append(out, placement{Pod: p, Node: best})
		if best != "" {
			perNode[best]++
		}
	}
	return out
}

// schedulable is a node kube-scheduler would place an online replica
// on: Ready and without a NoSchedule taint (the tide taints the nodes it
// lends and those on their way).
func schedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// bindOnline binds the pending online replicas (placeOnline's choice)
// through the Binding API, as kube-scheduler does, and marks those with
// no room Unschedulable, which the tide reads as online demand waiting.
func bindOnline(ctx context.Context, cl kubernetes.Interface, nodes []*corev1.Node, pods []*corev1.Pod, o sim.Online) error {
	perNode, room := map[string]int{}, map[string]int{}
	for _, n := range nodes {
		if schedulable(n) {
			perNode[n.Name], room[n.Name] = 0, o.Room(allocatable(n))
		}
	}
	var pending []string
	var created []*corev1.Pod
	for _, p := range pods {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Spec.NodeName == "":
			created = append(created, p)
		default:
			if _, ok := perNode[p.Spec.NodeName]; ok {
				perNode[p.Spec.NodeName]++
			}
		}
	}
	slices.SortStableFunc(created, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	for _, p := range created {
		pending = append(pending, p.Name)
	}
	for _, pl := range placeOnline(pending, perNode, room) {
		if pl.Node == "" {
			if err := markUnschedulable(ctx, cl, pl.Pod); err != nil {
				return err
			}
			continue
		}
		err := cl.CoreV1().Pods(onlineNS).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pl.Pod, Namespace: onlineNS},
			Target: corev1.ObjectReference{Kind: "Node", Name: pl.Node}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("bind %s to %s: %w", pl.Pod, pl.Node, err)
		}
	}
	return nil
}

func markUnschedulable(ctx context.Context, cl kubernetes.Interface, name string) error {
	p, err := cl.CoreV1().Pods(onlineNS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
			return nil
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now(), Message: "0 nodes have room (groundtruth's scheduler)"})
	if _, err := cl.CoreV1().Pods(onlineNS).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("mark %s unschedulable: %w", name, err)
	}
	return nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}
