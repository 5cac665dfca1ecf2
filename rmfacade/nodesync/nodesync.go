// Package nodesync shows the cluster's nodes to the RM as YARN nodes: each
// Kubernetes node is a NodeId (node name and the node plugin's port) whose
// capability is what the colocation profile says the node offers to
// reclaimed pods, less what pods the RM does not allocate hold there.
package nodesync

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/kubeclient"
	"github.com/weft-sh/weft/translator/wellknown"
)

// Options configures a Syncer.
type Options struct {
	// ClusterID is this RM's; other RMs' containers count as occupied.
	ClusterID string
	// SchedulerName is Weft's scheduler: the pods it binds are Weft's.
	SchedulerName string
	// Cooldown keeps new containers off a node for this long after its
	// capacity fell below what Weft and others hold there (zero: never).
	Cooldown time.Duration
	// Pods, when set, is a shared informer of the cluster's live pods,
	// run by its owner; by default the Syncer watches them itself.
	Pods cache.SharedIndexInformer
	// CNR reads Katalyst's CustomNodeResources, for a profile whose
	// capacity comes from them (translator.Profile.CapacityFromCNR).
	CNR dynamic.Interface
	// OwnPodDelay is how long a node's record may lag behind Weft's own
	// pods bound to it or gone from it (default 1s, YARN's NodeManager
	// heartbeat interval; negative: no lag): the nodes Weft's pods moved
	// on in that time are written together, once each, in one
	// transaction. Others' pods are read at once.
	OwnPodDelay time.Duration
	// CapacityStaleAfter is how old a node agent's heartbeat may be before
	// its published capacity is read as none, for a profile with one
	// (translator.Profile.CapacityHeartbeat); default 1m.
	CapacityStaleAfter time.Duration
	// NodeExpiry is how long a node's Ready condition may be other than
	// True — False, or Unknown once the node lifecycle controller stops
	// hearing from its kubelet — before the YARN node is LOST, and the
	// containers on it with it (rm.Manager.PutNodes): YARN's
	// yarn.nm.liveness-monitor.expiry-interval-ms, default 10 minutes;
	// negative: never, the node stays UNHEALTHY. Until then it is
	// UNHEALTHY, taking no new containers while its running ones carry
	// on, as a silent NodeManager's do in YARN.
	NodeExpiry         time.Duration
	Profile            translator.Profile
	NMPort, NMHTTPPort int32
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Nodes is the RM's side of its nodes: their records, written one or
// many at a time (a node lost ends its containers in the same write).
type Nodes interface {
	PutNode(*records.Node) error
	PutNodes(...*records.Node) error
	Snapshot() *state.Snapshot
}

// Syncer copies nodes from Kubernetes into the RM.
type Syncer struct {
	mgr                       Nodes
	opts                      Options
	nodeInformer, podInformer cache.SharedIndexInformer
	cnrInformer               cache.SharedIndexInformer // nil unless the profile reads CNRs
	ownPods                   bool                      // podInformer is this Syncer's to run
	nodes                     corelisters.NodeLister
	pods                      corelisters.PodLister
	// placement counts the node changes placement constraints read (see
	// PlacementVersion).
	placement atomic.Uint64

	// writeMu is held from reading a node's record to writing it: the
	// controller reconciles a node's request alone, but the own-pods
	// batch writes nodes too, and a record read before a batch's must
	// not be written after it.
	writeMu sync.Mutex
	// ownMu guards ownMoved and queue.
	ownMu sync.Mutex
	// ownMoved are the nodes whose record lags behind Weft's own pods,
	// for the next own-pods batch (see podEvents).
	ownMoved map[string]struct{}
	// queue is the controller's workqueue, as its event handlers last
	// saw it: the batch asks it to wake a node's reconcile when a record
	// it wrote goes stale on its own.
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// New returns a Syncer; Run starts its watches.
// Its pod informer, when shared, must not have started: New indexes the
// pods by node on it.
func New(mgr Nodes, client kubernetes.Interface, opts Options) (*Syncer, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// Watches, not lists: a node's sync reads its pods from an index.
	nodes := coreinformers.NewNodeInformer(client, 0, cache.Indexers{})
	if err := nodes.SetTransform(trimmed); err != nil {
		return nil, fmt.Errorf("trim nodes: %w", err)
	}
	if err := nodes.AddIndexers(cache.Indexers{byTideState: tideState}); err != nil {
		return nil, fmt.Errorf("index nodes by tide state: %w", err)
	}
	pods, own := opts.Pods, opts.Pods == nil
	if own {
		pods = LivePods(client)
	}
	if err := pods.AddIndexers(cache.Indexers{byNode: podNode}); err != nil {
		return nil, fmt.Errorf("index pods by node: %w", err)
	}
	s := &Syncer{mgr: mgr, opts: opts, nodeInformer: nodes, podInformer: pods, ownPods: own,
		nodes: corelisters.NewNodeLister(nodes.GetIndexer()), pods: corelisters.NewPodLister(pods.GetIndexer())}
	bump := func(any) { s.placement.Add(1) }
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: bump, DeleteFunc: bump,
		UpdateFunc: func(before, after any) {
			if placementMoved(before, after) {
				s.placement.Add(1)
			}
		}}); err != nil {
		return nil, fmt.Errorf("watch node placement: %w", err)
	}
	if opts.Profile.CapacityFromCNR && opts.CNR != nil {
		s.cnrInformer = dynamicinformer.NewFilteredDynamicInformer(opts.CNR, CNRResource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	}
	return s, nil
}

// KubeNode returns the Kubernetes node of a name, as last seen.
func (s *Syncer) KubeNode(name string) (*corev1.Node, bool) {
	n, err := s.nodes.Get(name)
	return n, err == nil
}

// KubeNodesInTideState returns the Kubernetes nodes whose state in the
// tide (wellknown.LabelTideState) is state, from an index: each scheduling
// cycle asks for the nodes being taken back, a handful of 10,000.
func (s *Syncer) KubeNodesInTideState(state wellknown.TideState) []*corev1.Node {
	objs, err := s.nodeInformer.GetIndexer().ByIndex(byTideState, string(state))
	if err != nil {
		return nil // the index is New's: cannot be missing
	}
	out := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		if n, ok := o.(*corev1.Node); ok {
			out = append(out, n)
		}
	}
	return out
}

