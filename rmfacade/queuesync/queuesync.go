// Package queuesync follows the cluster's Queue objects: their tree
// becomes the RM's queue tree when it changes — as YARN's `rmadmin
// -refreshQueues` swaps in a new capacity-scheduler.xml, and with its
// rule that a tree that is not valid leaves the current one in place —
// and each Queue's status says what the RM sees in it: applications
// running and pending, resources held, the guarantee in effect and the
// part borrowed above it.
package queuesync

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/quota/crd"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource"
)

// Options configures a Reconciler.
type Options struct {
	// VCoreMilli is the CPU of one YARN vcore, in millicores (the status's
	// used CPU; default 1000).
	VCoreMilli int64
	// StatusEvery is the least time between two rounds of status writes
	// (default 1s): the RM's records change in bursts, and a Queue's
	// status need not follow each change.
	StatusEvery time.Duration
	// Events records why a tree was refused, on its Queues.
	Events record.EventRecorder
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Queues is the RM's side of the queue tree: the tree it admits into,
// swapped whole, and the store whose applications the statuses count.
type Queues interface {
	SetQueues(rm.Queues)
	storesource.Store
}

// Reconciler reconciles the whole tree, whichever Queue changed, since a
// tree is valid or not as a whole: Request on a Queue's change,
// StatusRequest on the RM's.
type Reconciler struct {
	mgr    Queues
	client client.Client
	opts   Options
	// objects are the Queues the current tree was read from, for the
	// scheduler's absolute quotas and time windows; nil when none.
	objects atomic.Pointer[[]v1alpha1.Queue]

	mu          sync.Mutex // serializes reconciles' use of the fields below
	configs     []quota.QueueConfig
	lastStatus  time.Time // of the last round of status writes
	lastRefusal string    // the refused tree's error, last told in Events
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Request is the tree's request when a Queue changed: the tree is read
// again, and the statuses written.
var Request = reconcile.Request{NamespacedName: types.NamespacedName{Name: "queues"}}

// StatusRequest is the tree's request when what the statuses count
// changed: they are written, at most once each StatusEvery.
var StatusRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "queue-status"}}

// New returns a Reconciler over the tree the RM starts with, read from
// the Queues objects (Read).
func New(mgr Queues, c client.Client, configs []quota.QueueConfig, objects []v1alpha1.Queue, opts Options) *Reconciler {
	opts.VCoreMilli = cmp.Or(opts.VCoreMilli, 1000)
	opts.StatusEvery = cmp.Or(opts.StatusEvery, time.Second)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Events == nil {
		opts.Events = &record.FakeRecorder{}
	}
	r := &Reconciler{mgr: mgr, client: c, opts: opts, configs: configs}
	if objects != nil {
		r.objects.Store(&objects)
	}
	return r
}

// Objects are the Queue objects the RM's tree was last read from, or nil.
func (r *Reconciler) Objects() []v1alpha1.Queue {
	if p := r.objects.Load(); p != nil {
		return *p
	}
	return nil
}

// SetupWithManager runs the reconciler under mgr: the tree is reconciled
// when a Queue changes, and the statuses when the RM's applications,
// attempts or containers do.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("queues").
		Watches(&v1alpha1.Queue{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{Request}
		})).
		WatchesRawSource(r.StoreSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, RateLimiter: storesource.RetryRateLimiter()}).
		Complete(r)
}

// StoreSource is the tree's request once at start, and the statuses' on
// every change of what they count.
func (r *Reconciler) StoreSource() source.Source {
	return storesource.New(r.mgr, storesource.Options{
		Initial: func(*state.Snapshot) []reconcile.Request { return []reconcile.Request{Request} },
		Changed: func(_ *state.Snapshot, c state.Change) []reconcile.Request {
			switch c.Table {
			case state.TableApplications, state.TableAttempts, state.TableContainers:
				return []reconcile.Request{StatusRequest}
			}
			return nil
		},
	})
}

// Condition and reason of a Queue's status saying whether the RM follows
// the tree it is part of.
const (
	ConditionTreeValid = "TreeValid"
	ReasonValid        = "Valid"
	ReasonInvalidTree  = "InvalidTree"
)

