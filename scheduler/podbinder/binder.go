// Package podbinder is the Kubernetes side of Weft's scheduler, as
// YuniKorn's shim is of its core: it watches the pods whose
// spec.schedulerName is Weft's, tells a scheduling cycle which of them wait
// for a node and which hold one, and binds placed pods through the API
// server's Binding subresource, many at once. It decides nothing itself.
package podbinder

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/weft-sh/weft/translator/kubeclient"
)

// DefaultSchedulerName is the spec.schedulerName of the pods Weft binds.
const DefaultSchedulerName = "weft-scheduler"

// Options configures a Binder.
type Options struct {
	// SchedulerName selects the pods to bind (default DefaultSchedulerName).
	SchedulerName string
	// Namespace limits the watch to one namespace; empty watches all.
	Namespace string
	// Workers is how many bindings are in flight at once (default 256):
	// each waits on the API server, which takes many at once. Each runs
	// on a worker goroutine that stays for the next.
	Workers int
	// Informer, when set, is a shared informer of live pods of every
	// scheduler (run by its owner), which the Binder indexes by scheduler
	// name instead of opening a watch of its own. It must not have started.
	Informer cache.SharedIndexInformer
	// OnPending is called when a pod starts waiting for a node, so that a
	// cycle can start without waiting for its timer.
	OnPending func()
	Logger    *slog.Logger
}

// Binding places one pod on one node.
type Binding struct {
	Namespace, Name string
	UID             types.UID
	Node            string
}

// Binder watches Weft's pods and binds them.
type Binder struct {
	client   kubernetes.Interface
	opts     Options
	informer cache.SharedIndexInformer
	own      bool // informer is the Binder's to run
	// handled reports when the Binder's handler has seen every pod of the
	// informer's first list (the informer's own HasSynced reports its
	// cache filled, which comes first).
	handled cache.ResourceEventHandlerRegistration

	mu sync.Mutex
	// pods are the live pods that name this scheduler, by uid, as the
	// handler last saw them: kept under mu with assumed, so that Pods
	// never reads a pod bound while the assumption its binding made is
	// already gone (the informer's cache moves before the handler runs).
	pods map[types.UID]*corev1.Pod
	// assumed are pods being bound, or bound, by this Binder that the watch
	// has not shown bound yet, with their node: a cycle must see them as
	// placed, or it would place them again (kube-scheduler's assume cache).
	assumed map[types.UID]string
	// moved are the pods whose answer from Pods changed since the last
	// Pods or Moved (seen anew, gone, assumed, an assumption forgotten).
	moved map[types.UID]struct{}
	// jobs hands a binding to an idle worker (see start).
	jobs chan func()
	// poolMu guards workers, how many binding workers are started.
	poolMu  sync.Mutex
	workers int
}

// New returns a Binder; Run starts its watch.
func New(client kubernetes.Interface, opts Options) (*Binder, error) {
	if opts.SchedulerName == "" {
		opts.SchedulerName = DefaultSchedulerName
	}
	if opts.Workers <= 0 {
		opts.Workers = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Binder{client: client, opts: opts, informer: opts.Informer, assumed: map[types.UID]string{},
		pods: map[types.UID]*corev1.Pod{}, moved: map[types.UID]struct{}{}, jobs: make(chan func())}
	if b.informer == nil {
		// Only live pods of this scheduler: the API server filters, so the
		// cache holds Weft's pods and nothing else. A pod that ends leaves
		// the cache (the watch reports it deleted), which frees its capacity.
		b.own = true
		factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(opts.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = "spec.schedulerName=" + opts.SchedulerName +
					",status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed)
			}))
		b.informer = factory.Core().V1().Pods().Informer()
	}
	var err error
	b.handled, err = b.informer.AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			p, ok := podOf(obj)
			return ok && p.Spec.SchedulerName == opts.SchedulerName && (opts.Namespace == "" || p.Namespace == opts.Namespace)
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { b.seen(obj) },
			UpdateFunc: func(_, obj any) { b.seen(obj) },
			DeleteFunc: func(obj any) {
				if p, ok := podOf(obj); ok {
					b.gone(p.UID)
				}
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("podbinder: watch pods: %w", err)
	}
	return b, nil
}