// PlacementVersion changes after every change of what placement
// constraints are evaluated against — a node added or removed, a node's
// labels or taints changed —, not on status updates (kubelet's heartbeats,
// the bulk of a node's events): the allocator keeps where pods may go from
// one cycle to the next while it stays. It moves after the watch's cache
// holds the change: a reader that reads it first and the nodes after sees
// every change up to it.
func (s *Syncer) PlacementVersion() uint64 { return s.placement.Load() }

// placementMoved tells a node update that changes its labels or taints.
func placementMoved(before, after any) bool {
	b, ok1 := before.(*corev1.Node)
	a, ok2 := after.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !maps.Equal(b.Labels, a.Labels) || !equality.Semantic.DeepEqual(b.Spec.Taints, a.Spec.Taints)
}

// byTideState indexes nodes by their state in the tide (a node without
// the label, or with one that holds no state, is in no entry). Index
// names are this process's own: the slash keeps them apart from any
// other indexer's.
const byTideState = "nodesync/tide-state"

func tideState(obj any) ([]string, error) {
	if n, ok := obj.(*corev1.Node); ok {
		if v, ok := n.Labels[wellknown.LabelTideState]; ok {
			if st, err := wellknown.ParseTideState(v); err == nil {
				return []string{string(st)}, nil
			}
		}
	}
	return nil, nil
}

// LivePods is an informer of every pod that has not ended, in all
// namespaces: the API server filters out the ended ones.
func LivePods(client kubernetes.Interface) cache.SharedIndexInformer {
	inf := coreinformers.NewFilteredPodInformer(client, metav1.NamespaceAll, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = "status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
	})
	_ = inf.SetTransform(trimmed) // cannot fail on an informer not yet started
	return inf
}

// trimmed drops, before the watches store an object, what none of their
// readers uses and what is much of an object as the API server sends it
// (the RM holds every live pod and every node of a 10,000-node cluster):
// managedFields, server-side apply's record of who set which field,
// often a third of a pod; and of a Node's status all but what the RM
// reads (trimNode): kubelet reports up to 50 images with their
// digests, five conditions with their messages, the node's system info.
// kube-scheduler and controller-runtime's caches drop managedFields the
// same way.
func trimmed(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	if n, ok := obj.(*corev1.Node); ok {
		trimNode(n)
	}
	return obj, nil
}