// Reconcile swaps in the Queues' tree when it changed and is valid (else
// logs why, keeps the current one and says so on the Queues), then writes
// the statuses that changed, at most once each StatusEvery.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	wait := r.lastStatus.Add(r.opts.StatusEvery).Sub(now)
	if req == StatusRequest && wait > 0 {
		// The records change in bursts: the statuses follow them at
		// most once each StatusEvery.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	var list v1alpha1.QueueList
	if err := r.client.List(ctx, &list); err != nil {
		return reconcile.Result{}, fmt.Errorf("list queues: %w", err)
	}
	if len(list.Items) == 0 {
		return reconcile.Result{}, nil // the Queues are gone: the current tree stays
	}
	refusal := r.refresh(list.Items)
	if refusal != "" && refusal != r.lastRefusal {
		for i := range list.Items {
			r.opts.Events.Event(&list.Items[i], corev1.EventTypeWarning, ReasonInvalidTree,
				"the RM keeps its current queue tree: "+refusal)
		}
	}
	r.lastRefusal = refusal
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if err := r.writeStatus(ctx, list.Items, refusal, now); err != nil {
		return reconcile.Result{}, err
	}
	r.lastStatus = now
	return reconcile.Result{RequeueAfter: windowsChangeIn(list.Items, now)}, nil
}

// refresh makes the Queues' tree the RM's if it is valid, returning why
// not otherwise.
func (r *Reconciler) refresh(queues []v1alpha1.Queue) (refusal string) {
	configs, err := crd.ConfigsFromQueues(queues)
	if err == nil && !reflect.DeepEqual(configs, r.configs) {
		var tree *quota.Tree
		if tree, err = quota.NewTree(configs); err == nil {
			r.configs = configs
			r.mgr.SetQueues(tree)
			r.opts.Logger.Info("queues refreshed", "queues", len(configs))
		}
	}
	if err != nil {
		r.opts.Logger.Warn("queues not refreshed: the new tree is not valid", "err", err)
		return err.Error()
	}
	objs := make([]v1alpha1.Queue, len(queues))
	for i := range queues {
		queues[i].DeepCopyInto(&objs[i])
	}
	r.objects.Store(&objs)
	return ""
}

// windowsChangeIn is how long until a time window may open or close (its
// bounds are whole minutes): the next minute when a Queue has windows,
// else zero.
func windowsChangeIn(queues []v1alpha1.Queue, now time.Time) time.Duration {
	for _, q := range queues {
		if len(q.Spec.TimeWindows) > 0 {
			return now.Truncate(time.Minute).Add(time.Minute).Sub(now) + time.Second
		}
	}
	return 0
}

// usage is what the RM sees in one queue.
type usage struct {
	running, pending int32
	used             records.Resource
}

// usages are the RM's applications counted in their queues.
func usages(snap *state.Snapshot) map[string]*usage {
	own := map[string]*usage{}
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
	return own
}

// writeStatus publishes each Queue's status as the RM sees it; parents
// add up their children. Statuses that did not change are not written.
func (r *Reconciler) writeStatus(ctx context.Context, queues []v1alpha1.Queue, refusal string, now time.Time) error {
	children := map[string][]string{}
	for _, q := range queues {
		if p := q.Spec.Parent; p != "" {
			children[p] = append(children[p], q.Name)
		}
	}
	own := usages(r.mgr.Snapshot())
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
	valid := metav1.Condition{Type: ConditionTreeValid, Status: metav1.ConditionTrue, Reason: ReasonValid,
		Message: "the RM follows the queue tree"}
	if refusal != "" {
		valid.Status, valid.Reason, valid.Message = metav1.ConditionFalse, ReasonInvalidTree, "the RM keeps its current queue tree: "+refusal
	}
	for i := range queues {
		q := &queues[i]
		t := total(q.Name, map[string]bool{})
		guaranteed, _, window := crd.Effective(q.Spec, now)
		used := corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(t.used.VCores)*r.opts.VCoreMilli, resource.DecimalSI),
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
			RunningApplications: t.running, PendingApplications: t.pending, ObservedGeneration: q.Generation,
			Conditions: append([]metav1.Condition(nil), q.Status.Conditions...)}
		cond := valid
		cond.ObservedGeneration, cond.LastTransitionTime = q.Generation, metav1.NewTime(now)
		meta.SetStatusCondition(&status.Conditions, cond)
		if equality.Semantic.DeepEqual(status, q.Status) {
			continue
		}
		patch := client.MergeFrom(q.DeepCopy())
		q.Status = status
		if err := r.client.Status().Patch(ctx, q, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("queue %s status: %w", q.Name, err)
		}
	}
	return nil
}
