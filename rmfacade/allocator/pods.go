package allocator

import (
	"cmp"
	"context"
	"fmt"
	"maps"
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
	"github.com/weft-sh/weft/translator/wellknown"
)

// PodSource is the Kubernetes side of a cycle (podbinder.Binder): the
// pods that name Weft's scheduler, waiting or placed, and the binding of
// those a plan places.
type PodSource interface {
	Pods() (pending, bound []*corev1.Pod)
	// Moved returns the pods whose answer from Pods changed since the last
	// Pods or Moved, and those of also, as Pods would return them now, and
	// the uids of the others, which Pods would leave out.
	Moved(also []types.UID) (pods []*corev1.Pod, gone []types.UID)
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

// podPrefix starts the scheduler ids of pods, as distinct from YARN
// container ids.
const podPrefix = "pod:"

// pendingPod is a waiting pod's request in a cycle.
type pendingPod struct {
	pod *corev1.Pod
	// am is set for the AM container of one of this RM's applications:
	// its placement is the RM's allocation of that container.
	am    *records.ContainerID
	tier  records.Tier
	queue string
}

// podView is what the view holds of the pods that name Weft's scheduler,
// kept from cycle to cycle as the RM's applications are: a cycle makes
// again only the pods whose resource version or node changed since, those
// a plan wrote to, and the few whose objects rest on more than the pod
// (everyCycle). Making every pod again each cycle costs 40% of weft-rm's
// CPU while binding 5,000 pods (test/bench/binding): each cycle binds a
// few hundred, and would make the thousands already placed over again.
type podView struct {
	entries map[types.UID]*podEntry
	// everyCycle are the entries made again each cycle (a few: AM pods,
	// refused pods, charges), apart, so that a cycle finds them without
	// walking every entry.
	everyCycle map[types.UID]*podEntry
	// stale are the pods a plan wrote to since the last cycle (touched).
	stale map[types.UID]struct{}
	// listed: a cycle read every pod once, and the next ones read what
	// moved since (PodSource.Moved).
	listed bool
	// pending are the pods with a request in the store, bound those with
	// an allocation (preemption may choose them), by id.
	pending map[string]pendingPod
	bound   map[string]*corev1.Pod
	// appPods counts the entries under each pods' application: it leaves
	// the store with its last pod.
	appPods map[string]int
	// gen stamps the entries seen in a cycle; those not seen are gone.
	gen uint64
	// refusals are this cycle's pods to tell why they are not scheduled,
	// once the store's write is over (it must not wait on the API server).
	refusals []refusal
}

// podEntry is what the store holds of one pod, and what it was made from.
type podEntry struct {
	pod *corev1.Pod
	id  string
	// rv and node are the pod's resource version and node when the entry
	// was made: binding (assumed, then seen) changes one or the other.
	rv, node string
	gen      uint64
	kind     podKind
	// app is the pods' application a request or allocation is counted
	// under (appPods); empty for an AM pod's request, which is its
	// attempt's.
	app string
	// everyCycle entries rest on more than the pod, and are made again each
	// cycle: an AM pod's request on its attempt's records, a refused pod on
	// the other pods of its job, a charge on its node, which syncNodes
	// writes afresh from the RM's record.
	everyCycle bool
	// stale entries were written to by a plan: its placement or victim
	// is the scheduler's guess, made again from the pod as it is.
	stale bool
	// res is an allocation's resource.
	res        quota.Resource
	chargeNode string
	charge     quota.Resource
}

// podKind is what an entry put in the store.
type podKind uint8

const (
	// podNone: nothing — a YARN container (the RM's records hold it), a
	// refused pod, a pod on a node the view does not have.
	podNone podKind = iota
	podRequest
	podAllocation
	// podCharged: placed, out of any queue, counted among what others
	// hold on its node.
	podCharged
)

type refusal struct {
	pod             *corev1.Pod
	reason, message string
}

func newPodView() *podView {
	return &podView{entries: map[types.UID]*podEntry{}, everyCycle: map[types.UID]*podEntry{}, stale: map[types.UID]struct{}{},
		pending: map[string]pendingPod{},
		bound:   map[string]*corev1.Pod{}, appPods: map[string]int{}}
}

// put keeps e as the entry of the pod uid.
func (pv *podView) put(uid types.UID, e *podEntry) {
	pv.entries[uid] = e
	if e.everyCycle {
		pv.everyCycle[uid] = e
	} else {
		delete(pv.everyCycle, uid)
	}
}

// drop forgets the entry of the pod uid (undone first).
func (pv *podView) drop(uid types.UID) {
	delete(pv.entries, uid)
	delete(pv.everyCycle, uid)
}

// undoEveryCycle takes out the entries made again each cycle. It runs
// before the nodes and applications are brought up to date: a charge is
// taken off before syncNodes writes its node from the RM's record, an AM
// pod's request before syncApps derives its attempt again.
func (pv *podView) undoEveryCycle(w *schedstate.Txn) error {
	for _, e := range pv.everyCycle {
		if err := pv.undo(w, e); err != nil {
			return err
		}
	}
	return nil
}

// undo takes an entry's objects out of the store: its request, or the
// allocation a plan or the pod's placement made of it, its charge, and its
// application with its last pod.
func (pv *podView) undo(w *schedstate.Txn, e *podEntry) error {
	switch e.kind {
	case podRequest, podAllocation:
		switch {
		case w.Request(e.id) != nil:
			if err := w.RemoveRequest(e.id); err != nil {
				return err
			}
		case w.Allocation(e.id) != nil: // a node the view lost releases it first
			if err := w.ReleaseAllocation(e.id); err != nil {
				return err
			}
		}
		if e.app != "" {
			if pv.appPods[e.app]--; pv.appPods[e.app] <= 0 {
				delete(pv.appPods, e.app)
				if w.Application(e.app) != nil {
					if err := w.DeleteApplication(e.app); err != nil {
						return err
					}
				}
			}
		}
	case podCharged:
		if n := w.Node(e.chargeNode); n != nil {
			c := *n
			c.NonWeftUsed = n.NonWeftUsed.Sub(e.charge)
			if err := w.UpsertNode(&c); err != nil {
				return err
			}
		}
	}
	delete(pv.pending, e.id)
	delete(pv.bound, e.id)
	e.kind, e.app = podNone, ""
	return nil
}

// touched marks the pods a plan placed or chose as victims: made again
// from the pods at the next cycle, bound or not.
func (pv *podView) touched(id string) {
	var p *corev1.Pod
	if pp, ok := pv.pending[id]; ok {
		p = pp.pod
	} else if p = pv.bound[id]; p == nil {
		return
	}
	if e := pv.entries[p.UID]; e != nil {
		e.stale = true
		pv.stale[p.UID] = struct{}{}
	}
}

// syncPods brings the view's pods up to the Pods source: the pods gone
// leave the store, the new and changed are made (waiting pods as requests,
// an AM pod under its attempt, high tier; placed pods that are not this
// RM's YARN containers — those come from the RM's records — as
// allocations). Every pod is made again when a node entered or left the
// view (moved: a pod on it was left out, or its allocation went with it),
// and every waiting one when the constraints changed (whereMoved): then
// every pod is read (PodSource.Pods); otherwise only those that moved, and
// those the view makes again anyway (everyCycle, stale).
func (a *Allocator) syncPods(w *schedstate.Txn, snap *state.Snapshot, nodes *nodeSet, where *constraints, moved, whereMoved bool) error {
	pv := a.view.pods
	pv.refusals = nil
	if a.opts.Pods == nil {
		return nil
	}
	if moved {
		for uid, e := range pv.entries {
			if err := pv.undo(w, e); err != nil {
				return err
			}
			pv.drop(uid)
		}
	}
	pv.gen++
	var shown []*corev1.Pod
	var gone []types.UID
	all := moved || whereMoved || !pv.listed
	if all {
		pending, bound := a.opts.Pods.Pods()
		shown = append(bound, pending...)
		pv.listed = true
	} else {
		also := make([]types.UID, 0, len(pv.everyCycle)+len(pv.stale))
		for uid := range pv.everyCycle {
			also = append(also, uid)
		}
		for uid := range pv.stale {
			if _, ok := pv.everyCycle[uid]; !ok {
				also = append(also, uid)
			}
		}
		shown, gone = a.opts.Pods.Moved(also)
	}
	clear(pv.stale)
	var changed []*corev1.Pod
	note := func(p *corev1.Pod) {
		if e := pv.entries[p.UID]; e != nil {
			e.gen = pv.gen
			if !e.everyCycle && !e.stale && e.node == p.Spec.NodeName && !(whereMoved && e.kind == podRequest) {
				if e.rv == p.ResourceVersion {
					return
				}
				if a.samePlacedPod(e, p) {
					e.pod, e.rv = p, p.ResourceVersion
					pv.bound[e.id] = p
					return
				}
			}
			if a.placedAsPlanned(w, nodes, e, p) {
				return
			}
		}
		changed = append(changed, p)
	}
	for _, p := range shown {
		note(p)
	}
	// The gone first: a pod made again under the same name (a new uid)
	// takes its predecessor's id in the store.
	if all {
		for uid, e := range pv.entries {
			if e.gen != pv.gen {
				gone = append(gone, uid)
			}
		}
	}
	for _, uid := range gone {
		if e := pv.entries[uid]; e != nil {
			if err := pv.undo(w, e); err != nil {
				return err
			}
			pv.drop(uid)
		}
	}
	for _, p := range changed {
		if e := pv.entries[p.UID]; e != nil {
			if err := pv.undo(w, e); err != nil {
				return err
			}
		}
		e := &podEntry{pod: p, id: podID(p), rv: p.ResourceVersion, node: p.Spec.NodeName, gen: pv.gen}
		if err := a.makePod(w, snap, nodes, where, e); err != nil {
			return err
		}
		pv.put(p.UID, e)
	}
	a.refusedMu.Lock()
	for uid := range a.refused {
		if e := pv.entries[uid]; e == nil || e.node != "" {
			delete(a.refused, uid) // bound or gone
		}
	}
	a.refusedMu.Unlock()
	return nil
}

// samePlacedPod tells whether p, a new version of a placed pod on the
// same node, would be made into the allocation e holds: its labels (queue,
// job, tier, whose container it is), its deletion begun or not and its
// request are as they were. Most versions of a placed pod are the API
// server's own — the binding seen, kubelet's status — and making each
// again would be a third of what the pods cost a cycle while binding.
func (a *Allocator) samePlacedPod(e *podEntry, p *corev1.Pod) bool {
	return e.kind == podAllocation && maps.Equal(e.pod.Labels, p.Labels) &&
		(e.pod.DeletionTimestamp == nil) == (p.DeletionTimestamp == nil) && a.podResource(p).Equal(e.res)
}

// placedAsPlanned takes a waiting pod's entry, which a plan placed, as
// the allocation it made when the pod shows bound where the plan put it
// and otherwise as it was: that allocation is what making the pod again
// would write. Each pod a cycle binds is seen so at the next.
func (a *Allocator) placedAsPlanned(w *schedstate.Txn, nodes *nodeSet, e *podEntry, p *corev1.Pod) bool {
	if !e.stale || e.everyCycle || e.kind != podRequest || e.node != "" || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return false
	}
	al, rn := w.Allocation(e.id), nodes.byHost[p.Spec.NodeName]
	if al == nil || rn == nil || al.NodeID != rn.ID || al.Preempting || !maps.Equal(e.pod.Labels, p.Labels) ||
		!a.podResource(p).Equal(al.Resource) {
		return false
	}
	pv := a.view.pods
	e.kind, e.stale, e.pod, e.rv, e.node, e.res = podAllocation, false, p, p.ResourceVersion, p.Spec.NodeName, al.Resource
	delete(pv.pending, e.id)
	pv.bound[e.id] = p
	return true
}