// trimNode keeps of a Node's status what the RM reads — its allocatable
// and its Ready condition's status and when that last changed (NodeExpiry)
// — and drops the rest: the images, addresses, capacity, system info,
// volumes and the other conditions with their messages are most of a
// kubelet-reported Node, held 10,000 times. The heartbeat time goes too:
// it moves with every status report and would make each a change.
func trimNode(n *corev1.Node) {
	var ready []corev1.NodeCondition
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = []corev1.NodeCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
			break
		}
	}
	n.Status = corev1.NodeStatus{Allocatable: n.Status.Allocatable, Conditions: ready}
}

// CNRResource is Katalyst's CustomNodeResource (cluster-scoped, one per
// node, named as the node).
var CNRResource = schema.GroupVersionResource{Group: "node.katalyst.kubewharf.io", Version: "v1alpha1", Resource: "customnoderesources"}

// Run watches nodes and pods (and CNRs) until ctx ends: the informers a
// Syncer's controller is fed from (SetupWithManager).
func (s *Syncer) Run(ctx context.Context) {
	if s.cnrInformer != nil {
		go s.cnrInformer.Run(ctx.Done())
	}
	if s.ownPods {
		go s.podInformer.Run(ctx.Done())
	}
	s.nodeInformer.Run(ctx.Done())
}

// synced are the watches a sync needs listed.
func (s *Syncer) synced() []cache.InformerSynced {
	out := []cache.InformerSynced{s.nodeInformer.HasSynced, s.podInformer.HasSynced}
	if s.cnrInformer != nil {
		out = append(out, s.cnrInformer.HasSynced)
	}
	return out
}

// allocatable is what a node offers Weft: its CNR's allocatable under a
// CNR profile (none until Katalyst's agent reports it), else the Node's —
// none when the profile's agent has not said within CapacityStaleAfter
// that the number is current (fail safe: a blind or dead agent's last
// number must not keep batch work coming).
func (s *Syncer) allocatable(n *corev1.Node, now time.Time) corev1.ResourceList {
	if key := s.opts.Profile.CapacityHeartbeat; key != "" {
		at, err := wellknown.ParseTime(n.Annotations[key])
		if err != nil || now.Sub(at) > s.staleAfter() {
			return nil
		}
	}
	if s.opts.Profile.CapacityFromCNR {
		if s.cnrInformer == nil {
			return nil
		}
		obj, ok, err := s.cnrInformer.GetIndexer().GetByKey(n.Name)
		if err != nil || !ok {
			return nil
		}
		return cnrAllocatable(obj)
	}
	return lowered(n, s.opts.Profile)
}

// lowered is n's allocatable with the profile's reclaimed resources at
// most what Weft's agent says they are falling to
// (wellknown.AnnotationReclaimedLowering): the RM stops granting by the old
// number at once, while the kubelet still admits by it the pods of
// containers granted before the fall.
//
// Only for a profile whose capacity Weft's agent publishes (its
// heartbeat, wellknown.AnnotationReclaimedAt): under another, the
// Node's resources are not the agent's, and an annotation an agent of an
// earlier deployment left behind must not lower them.
func lowered(n *corev1.Node, p translator.Profile) corev1.ResourceList {
	v, ok := n.Annotations[wellknown.AnnotationReclaimedLowering]
	if !ok || p.CapacityHeartbeat != wellknown.AnnotationReclaimedAt {
		return n.Status.Allocatable
	}
	l, err := wellknown.ParseLowering(v)
	if err != nil {
		return n.Status.Allocatable // the agent's own; a bad one lowers nothing
	}
	// In the agent's own units (colocation.Agent.publish): bytes, and
	// CPU as an integer count of millicores.
	bytes, milli := p.Amounts(n.Status.Allocatable)
	out := n.Status.Allocatable.DeepCopy()
	if _, ok := out[p.Memory]; ok && l.Memory < bytes {
		out[p.Memory] = *resource.NewQuantity(l.Memory, resource.BinarySI)
	}
	if _, ok := out[p.CPU]; ok && l.MilliCPU < milli {
		out[p.CPU] = *resource.NewQuantity(l.MilliCPU, resource.DecimalSI)
	}
	return out
}

// utilization is the node agent's last measurement of n in YARN's units,
// or nil when there is none or it is older than CapacityStaleAfter.
func (s *Syncer) utilization(n *corev1.Node, now time.Time) *records.NodeUtilization {
	v, ok := n.Annotations[wellknown.AnnotationNodeUtilization]
	if !ok {
		return nil
	}
	u, err := wellknown.ParseNodeUtilization(v)
	if err != nil || now.Sub(u.At) > s.staleAfter() {
		return nil
	}
	return &records.NodeUtilization{
		PhysicalMemoryMB: u.NodeMemory >> 20, CPU: float64(u.NodeMilliCPU) / 1000,
		ContainersPhysicalMemoryMB: u.BatchMemory >> 20, ContainersVCores: float64(u.BatchMilliCPU) / float64(s.opts.Profile.VCoreMilli()),
	}
}

