// Package podsync keeps the records of YARN task containers and their pods
// together, one container at a time: a pod's phase becomes its
// container's state (running, then complete with its exit code), pods
// whose container the RM ended or never granted are removed, and a
// running container whose pod is gone is lost with it — what a
// NodeManager's container status reports and the RM's
// ContainerAllocationExpirer do in YARN. AM containers are the AM
// launcher's (amlauncher).
package podsync

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource"
	"github.com/weft-sh/weft/translator"
)

// Options configures a Reconciler.
type Options struct {
	// Namespace holds the pods of YARN applications.
	Namespace string
	// ClusterID names this RM on its pods (yarn.resourcemanager.cluster-id;
	// default "weft").
	ClusterID string
	// ContainerAllocationExpiry is how long a container handed to its AM
	// may go without a pod before it is ended as unused
	// (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms,
	// default 10 minutes), so capacity an AM never used — it died, or a
	// grant was lost with an RM that restarted — returns to the cluster.
	ContainerAllocationExpiry time.Duration
	// APIReader reads straight from the API server (the manager's
	// GetAPIReader): a pod missing from the cache is confirmed gone there
	// before its container is ended as lost. Default: the client.
	APIReader client.Reader
	// Workers is how many containers are reconciled at once (default 8).
	Workers int
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Containers is what the pods of task containers tell the RM's records:
// a container started, or ended.
type Containers interface {
	ContainerRunning(ctx context.Context, id records.ContainerID) error
	CompleteContainer(ctx context.Context, id records.ContainerID, exitStatus int32, diagnostics string) (bool, error)
	storesource.Store
}

// Reconciler reconciles one task container (a request named by its
// container id) with its pod.
type Reconciler struct {
	mgr    Containers
	client client.Client
	opts   Options
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler writing through c, which reads pods from the
// manager's cache.
func New(mgr Containers, c client.Client, opts Options) *Reconciler {
	opts.ClusterID = cmp.Or(opts.ClusterID, "weft")
	opts.ContainerAllocationExpiry = cmp.Or(opts.ContainerAllocationExpiry, 10*time.Minute)
	opts.Workers = cmp.Or(opts.Workers, 8)
	if opts.APIReader == nil {
		opts.APIReader = c
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Reconciler{mgr: mgr, client: c, opts: opts}
}

// CompletedPodRetention is how long the pod of a completed container is
// kept for its logs and status, as a NodeManager keeps a stopped
// container's (yarn.nodemanager.duration-to-track-stopped-containers).
const CompletedPodRetention = 2 * time.Minute

// SetupWithManager runs the reconciler under mgr: a container is
// reconciled when its pod changes, when its record does, and when its
// application ends or moves to another attempt.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("container-pods").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.PodRequests)).
		WatchesRawSource(r.StoreSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers, RateLimiter: storesource.RetryRateLimiter()}).
		Complete(r)
}

// PodRequests maps a task container's pod of this RM's to its container.
func (r *Reconciler) PodRequests(_ context.Context, o client.Object) []reconcile.Request {
	if id, ok := ContainerOf(o, r.opts.Namespace, r.opts.ClusterID); ok && id.ID != 1 {
		return []reconcile.Request{storesource.Request(id)}
	}
	return nil
}

// StoreSource is the task containers the RM's records concern.
func (r *Reconciler) StoreSource() source.Source {
	return storesource.New(r.mgr, storesource.Options{Initial: initial, Changed: changed})
}

// ContainerOf is the container a pod of the RM named clusterID runs, for
// a pod in namespace.
func ContainerOf(o client.Object, namespace, clusterID string) (records.ContainerID, bool) {
	pod, ok := o.(*corev1.Pod)
	if !ok || pod.Namespace != namespace {
		return records.ContainerID{}, false
	}
	return translator.ContainerOf(pod, clusterID)
}

// initial are the task containers of running applications: one whose pod
// went while no RM watched is found lost, and one never started expires.
func initial(snap *state.Snapshot) []reconcile.Request {
	var out []reconcile.Request
	for _, app := range snap.Applications(state.ApplicationFilter{States: []records.AppState{records.AppRunning}}) {
		out = append(out, tasks(snap, app.ID)...)
	}
	return out
}

// changed maps a change to the containers it concerns: a task container's
// own record, every container of an application that ended or began
// another attempt (their pods stop, as YARN stops a finished attempt's
// containers), and every container on a node just lost (the pods of
// those that ended before it and still terminate there are removed for
// good: see Delete).
func changed(snap *state.Snapshot, c state.Change) []reconcile.Request {
	switch c.Table {
	case state.TableNodes:
		var out []reconcile.Request
		for _, rec := range LostWith(snap, c) {
			if rec.ID.ID != 1 {
				out = append(out, storesource.Request(rec.ID))
			}
		}
		return out
	case state.TableContainers:
		rec, _ := cmp.Or(c.After, c.Before).(*records.Container)
		if rec != nil && rec.ID.ID != 1 {
			return []reconcile.Request{storesource.Request(rec.ID)}
		}
	case state.TableApplications:
		after, _ := c.After.(*records.Application)
		before, _ := c.Before.(*records.Application)
		if after != nil && (before == nil || before.State != after.State || before.CurrentAttempt != after.CurrentAttempt) {
			return tasks(snap, after.ID)
		}
	}
	return nil
}

func tasks(snap *state.Snapshot, app records.ApplicationID) []reconcile.Request {
	var out []reconcile.Request
	for _, c := range snap.ContainersOfApp(app) {
		if c.ID.ID != 1 {
			out = append(out, storesource.Request(c.ID))
		}
	}
	return out
}

// Reconcile reads a task container's pod into its record, removes the pod
// once the RM has ended its container (after CompletedPodRetention for
// one that completed), and ends a running container whose pod is gone.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id, err := records.ParseContainerID(req.Name)
	if err != nil || id.ID == 1 {
		return reconcile.Result{}, nil // not a task container's: nothing to do, ever
	}
	snap := r.mgr.Snapshot()
	app, c := snap.Application(id.Attempt.App), snap.Container(id)
	pod, err := CachedPod(ctx, r.client, r.opts.Namespace, id)
	if err != nil {
		return reconcile.Result{}, err
	}
	if pod != nil {
		lost := c != nil && NodeLost(snap, c.Node)
		return r.withPod(ctx, app, c, id, pod, lost)
	}
	if app == nil || app.State != records.AppRunning || c == nil {
		return reconcile.Result{}, nil
	}
	switch {
	case c.State == records.ContainerRunning:
		// Lost with its pod (evicted, deleted, its node gone) — once the
		// API server confirms what the cache says.
		if gone, err := Gone(ctx, r.opts.APIReader, r.opts.Namespace, id); err != nil || !gone {
			return reconcile.Result{}, err
		}
		_, err := r.mgr.CompleteContainer(ctx, id, records.ExitAborted, "Container's pod was deleted")
		return reconcile.Result{}, err
	case c.State == records.ContainerNew && c.Acquired:
		// Handed to its AM, never started: it expires, as YARN's
		// ContainerAllocationExpirer ends it.
		left := time.UnixMilli(c.StartTime).Add(r.opts.ContainerAllocationExpiry).Sub(r.opts.Now())
		if left >= 0 {
			return reconcile.Result{RequeueAfter: left + time.Millisecond}, nil
		}
		if gone, err := Gone(ctx, r.opts.APIReader, r.opts.Namespace, id); err != nil || !gone {
			return reconcile.Result{}, err
		}
		_, err := r.mgr.CompleteContainer(ctx, id, records.ExitAborted, "Container expired since it was unused")
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// withPod reconciles a container whose pod exists, on a node the RM holds
// LOST when lost.
func (r *Reconciler) withPod(ctx context.Context, app *records.Application, c *records.Container, id records.ContainerID,
	pod *corev1.Pod, lost bool) (reconcile.Result, error) {
	if app == nil || app.State.Terminal() || c == nil {
		// Finished, killed or forgotten, or no grant stands behind it:
		// nothing of it may keep running.
		return reconcile.Result{}, Delete(ctx, r.client, pod, lost)
	}
	if c.State != records.ContainerComplete && id.Attempt.ID != app.CurrentAttempt && !app.KeepContainers {
		if _, err := r.mgr.CompleteContainer(ctx, id, records.ExitAborted, "Container of a completed attempt"); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, Delete(ctx, r.client, pod, lost)
	}
	code, diag, st := translator.PodOutcome(pod)
	switch {
	case c.State == records.ContainerComplete && st != records.ContainerComplete:
		// Released by its AM, or preempted: stopped.
		return reconcile.Result{}, Delete(ctx, r.client, pod, lost)
	case c.State == records.ContainerComplete:
		left := time.UnixMilli(c.FinishTime).Add(CompletedPodRetention).Sub(r.opts.Now())
		if left >= 0 {
			return reconcile.Result{RequeueAfter: left + time.Millisecond}, nil
		}
		return reconcile.Result{}, Delete(ctx, r.client, pod, lost)
	case st == records.ContainerComplete:
		_, err := r.mgr.CompleteContainer(ctx, id, code, diag)
		return reconcile.Result{}, err
	case st == records.ContainerRunning && c.State == records.ContainerNew:
		return reconcile.Result{}, r.mgr.ContainerRunning(ctx, id)
	}
	return reconcile.Result{}, nil
}

// NodeLost tells whether the RM holds the node of that id LOST.
func NodeLost(snap *state.Snapshot, node string) bool {
	n := snap.Node(node)
	return n != nil && n.State == records.NodeLost
}

// LostWith are the containers on the node a store change made LOST; none
// for any other change.
func LostWith(snap *state.Snapshot, c state.Change) []*records.Container {
	after, _ := c.After.(*records.Node)
	before, _ := c.Before.(*records.Node)
	if after == nil || after.State != records.NodeLost || before != nil && before.State == records.NodeLost {
		return nil
	}
	return snap.ContainersOnNode(after.ID)
}

// CachedPod is a container's pod as the cache holds it, or nil.
func CachedPod(ctx context.Context, c client.Reader, namespace string, id records.ContainerID) (*corev1.Pod, error) {
	var pod corev1.Pod
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: translator.PodName(id.String())}, &pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod of %s: %w", id, err)
	}
	return &pod, nil
}