// makePod puts one pod's objects into the store, as e says.
func (a *Allocator) makePod(w *schedstate.Txn, snap *state.Snapshot, nodes *nodeSet, where *constraints, e *podEntry) error {
	pv, p := a.view.pods, e.pod
	if p.Spec.NodeName != "" {
		if _, ok := translator.ContainerOf(p, a.opts.ClusterID); ok {
			return nil // the RM's records hold it
		}
		rn := nodes.byHost[p.Spec.NodeName]
		if rn == nil || w.Node(rn.ID) == nil {
			return nil // on a node Weft does not schedule onto now
		}
		appID, _, tier, err := a.podApp(w, p)
		if err != nil {
			// Placed, but no longer in a queue (its queue was removed):
			// it still holds the node's capacity, as others' pods do.
			e.kind, e.everyCycle, e.chargeNode, e.charge = podCharged, true, rn.ID, a.podResource(p)
			return a.chargeOthers(w, rn.ID, e.charge)
		}
		e.res = a.podResource(p)
		if err := w.AddAllocation(&objects.Allocation{ID: e.id, AppID: appID, NodeID: rn.ID, Tier: tier,
			Resource: e.res, Preempting: p.DeletionTimestamp != nil}); err != nil {
			return err
		}
		e.kind, e.app = podAllocation, appID
		pv.appPods[appID]++
		pv.bound[e.id] = p
		return nil
	}
	if cid, ok := translator.ContainerOf(p, a.opts.ClusterID); ok {
		if cid.ID != 1 {
			return nil // a task container: the RM's records hold it
		}
		e.everyCycle = true
		app := snap.Application(cid.Attempt.App)
		if app == nil || app.CurrentAttempt != cid.Attempt.ID || amContainer(snap, app) != nil ||
			w.Application(cid.Attempt.String()) == nil {
			return nil // not an AM waiting for its attempt's container
		}
		if err := w.AddRequest(&objects.Request{ID: e.id, AppID: cid.Attempt.String(), Tier: records.TierHigh,
			Resource: toQuota(app.AMResource), Nodes: where.forPod(p)}); err != nil {
			return err
		}
		e.kind = podRequest
		pv.pending[e.id] = pendingPod{pod: p, am: &cid, tier: records.TierHigh, queue: app.Queue}
		return nil
	}
	appID, queue, tier, err := a.podApp(w, p)
	if err != nil {
		e.everyCycle = true
		pv.refusals = append(pv.refusals, refusal{pod: p, reason: "FailedScheduling", message: err.Error()})
		return nil
	}
	if err := w.AddRequest(&objects.Request{ID: e.id, AppID: appID, Tier: tier, Resource: a.podResource(p), Nodes: where.forPod(p)}); err != nil {
		return err
	}
	e.kind, e.app = podRequest, appID
	pv.appPods[appID]++
	pv.pending[e.id] = pendingPod{pod: p, tier: tier, queue: queue}
	return nil
}