// podOf is the pod of a watch event, including one whose deletion the
// watch missed.
func podOf(obj any) (*corev1.Pod, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	return p, ok
}

// gone forgets a pod the watch shows ended or deleted, and its
// assumption.
func (b *Binder) gone(uid types.UID) {
	b.mu.Lock()
	delete(b.pods, uid)
	delete(b.assumed, uid)
	b.moved[uid] = struct{}{}
	b.mu.Unlock()
}

// seen keeps a pod as the watch shows it, drops an assumption the watch
// has caught up with (the pod shows bound), and reports a pod that waits
// for a node.
func (b *Binder) seen(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	b.mu.Lock()
	b.pods[p.UID] = p
	b.moved[p.UID] = struct{}{}
	if p.Spec.NodeName != "" {
		delete(b.assumed, p.UID)
	}
	b.mu.Unlock()
	if p.Spec.NodeName == "" && b.opts.OnPending != nil && p.DeletionTimestamp == nil {
		b.opts.OnPending()
	}
}

// Run watches until ctx ends (a shared informer runs on its owner's call).
func (b *Binder) Run(ctx context.Context) {
	if b.own {
		b.informer.Run(ctx.Done())
	}
}

// WaitForSync waits until the watch has listed every pod once and the
// Binder has seen each: before that, a cycle would take bound pods'
// capacity for free.
func (b *Binder) WaitForSync(ctx context.Context) bool {
	return kubeclient.WaitForSync(ctx, b.informer.HasSynced, b.handled.HasSynced)
}

// Pods returns the pods waiting for a node and those holding one (bound,
// or bound by this Binder and not yet seen so), in no particular order.
// A pod being deleted before it was bound waits for nothing. The pods are
// the cache's: callers must not modify them.
func (b *Binder) Pods() (pending, bound []*corev1.Pod) {
	// The Binder's own map, not the informer's index: the index answers
	// with a slice built from a set of keys, each looked up in the cache,
	// a tenth of weft-rm's CPU while pods arrive one by one
	// (test/bench/binding -running); and the map moves with assumed under
	// one lock (see pods).
	//
	// It also starts Moved afresh: the Binder tells one caller what moved.
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.moved)
	for _, p := range b.pods {
		switch shown, ok := b.shown(p); {
		case !ok:
		case shown.Spec.NodeName != "":
			bound = append(bound, shown)
		default:
			pending = append(pending, shown)
		}
	}
	return pending, bound
}

// Moved returns, of the pods whose answer from Pods changed since the last
// call to Pods or Moved and of the pods also names, those Pods would
// return now, as it would return them, and the uids of the others (ended,
// deleted, or being deleted before they were bound). A cycle reads what
// moved, not every pod: walking them all, as pods arrive one by one and
// cycles follow each other, would be a sixth of weft-rm's CPU
// (test/bench/binding -running).
func (b *Binder) Moved(also []types.UID) (pods []*corev1.Pod, gone []types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, uid := range also {
		b.moved[uid] = struct{}{}
	}
	for uid := range b.moved {
		if p, ok := b.shown(b.pods[uid]); ok {
			pods = append(pods, p)
		} else {
			gone = append(gone, uid)
		}
	}
	clear(b.moved)
	return pods, gone
}

// shown is p as Pods returns it (with its assumed node), or false for a
// pod Pods leaves out. Called with mu held.
func (b *Binder) shown(p *corev1.Pod) (*corev1.Pod, bool) {
	if p == nil {
		return nil, false
	}
	switch node, assumed := b.assumed[p.UID]; {
	case p.Spec.NodeName != "":
		return p, true
	case assumed:
		// A shallow copy with its node: callers do not modify pods,
		// and a deep copy of every pod bound and not yet seen so, each
		// cycle, would be a tenth of weft-rm's CPU in test/bench/binding.
		c := *p
		c.Spec.NodeName = node
		return &c, true
	case p.DeletionTimestamp == nil:
		return p, true
	}
	return nil, false
}