// ownPodDelay is Options.OwnPodDelay with its default.
func (s *Syncer) ownPodDelay() time.Duration {
	if s.opts.OwnPodDelay == 0 {
		return time.Second
	}
	return s.opts.OwnPodDelay
}

// nodeExpiry is Options.NodeExpiry with its default; negative: never.
func (s *Syncer) nodeExpiry() time.Duration {
	if s.opts.NodeExpiry == 0 {
		return 10 * time.Minute
	}
	return s.opts.NodeExpiry
}

// staleAfter is Options.CapacityStaleAfter with its default.
func (s *Syncer) staleAfter() time.Duration {
	if s.opts.CapacityStaleAfter > 0 {
		return s.opts.CapacityStaleAfter
	}
	return time.Minute
}

// cnrAllocatable reads status.resources.allocatable of a CNR; quantities
// that do not parse are left out.
func cnrAllocatable(obj any) corev1.ResourceList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	m, _, _ := unstructured.NestedStringMap(u.Object, "status", "resources", "allocatable")
	out := corev1.ResourceList{}
	for name, v := range m {
		if q, err := resource.ParseQuantity(v); err == nil {
			out[corev1.ResourceName(name)] = q
		}
	}
	return out
}

// Sync updates every node of the RM from what the watches hold, once they
// have listed everything: the first pass, after which the allocator may
// place containers; Reconcile keeps each node current after it.
func (s *Syncer) Sync(ctx context.Context) error {
	if !kubeclient.WaitForSync(ctx, s.synced()...) {
		return fmt.Errorf("nodes and pods not listed: %w", ctx.Err())
	}
	nodeList, err := s.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	// One transaction for every node: the allocator's first cycle waits
	// on this pass.
	names := make([]string, 0, len(nodeList))
	live := map[string]bool{}
	for _, n := range nodeList {
		live[s.nodeID(n.Name)] = true
		names = append(names, n.Name)
	}
	for _, n := range s.mgr.Snapshot().Nodes() {
		if !live[n.ID] {
			names = append(names, n.Host)
		}
	}
	return s.writeNodes(names, nil)
}

// writeNodes writes the records of the named nodes that moved, in one
// transaction, and when q is given asks it for a node's reconcile when
// what was read of it goes stale on its own.
func (s *Syncer) writeNodes(names []string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	recs := make([]*records.Node, 0, len(names))
	for _, name := range names {
		rec, stale, err := s.nodeRecord(name)
		if err != nil {
			return err
		}
		if rec != nil {
			recs = append(recs, rec)
		}
		if stale > 0 && q != nil {
			q.AddAfter(nodeRequest(name), stale)
		}
	}
	return s.mgr.PutNodes(recs...)
}

// nodeID is the YARN NodeId of a Kubernetes node.
func (s *Syncer) nodeID(name string) string { return fmt.Sprintf("%s:%d", name, s.opts.NMPort) }

// podsOn are the live pods bound to a node.
func (s *Syncer) podsOn(name string) ([]*corev1.Pod, error) {
	objs, err := s.podInformer.GetIndexer().ByIndex(byNode, name)
	if err != nil {
		return nil, fmt.Errorf("pods on %s: %w", name, err)
	}
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// byNode indexes the pods by the node they are bound to.
const byNode = "nodesync/node"

func podNode(obj any) ([]string, error) {
	if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
		return []string{p.Spec.NodeName}, nil
	}
	return nil, nil
}

// syncNode writes one node into the RM from what the watches hold: its
// capability, what Weft's pods and the others' hold there, its health;
// or, once the Node is gone or has not been Ready for NodeExpiry, the YARN
// node LOST. It returns when the node's record goes stale with no event to
// say so — the agent's heartbeat or measurement ages past
// CapacityStaleAfter, a cooldown ends, a node not Ready expires — or zero.
func (s *Syncer) syncNode(name string) (time.Duration, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	rec, stale, err := s.nodeRecord(name)
	if err != nil {
		return 0, err
	}
	if rec != nil {
		if err := s.mgr.PutNode(rec); err != nil {
			return 0, err
		}
	}
	return stale, nil
}

