package allocator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/podbinder"
	schedstate "github.com/weft-sh/weft/scheduler/state"
	"github.com/weft-sh/weft/translator"
)

// PodSource is the Kubernetes side of a cycle (podbinder.Binder): the
// pods that name Weft's scheduler, waiting or placed, and the binding of
// those a plan places.
type PodSource interface {
	Pods() (pending, bound []*corev1.Pod)
	// Bind binds and waits; BindAsync reports the pods bound at once and
	// calls done with the outcome. Both count a pod as bound (Pods) from
	// the call on, until its binding fails.
	Bind(ctx context.Context, bindings []podbinder.Binding) []error
	BindAsync(ctx context.Context, bindings []podbinder.Binding, done func([]error))
	// Event tells a pod why it waits.
	Event(ctx context.Context, pod *corev1.Pod, reason, message string)
	// Preempt deletes a victim that is not a YARN container; its advance
	// notice is Kubernetes' own: SIGTERM, then grace before SIGKILL.
	Preempt(ctx context.Context, pod *corev1.Pod, grace time.Duration) error
}

// Labels that place a pod that is not a YARN container: its queue (full
// path or leaf name, default root.default), its job (pods with the same
// value form one application and one gang; default the pod alone) and its
// tier (high, medium or low; default medium, the pod being its own job's
// minimum).
const (
	LabelQueue = translator.LabelQueue
	LabelApp   = translator.LabelApp
	LabelTier  = translator.LabelTier
)

// podPrefix starts the scheduler ids of pods, as distinct from YARN
// container ids.
const podPrefix = "pod:"

// pendingPod is a waiting pod's request in a cycle.
type pendingPod struct {
	pod *corev1.Pod
	// am is set for the AM container of one of this RM's applications:
	// its placement is the RM's allocation of that container.
	am   *records.ContainerID
	tier records.Tier
}

// podCycle is what one cycle made of the pods.
type podCycle struct {
	pending map[string]pendingPod
	// bound are the placed pods that are not YARN containers, by id:
	// preemption may choose them.
	bound map[string]*corev1.Pod
	// refusals are pods to tell why they are not scheduled, once the
	// store's write is over (it must not wait on the API server).
	refusals []refusal
	// What the cycle wrote for the pods into the view, which the next
	// undoes (undoPods): the pods' applications, AM pods' requests, and
	// what placed pods out of any queue hold on their nodes.
	apps       []string
	amRequests []string
	charges    map[string]quota.Resource
}

type refusal struct {
	pod             *corev1.Pod
	reason, message string
}

// addPods puts Weft's pods into the scheduler's store: waiting pods as
// requests (an AM pod under its attempt, high tier), and placed pods that
// are not this RM's YARN containers (those come from the RM's records) as
// allocations.
func (a *Allocator) addPods(w *schedstate.Txn, snap *state.Snapshot, nodes *nodeSet, where *constraints) (*podCycle, error) {
	pc := &podCycle{pending: map[string]pendingPod{}, bound: map[string]*corev1.Pod{}, charges: map[string]quota.Resource{}}
	if a.opts.Pods == nil {
		return pc, nil
	}
	pending, bound := a.opts.Pods.Pods()
	for _, p := range bound {
		if _, ok := translator.ContainerOf(p, a.opts.ClusterID); ok {
			continue // the RM's records hold it
		}
		rn := nodes.byHost[p.Spec.NodeName]
		if rn == nil || w.Node(rn.ID) == nil {
			continue // on a node Weft does not schedule onto now
		}
		node := rn.ID
		appID, tier, err := a.podApp(w, pc, p)
		if err != nil {
			// Placed, but no longer in a queue (its queue was removed):
			// it still holds the node's capacity, as others' pods do.
			if err := a.chargeOthers(w, pc, node, a.podResource(p)); err != nil {
				return nil, err
			}
			continue
		}
		if err := w.AddAllocation(&objects.Allocation{ID: podID(p), AppID: appID, NodeID: node, Tier: tier,
			Resource: a.podResource(p), Preempting: p.DeletionTimestamp != nil}); err != nil {
			return nil, err
		}
		pc.bound[podID(p)] = p
	}
	waiting := map[types.UID]bool{}
	for _, p := range pending {
		if cid, ok := translator.ContainerOf(p, a.opts.ClusterID); ok {
			app := snap.Application(cid.Attempt.App)
			if cid.ID != 1 || app == nil || app.CurrentAttempt != cid.Attempt.ID || amContainer(snap, app) != nil ||
				w.Application(cid.Attempt.String()) == nil {
				continue // not an AM waiting for its attempt's container
			}
			if err := w.AddRequest(&objects.Request{ID: podID(p), AppID: cid.Attempt.String(), Tier: records.TierHigh,
				Resource: toQuota(app.AMResource), Nodes: where.forPod(p)}); err != nil {
				return nil, err
			}
			pc.pending[podID(p)] = pendingPod{pod: p, am: &cid, tier: records.TierHigh}
			pc.amRequests = append(pc.amRequests, podID(p))
			continue
		}
		waiting[p.UID] = true
		appID, tier, err := a.podApp(w, pc, p)
		if err != nil {
			pc.refusals = append(pc.refusals, refusal{pod: p, reason: "FailedScheduling", message: err.Error()})
			continue
		}
		if err := w.AddRequest(&objects.Request{ID: podID(p), AppID: appID, Tier: tier, Resource: a.podResource(p), Nodes: where.forPod(p)}); err != nil {
			return nil, err
		}
		pc.pending[podID(p)] = pendingPod{pod: p, tier: tier}
	}
	a.refusedMu.Lock()
	for uid := range a.refused {
		if !waiting[uid] {
			delete(a.refused, uid) // bound or gone
		}
	}
	a.refusedMu.Unlock()
	return pc, nil
}

