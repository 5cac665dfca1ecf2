package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// RemoveWeft takes a Weft deployed from deploy/ out of the cluster: its
// workloads in weft-system (waiting up to within for their pods to be gone,
// so that the host ports they held are free), then the state its weft-rm of
// clusterID keeps in the API server and its Lease, which outlive the pods
// by design.
func RemoveWeft(ctx context.Context, c *Cluster, clusterID string, within time.Duration) error {
	apps, core := c.Client.AppsV1(), c.Client.CoreV1()
	for _, name := range []string{"weft-rm", "weft-tide"} {
		if err := apps.Deployments("weft-system").Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete deployment %s: %w", name, err)
		}
	}
	if err := apps.DaemonSets("weft-system").Delete(ctx, "weft-nodeplugin", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete daemonset weft-nodeplugin: %w", err)
	}
	for deadline := time.Now().Add(within); ; time.Sleep(time.Second) {
		pods, err := core.Pods("weft-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pods still in weft-system after %s (first: %s)", len(pods.Items), within, pods.Items[0].Name)
		}
	}
	state := metav1.ListOptions{LabelSelector: wellknown.LabelRMState + "=" + clusterID + "-rm-state"}
	if err := core.Secrets("weft-system").DeleteCollection(ctx, metav1.DeleteOptions{}, state); err != nil {
		return fmt.Errorf("delete weft-rm's state: %w", err)
	}
	if err := c.Client.CoordinationV1().Leases("weft-system").Delete(ctx, clusterID+"-rm", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete weft-rm's Lease: %w", err)
	}
	return nil
}

// RemoveContainers deletes what the weft-rm of clusterID left in weft-jobs
// — its containers' pods, at once, and their launch Secrets — which would
// show up under a later `make run`.
func RemoveContainers(ctx context.Context, c *Cluster, clusterID string) error {
	zero := int64(0)
	sel := metav1.ListOptions{LabelSelector: translator.Selector(clusterID)}
	if err := c.Client.CoreV1().Pods("weft-jobs").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel); err != nil {
		return fmt.Errorf("delete the pods of %s: %w", clusterID, err)
	}
	if err := c.Client.CoreV1().Secrets("weft-jobs").DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("delete the launch Secrets of %s: %w", clusterID, err)
	}
	return nil
}

// Lent is what a node's colocation agent (the weft profile) publishes the
// node can lend to batch work: the reclaimed CPU and memory in its
// allocatable, the agent's heartbeat, and the utilization it measured.
type Lent struct {
	MilliCPU, Memory int64
	At               time.Time
	Utilization      *wellknown.NodeUtilization
}

// WaitLent waits up to within for the colocation agent on node to publish,
// with a heartbeat at or after since, at least minMilli of CPU, and returns
// what it published; on a timeout the error says what the Node last held.
func WaitLent(ctx context.Context, c *Cluster, node string, minMilli int64, since time.Time, within time.Duration) (Lent, error) {
	var last Lent
	for deadline := time.Now().Add(within); ; time.Sleep(time.Second) {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return Lent{}, err
		}
		cpu, mem := n.Status.Allocatable[wellknown.ReclaimedCPU], n.Status.Allocatable[wellknown.ReclaimedMemory]
		last = Lent{MilliCPU: cpu.Value(), Memory: mem.Value()}
		last.At, _ = time.Parse(time.RFC3339, n.Annotations[wellknown.AnnotationReclaimedAt])
		if u, err := wellknown.ParseNodeUtilization(n.Annotations[wellknown.AnnotationNodeUtilization]); err == nil {
			last.Utilization = &u
		}
		// The heartbeat has a second's resolution.
		if !last.At.Before(since.Truncate(time.Second)) && last.MilliCPU >= minMilli {
			return last, nil
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("node %s: no %dm of reclaimed CPU published with a heartbeat since %s within %s (last: %dm CPU, %d MiB, heartbeat %q)",
				node, minMilli, since.Format(time.RFC3339), within, last.MilliCPU, last.Memory>>20, n.Annotations[wellknown.AnnotationReclaimedAt])
		}
	}
}