// nodeRecord is syncNode's record of one node, nil when the RM's record
// already says it, and when it goes stale.
func (s *Syncer) nodeRecord(name string) (*records.Node, time.Duration, error) {
	id := s.nodeID(name)
	prev := s.mgr.Snapshot().Node(id)
	n, err := s.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		if prev != nil && prev.State != records.NodeLost {
			lost := *prev
			lost.State, lost.HealthReport = records.NodeLost, "node removed from the cluster"
			return &lost, 0, nil
		}
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("node %s: %w", name, err)
	}
	pods, err := s.podsOn(name)
	if err != nil {
		return nil, 0, err
	}
	// Sums in bytes and millicores, converted once: rounding each pod to
	// whole vcores would overstate what small pods hold.
	type sum struct{ bytes, milli int64 }
	var occupied, used sum
	var count int32
	for _, p := range pods {
		into := &occupied
		if s.isWeft(p) {
			into = &used
			count++
		}
		b, m := s.opts.Profile.PodAmounts(p)
		into.bytes, into.milli = into.bytes+b, into.milli+m
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
	instant := s.opts.Now()
	now := instant.UnixMilli()
	capBytes, capMilli := s.opts.Profile.Amounts(s.allocatable(n, instant))
	rec := &records.Node{
		ID: id, Host: n.Name, Port: s.opts.NMPort, Rack: rack(n), HTTPAddress: fmt.Sprintf("%s:%d", n.Name, s.opts.NMHTTPPort),
		State: records.NodeRunning, HealthReport: "Healthy",
		// In YARN's units: whole vcores, MiB.
		Capability: records.Resource{MemoryMB: capBytes >> 20, VCores: int32(capMilli / vcore)},
		Used:       toRecords(used, false), Occupied: toRecords(occupied, true),
		NumContainers: count, LastHealthUpdate: now,
	}
	if prev != nil {
		rec.CooldownUntil = prev.CooldownUntil
	}
	rec.Utilization = s.utilization(n, instant)
	held := sum{bytes: used.bytes + occupied.bytes, milli: used.milli + occupied.milli}
	if s.opts.Cooldown > 0 && (held.bytes > capBytes || held.milli > capMilli) {
		// The reclaimable capacity fell below what Weft and the others
		// hold: the online load took capacity back. (Weft's own agent
		// never shows less than its batch pods request — the kubelet
		// would reject the pods bound before a drop — so with it this
		// is the agents of the other profiles.)
		rec.CooldownUntil = now + s.opts.Cooldown.Milliseconds()
	}
	switch {
	case expired(n, s.nodeExpiry(), instant):
		c := readyCondition(n)
		rec.State = records.NodeLost
		rec.HealthReport = fmt.Sprintf("node not Ready since %s (Ready %s), longer than the NodeManager expiry of %s",
			c.LastTransitionTime.UTC().Format(time.RFC3339), c.Status, s.nodeExpiry())
	case !ready(n) || unavailable(n):
		rec.State, rec.HealthReport = records.NodeUnhealthy, "node is not Ready or is tainted unavailable"
	case takenBack(n):
		// YARN's graceful decommissioning is the signal AMs know for "no
		// new containers here, the running ones have until the deadline":
		// Spark drains and migrates its executors' blocks on it.
		rec.State, rec.HealthReport = records.NodeDecommissioning, "taken back from batch work by the tide"
		if t, err := wellknown.ParseTime(n.Annotations[wellknown.AnnotationTideNoticeDeadline]); err == nil {
			rec.DecommissionDeadline = t.UnixMilli()
			rec.HealthReport += ": its containers have until " + t.UTC().Format(time.RFC3339)
		}
	case cordoned(n):
		rec.State, rec.HealthReport = records.NodeDecommissioning, "cordoned: no new containers, the running ones finish"
	case rec.CooldownUntil > now:
		rec.HealthReport = "cooling down until " + time.UnixMilli(rec.CooldownUntil).UTC().Format(time.RFC3339) +
			": the online load grew into the capacity Weft held"
	}
	// A record that says what prev says is not written again (the node
	// controller's first reconcile of every node after the first sync, a
	// Node status heartbeat) until its report time is reportRefresh old.
	stale := s.staleIn(n, rec, instant)
	if reportDue(prev, instant) || !sameReport(prev, rec) {
		return rec, stale, nil
	}
	return nil, stale, nil
}

// reportRefresh is how old a node's LastHealthUpdate (yarn node -status'
// Last-Health-Update) grows while nothing else of the node changes before
// a sync writes the record again with the new time. YARN's NodeManager
// sends its health report's time, which its health checks move every few
// minutes (yarn.nodemanager.health-checker.interval-ms: 10 minutes for
// the script, disks every 2); each write is a store transaction that the
// RM's controllers are woken by.
const reportRefresh = time.Minute