// chargeOthers counts r among what others hold on a node.
func (a *Allocator) chargeOthers(w *schedstate.Txn, node string, r quota.Resource) error {
	n := *w.Node(node)
	n.NonWeftUsed = n.NonWeftUsed.Add(r)
	return w.UpsertNode(&n)
}

// podApp files a pod that is not a YARN container under its application,
// created in its queue if this is the application's first pod, and returns
// the application's id and queue and the pod's tier.
func (a *Allocator) podApp(w *schedstate.Txn, p *corev1.Pod) (id, queue string, tier records.Tier, err error) {
	qname := p.Labels[wellknown.LabelQueue]
	if qname == "" {
		qname = "root.default"
	}
	q, ok := a.mgr.Queues().Queue(qname)
	if !ok {
		return "", "", 0, fmt.Errorf("queue %q (label %s) does not exist", qname, wellknown.LabelQueue)
	}
	tier = records.TierMedium
	if p.Labels[wellknown.LabelTier] != "" {
		tier = cmp.Or(translator.PodTier(p), records.TierLow)
	}
	job := p.Labels[wellknown.LabelApp]
	if job == "" {
		job = p.Name
	}
	id = podPrefix + p.Namespace + "/" + job
	if app := w.Application(id); app != nil {
		if app.Queue != q.Path {
			return "", "", 0, fmt.Errorf("job %s is in queue %s, this pod names %s", job, app.Queue, q.Path)
		}
		return id, q.Path, tier, nil
	}
	if err := w.UpsertApplication(&objects.Application{ID: id, Queue: q.Path, User: p.Namespace, Submitted: p.CreationTimestamp.Time}); err != nil {
		return "", "", 0, err
	}
	return id, q.Path, tier, nil
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
func (a *Allocator) bindPods(ctx context.Context, snap *state.Snapshot, pv *podView, placements []objects.Placement) int {
	var ams, others []podbinder.Binding
	var amPods, otherPods []pendingPod
	var amNodes []*records.Node
	for _, pl := range placements {
		pp, ok := pv.pending[pl.RequestID]
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
func (a *Allocator) tellRefused(pv *podView) {
	for _, r := range pv.refusals {
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