// chargeOthers counts r among what others hold on a node.
func (a *Allocator) chargeOthers(w *schedstate.Txn, pc *podCycle, node string, r quota.Resource) error {
	n := *w.Node(node)
	n.NonWeftUsed = n.NonWeftUsed.Add(r)
	pc.charges[node] = pc.charges[node].Add(r)
	return w.UpsertNode(&n)
}

// podApp files a pod that is not a YARN container under its application,
// created in its queue if this is the application's first pod.
func (a *Allocator) podApp(w *schedstate.Txn, pc *podCycle, p *corev1.Pod) (string, records.Tier, error) {
	qname := p.Labels[LabelQueue]
	if qname == "" {
		qname = "root.default"
	}
	q, ok := a.mgr.Queues().Queue(qname)
	if !ok {
		return "", 0, fmt.Errorf("queue %q (label %s) does not exist", qname, LabelQueue)
	}
	tier := records.TierMedium
	if p.Labels[LabelTier] != "" {
		tier = cmp.Or(translator.PodTier(p), records.TierLow)
	}
	job := p.Labels[LabelApp]
	if job == "" {
		job = p.Name
	}
	id := podPrefix + p.Namespace + "/" + job
	if app := w.Application(id); app != nil {
		if app.Queue != q.Path {
			return "", 0, fmt.Errorf("job %s is in queue %s, this pod names %s", job, app.Queue, q.Path)
		}
		return id, tier, nil
	}
	err := w.UpsertApplication(&objects.Application{ID: id, Queue: q.Path, User: p.Namespace, Submitted: p.CreationTimestamp.Time})
	if err != nil {
		return "", 0, err
	}
	pc.apps = append(pc.apps, id)
	return id, tier, nil
}

// podResource is a pod's request in the scheduler's units (whole vcores,
// as the nodes' capacity is counted).
func (a *Allocator) podResource(p *corev1.Pod) quota.Resource {
	bytes, milli := a.opts.Profile.PodAmounts(p)
	vcore := a.opts.Profile.VCoreMilli()
	return toQuota(records.Resource{MemoryMB: (bytes + 1<<20 - 1) >> 20, VCores: int32((milli + vcore - 1) / vcore)})
}

// bindPods binds the pods a plan placed. AM pods are bound before it
// returns and each recorded as its attempt's AM container (YARN's RM
// allocates the AM container before its launcher starts it); the others
// are bound in the background, counted as placed meanwhile, so a burst of
// thousands does not hold up the next cycle's grants. It returns how many
// pods it bound or set binding.
func (a *Allocator) bindPods(ctx context.Context, snap *state.Snapshot, pc *podCycle, placements []objects.Placement) int {
	var ams, others []podbinder.Binding
	var amPods, otherPods []pendingPod
	var amNodes []*records.Node
	for _, pl := range placements {
		pp, ok := pc.pending[pl.RequestID]
		n := snap.Node(pl.NodeID)
		if !ok || n == nil {
			continue
		}
		b := podbinder.Binding{Namespace: pp.pod.Namespace, Name: pp.pod.Name, UID: pp.pod.UID, Node: n.Host}
		if pp.am != nil {
			ams, amPods, amNodes = append(ams, b), append(amPods, pp), append(amNodes, n)
		} else {
			others, otherPods = append(others, b), append(otherPods, pp)
		}
	}
	if len(ams) > 0 {
		for i, err := range a.opts.Pods.Bind(ctx, ams) {
			if !a.bound(amPods[i], err) {
				continue
			}
			am := amPods[i].am
			app := snap.Application(am.Attempt.App)
			if err := a.mgr.AMContainerPlaced(ctx, *am, amNodes[i].ID, amNodes[i].HTTPAddress, app.AMResource); err != nil {
				// The launcher reads the bound pod back and records it.
				a.opts.Logger.Warn("recording the AM container", "container", am.String(), "err", err)
			}
		}
	}
	if len(others) > 0 {
		a.opts.Pods.BindAsync(ctx, others, func(errs []error) {
			n := 0
			for i, err := range errs {
				if a.bound(otherPods[i], err) {
					n++
				}
			}
			a.opts.Logger.Debug("bound pods", "count", n, "of", len(others))
		})
	}
	return len(ams) + len(others)
}

// bound counts a binding's outcome.
func (a *Allocator) bound(pp pendingPod, err error) bool {
	if err != nil {
		a.metrics.bound.WithLabelValues("failed").Inc()
		a.opts.Logger.Warn("binding failed", "err", err)
		return false
	}
	a.metrics.bound.WithLabelValues("bound").Inc()
	a.metrics.granted.WithLabelValues(pp.tier.String()).Inc()
	return true
}

// tellRefused tells each refused pod, once, why it is not scheduled.
func (a *Allocator) tellRefused(pc *podCycle) {
	for _, r := range pc.refusals {
		a.refuse(r.pod, r.reason, r.message)
	}
}

// refuse tells a pod once why it is not scheduled.
func (a *Allocator) refuse(p *corev1.Pod, reason, message string) {
	a.refusedMu.Lock()
	told := a.refused[p.UID]
	a.refused[p.UID] = true
	a.refusedMu.Unlock()
	if told {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a.opts.Pods.Event(ctx, p, reason, message)
	a.opts.Logger.Info("pod not scheduled", "pod", p.Namespace+"/"+p.Name, "reason", message)
}

func podID(p *corev1.Pod) string { return podPrefix + p.Namespace + "/" + p.Name }