// Bind binds pods to nodes and returns one error (or nil) per binding, in
// order, once all are done. At most Workers bindings are in flight at once,
// across all calls. A pod is reported bound by Pods from the call on (a
// failed binding makes it pending again), so that no cycle places it twice.
func (b *Binder) Bind(ctx context.Context, bindings []Binding) []error {
	b.assume(bindings)
	return b.bind(ctx, bindings)
}

// BindAsync is Bind without waiting: the pods are reported bound when it
// returns, and done receives the errors once the API server has answered.
func (b *Binder) BindAsync(ctx context.Context, bindings []Binding, done func([]error)) {
	b.assume(bindings)
	go func() { done(b.bind(ctx, bindings)) }()
}

func (b *Binder) assume(bindings []Binding) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bd := range bindings {
		b.assumed[bd.UID] = bd.Node
		b.moved[bd.UID] = struct{}{}
	}
}

func (b *Binder) bind(ctx context.Context, bindings []Binding) []error {
	errs := make([]error, len(bindings))
	var wg sync.WaitGroup
	for i, bd := range bindings {
		wg.Add(1)
		err := b.start(ctx, func() {
			defer wg.Done()
			if errs[i] = b.bindOne(ctx, bd); errs[i] != nil {
				b.forget(bd)
			}
		})
		if err != nil {
			wg.Done()
			errs[i] = err
			b.forget(bd)
		}
	}
	wg.Wait()
	return errs
}

// start runs a binding on a worker that waits for one, or on a new worker
// while there are fewer than Workers, or else waits for a worker to be
// free (or ctx to end). Workers outlive their bindings and live as long as
// the Binder: a goroutine a binding grew its stack through client-go's
// HTTP/2 path each time, copying it several times (2% of weft-rm's CPU
// while pods arrive one by one, test/bench/binding -running), and woke the
// Go scheduler once more for its start; parked, Workers goroutines cost
// their stacks.
func (b *Binder) start(ctx context.Context, job func()) error {
	select {
	case b.jobs <- job:
		return nil
	default:
	}
	b.poolMu.Lock()
	if b.workers < b.opts.Workers {
		b.workers++
		b.poolMu.Unlock()
		go b.work(job)
		return nil
	}
	b.poolMu.Unlock()
	select {
	case b.jobs <- job:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// work runs job, then every job start hands it.
func (b *Binder) work(job func()) {
	for {
		job()
		job = <-b.jobs
	}
}

// forget drops the assumption of a binding that failed.
func (b *Binder) forget(bd Binding) {
	b.mu.Lock()
	if node, ok := b.assumed[bd.UID]; ok && node == bd.Node {
		delete(b.assumed, bd.UID)
		b.moved[bd.UID] = struct{}{}
	}
	b.mu.Unlock()
}

func (b *Binder) bindOne(ctx context.Context, bd Binding) error {
	err := b.client.CoreV1().Pods(bd.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: bd.Namespace, Name: bd.Name, UID: bd.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: bd.Node},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", bd.Namespace, bd.Name, bd.Node, err)
	}
	return nil
}

// Event records on a pod why it still waits, as kube-scheduler's
// FailedScheduling events do; best effort.
func (b *Binder) Event(ctx context.Context, p *corev1.Pod, reason, message string) {
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID,
			APIVersion: "v1", ResourceVersion: p.ResourceVersion},
		Reason: reason, Message: message, Type: corev1.EventTypeWarning, Count: 1,
		FirstTimestamp: now, LastTimestamp: now, Source: corev1.EventSource{Component: b.opts.SchedulerName},
		ReportingController: b.opts.SchedulerName,
	}
	if _, err := b.client.CoreV1().Events(p.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		b.opts.Logger.Debug("pod event", "pod", p.Namespace+"/"+p.Name, "err", err)
	}
}

// Preempt deletes a pod Weft placed so that another may have its place,
// with grace as its termination grace period (its advance notice), and
// only the pod of that UID: a pod recreated under the same name is not the
// victim.
func (b *Binder) Preempt(ctx context.Context, p *corev1.Pod, grace time.Duration) error {
	secs := int64(grace / time.Second)
	err := b.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &secs,
		Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("preempt pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}