// Gone confirms with the API server that a container's pod does not
// exist: a cache may not have seen a pod created an instant ago.
func Gone(ctx context.Context, api client.Reader, namespace string, id records.ContainerID) (bool, error) {
	pod, err := CachedPod(ctx, api, namespace, id)
	return pod == nil, err
}

// Delete removes a pod and its credentials Secret. A pod already being
// deleted (its termination's updates wake the controllers again) is not
// deleted again — unless its node is lost (nodeLost): then the pod is
// deleted at once, with no grace period, even one already terminating. A
// graceful deletion waits for the node's kubelet to confirm that the
// pod's containers stopped, and the kubelet of a LOST node is gone: the
// pod would stay, terminating, until the Node itself is deleted. The RM
// has ended its container already, so nothing waits on the pod; and a
// kubelet that comes back kills what still runs of a pod the API server
// no longer has.
func Delete(ctx context.Context, c client.Writer, pod *corev1.Pod, nodeLost bool) error {
	switch {
	case nodeLost && (pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds > 0):
		if err := c.Delete(ctx, pod, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete pod %s of a lost node: %w", pod.Name, err)
		}
	case pod.DeletionTimestamp == nil:
		if err := c.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete pod %s: %w", pod.Name, err)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil {
			continue
		}
		secret := &corev1.Secret{}
		secret.Namespace, secret.Name = pod.Namespace, v.Secret.SecretName
		if err := c.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete secret %s: %w", secret.Name, err)
		}
	}
	return nil
}
