// Package nodesync shows the cluster's nodes to the RM as YARN nodes: each
// Kubernetes node is a NodeId (node name and the node plugin's port) whose
// capability is what the colocation profile says the node offers to
// reclaimed pods, less what pods the RM does not allocate hold there.
package nodesync

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/translator"
)

// Options configures a Syncer.
type Options struct {
	// ClusterID is this RM's; other RMs' containers count as occupied.
	ClusterID string
	// SchedulerName is Weft's scheduler: the pods it binds are Weft's.
	SchedulerName      string
	Profile            translator.Profile
	NMPort, NMHTTPPort int32
}

// Syncer copies nodes from Kubernetes into the RM.
type Syncer struct {
	mgr    *rm.Manager
	client kubernetes.Interface
	opts   Options
}

// New returns a Syncer.
func New(mgr *rm.Manager, client kubernetes.Interface, opts Options) *Syncer {
	return &Syncer{mgr: mgr, client: client, opts: opts}
}

// Sync reads nodes and pods once and updates the RM's nodes.
func (s *Syncer) Sync(ctx context.Context) error {
	nodes, err := s.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	// Sums in bytes and millicores, converted once per node: rounding
	// each pod to whole vcores would overstate what small pods hold.
	type sum struct{ bytes, milli int64 }
	occupied, used, count := map[string]sum{}, map[string]sum{}, map[string]int32{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" {
			continue
		}
		into := occupied
		if s.isWeft(p) {
			into = used
			count[p.Spec.NodeName]++
		}
		acc := into[p.Spec.NodeName]
		b, m := s.opts.Profile.PodAmounts(p)
		acc.bytes, acc.milli = acc.bytes+b, acc.milli+m
		into[p.Spec.NodeName] = acc
	}
	vcore := s.opts.Profile.VCoreMilli()
	// What others hold is rounded up, what Weft holds to the nearest.
	toRecords := func(x sum, up bool) records.Resource {
		r := records.Resource{MemoryMB: (x.bytes + 1<<20 - 1) >> 20, VCores: int32((x.milli + vcore/2) / vcore)}
		if up {
			r.VCores = int32((x.milli + vcore - 1) / vcore)
		}
		return r
	}
	now := time.Now().UnixMilli()
	live := map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		id := fmt.Sprintf("%s:%d", n.Name, s.opts.NMPort)
		live[id] = true
		st, health := records.NodeRunning, "Healthy"
		if !ready(n) || n.Spec.Unschedulable || unavailable(n) {
			st, health = records.NodeUnhealthy, "node is not Ready, is cordoned or is tainted unavailable"
		}
		err := s.mgr.PutNode(&records.Node{
			ID: id, Host: n.Name, Port: s.opts.NMPort, Rack: rack(n), HTTPAddress: fmt.Sprintf("%s:%d", n.Name, s.opts.NMHTTPPort),
			State: st, Capability: s.capacity(n.Status.Allocatable), Used: toRecords(used[n.Name], false), Occupied: toRecords(occupied[n.Name], true),
			NumContainers: count[n.Name], HealthReport: health, LastHealthUpdate: now,
		})
		if err != nil {
			return err
		}
	}
	for _, n := range s.mgr.Snapshot().Nodes() {
		if !live[n.ID] && n.State != records.NodeLost {
			lost := *n
			lost.State, lost.HealthReport = records.NodeLost, "node removed from the cluster"
			if err := s.mgr.PutNode(&lost); err != nil {
				return err
			}
		}
	}
	return nil
}

// isWeft tells the pods whose capacity Weft accounts for itself: this
// RM's YARN containers (AMs included) and every pod Weft's scheduler
// binds. The rest is the online load Weft's capacity shrinks by.
func (s *Syncer) isWeft(p *corev1.Pod) bool {
	if s.opts.SchedulerName != "" && p.Spec.SchedulerName == s.opts.SchedulerName {
		return true
	}
	_, err := records.ParseContainerID(p.Labels[translator.LabelContainer])
	return err == nil && p.Labels[translator.LabelRM] == s.opts.ClusterID
}

// capacity is what a node offers, in YARN's units (whole vcores, MiB).
func (s *Syncer) capacity(l corev1.ResourceList) records.Resource {
	b, m := s.opts.Profile.Amounts(l)
	return records.Resource{MemoryMB: b >> 20, VCores: int32(m / s.opts.Profile.VCoreMilli())}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rack is the node's zone as a YARN rack, as topology-aware YARN
// deployments map it.
// unavailable tells a node Kubernetes' node lifecycle has tainted as not
// taking pods (not ready, unreachable, under pressure, cordoned): a
// taint can precede or outlast the condition, and no pod of Weft's
// tolerates these.
func unavailable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		switch t.Key {
		case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
			corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure, corev1.TaintNodeNetworkUnavailable:
			return true
		}
	}
	return false
}

func rack(n *corev1.Node) string {
	if z := n.Labels[corev1.LabelTopologyZone]; z != "" {
		return "/" + z
	}
	return "/default-rack"
}