// reportDue tells whether a node's record prev is missing or its report
// time is reportRefresh old at now.
func reportDue(prev *records.Node, now time.Time) bool {
	return prev == nil || now.Sub(time.UnixMilli(prev.LastHealthUpdate)) >= reportRefresh
}

// sameReport tells whether rec says what prev says, but for the time.
func sameReport(prev, rec *records.Node) bool {
	a, b := *prev, *rec
	a.LastHealthUpdate, b.LastHealthUpdate = 0, 0
	return reflect.DeepEqual(a, b)
}

// staleIn is how long until what was read of n no longer holds with no
// event to say so: the end of its cooldown, the agent's heartbeat or
// measurement ageing past CapacityStaleAfter, or a node not Ready
// expiring (NodeExpiry: no Node event comes of a kubelet that stays
// silent); zero when nothing will.
func (s *Syncer) staleIn(n *corev1.Node, rec *records.Node, now time.Time) time.Duration {
	var next time.Duration
	soonest := func(at time.Time) {
		if d := at.Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	if rec.CooldownUntil > 0 {
		soonest(time.UnixMilli(rec.CooldownUntil))
	}
	if key := s.opts.Profile.CapacityHeartbeat; key != "" {
		if at, err := wellknown.ParseTime(n.Annotations[key]); err == nil {
			soonest(at.Add(s.staleAfter()))
		}
	}
	if v, ok := n.Annotations[wellknown.AnnotationNodeUtilization]; ok {
		if u, err := wellknown.ParseNodeUtilization(v); err == nil {
			soonest(u.At.Add(s.staleAfter()))
		}
	}
	if at, ok := expiresAt(n, s.nodeExpiry()); ok {
		soonest(at)
	}
	if next > 0 {
		next += time.Second // past the instant, with the heartbeat's whole seconds
	}
	return next
}

// isWeft tells the pods whose capacity Weft accounts for itself: this
// RM's YARN containers (AMs included) and every pod Weft's scheduler
// binds. The rest is the online load Weft's capacity shrinks by.
func (s *Syncer) isWeft(p *corev1.Pod) bool {
	if s.opts.SchedulerName != "" && p.Spec.SchedulerName == s.opts.SchedulerName {
		return true
	}
	_, ok := translator.ContainerOf(p, s.opts.ClusterID)
	return ok
}

func ready(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// readyCondition is n's Ready condition, or nil.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// expiresAt is when a node that is not Ready becomes LOST: expiry after
// its Ready condition last changed; false when it is Ready, when there is
// no expiry, or when the condition carries no time to measure from.
//
// The clock is the condition's LastTransitionTime, when Ready stopped
// being True: the kubelet sets it when it reports False, and the node
// lifecycle controller when it sets Unknown after
// --node-monitor-grace-period without a word from the kubelet — the
// nearest Kubernetes has to YARN's last NodeManager heartbeat (a node goes
// LOST a grace period later than YARN would count). It is written on the
// Node itself, so a restarted or newly elected RM measures from the same
// instant instead of starting its own count again; and unlike the
// condition's heartbeat time, which a kubelet reporting NotReady keeps
// moving, it says how long the node has been unfit.
func expiresAt(n *corev1.Node, expiry time.Duration) (time.Time, bool) {
	c := readyCondition(n)
	if expiry < 0 || c == nil || c.Status == corev1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Add(expiry), true
}

// expired tells a node that has not been Ready for expiry at now.
func expired(n *corev1.Node, expiry time.Duration, now time.Time) bool {
	at, ok := expiresAt(n, expiry)
	return ok && !now.Before(at)
}

// rack is the node's zone as a YARN rack, as topology-aware YARN
// deployments map it.
// takenBack tells a node the tide is taking back from batch work.
func takenBack(n *corev1.Node) bool {
	st, err := wellknown.TideStateOf(n.Labels)
	return err == nil && st == wellknown.TideOfflineToOnline
}

// cordoned tells a node marked unschedulable (kubectl cordon, the first
// step of a drain): it keeps its pods, takes no new ones.
func cordoned(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnschedulable && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// unavailable tells a node Kubernetes' node lifecycle has tainted as not
// taking pods (not ready, unreachable, under pressure): a taint can
// precede or outlast the condition, and no pod of Weft's tolerates these.
func unavailable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		switch t.Key {
		case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable,
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
