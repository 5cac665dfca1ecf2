// Package amlauncher starts ApplicationMasters on Kubernetes, one
// application attempt at a time: an attempt waiting to be scheduled gets
// its AM's credentials Secret and pod of the reclaimed class (high tier)
// and is recorded as launched; the AM pod's end fails the attempt (a
// retry is scheduled while attempts remain), as YARN's RM does when an AM
// container exits; the pods of finished attempts and applications are
// removed. Task containers' pods are podsync's.
package amlauncher

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/podsync"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/credentials"
	"github.com/weft-sh/weft/translator/wellknown"
)

// AMTokens issues the AMRMToken an AM authenticates with.
type AMTokens interface {
	Issue(records.AttemptID) (*commonpb.TokenProto, error)
}

// Options configures the launcher.
type Options struct {
	// Namespace holds the pods of YARN applications.
	Namespace string
	// Profile spells reclaimed resources for the cluster's colocation system.
	Profile translator.Profile
	// Runtime is what AM pods run with besides their launch context.
	Runtime translator.Runtime
	// SchedulerName is the scheduler that binds Weft's pods.
	SchedulerName string
	// SchedulerAddr is the AM protocol's address, the AMRMToken's service.
	SchedulerAddr string
	// ClusterID names this RM on its pods (yarn.resourcemanager.cluster-id).
	ClusterID string
	// NMPort and NMHTTPPort are the node plugin's ports on every node.
	NMPort, NMHTTPPort int32
	// ContainerAllocationExpiry is podsync's (Options of the same name),
	// carried here with the rest of the pods' configuration.
	ContainerAllocationExpiry time.Duration
	// APIReader reads straight from the API server (the manager's
	// GetAPIReader): an AM pod missing from the cache is confirmed gone
	// there before its attempt is failed. Default: the client.
	APIReader client.Reader
	// Workers is how many attempts are reconciled at once (default 4).
	Workers int
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Attempts is what the launcher records of the attempts whose AMs it
// runs: YARN's AMLauncher events, and the container lifecycle of the AM
// container.
type Attempts interface {
	AMLaunched(ctx context.Context, id records.AttemptID, container records.ContainerID) error
	AMContainerPlaced(ctx context.Context, id records.ContainerID, node, nodeHTTP string, r records.Resource) error
	AMExited(ctx context.Context, id records.AttemptID, exitCode int32, diagnostics string) error
	CompleteContainer(ctx context.Context, id records.ContainerID, exitStatus int32, diagnostics string) (bool, error)
	storesource.Store
}

// Launcher reconciles one application attempt (a request named by its
// attempt id) with its AM pod.
type Launcher struct {
	mgr    Attempts
	client client.Client
	tokens AMTokens
	opts   Options
}

var _ reconcile.Reconciler = (*Launcher)(nil)

// New returns a launcher writing through c, which reads pods from the
// manager's cache.
func New(mgr Attempts, c client.Client, tokens AMTokens, opts Options) *Launcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.ClusterID = cmp.Or(opts.ClusterID, "weft")
	opts.Workers = cmp.Or(opts.Workers, 4)
	if opts.APIReader == nil {
		opts.APIReader = c
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Launcher{mgr: mgr, client: c, tokens: tokens, opts: opts}
}

// SetupWithManager runs the launcher under mgr: an attempt is reconciled
// when its record or its application's changes, and when its AM pod
// does.
func (l *Launcher) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named("am-launcher").
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(l.PodRequests)).
		WatchesRawSource(l.StoreSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: l.opts.Workers, RateLimiter: storesource.RetryRateLimiter()}).
		Complete(l)
}

// PodRequests maps an AM pod of this RM's to its attempt.
func (l *Launcher) PodRequests(_ context.Context, o client.Object) []reconcile.Request {
	if id, ok := podsync.ContainerOf(o, l.opts.Namespace, l.opts.ClusterID); ok && id.ID == 1 {
		return []reconcile.Request{storesource.Request(id.Attempt)}
	}
	return nil
}

// StoreSource is the attempts the RM's records concern.
func (l *Launcher) StoreSource() source.Source {
	return storesource.New(l.mgr, storesource.Options{Initial: initial, Changed: changed})
}

// initial are the current attempts of the applications not yet final:
// the ones a restarted RM launches, or finds ended while no RM watched.
func initial(snap *state.Snapshot) []reconcile.Request {
	var out []reconcile.Request
	for _, app := range snap.Applications(state.ApplicationFilter{}) {
		if !app.State.Terminal() && app.CurrentAttempt != 0 {
			out = append(out, storesource.Request(records.AttemptID{App: app.ID, ID: app.CurrentAttempt}))
		}
	}
	return out
}

// changed maps a change to the attempts it concerns: an attempt's own
// record, its application's current one when the application changes
// (killed, finished, removed), and those whose AM container is on a node
// just lost (an AM pod that went on terminating there is removed for
// good: see podsync.Delete).
func changed(snap *state.Snapshot, c state.Change) []reconcile.Request {
	switch c.Table {
	case state.TableNodes:
		var out []reconcile.Request
		for _, rec := range podsync.LostWith(snap, c) {
			if rec.ID.ID == 1 {
				out = append(out, storesource.Request(rec.ID.Attempt))
			}
		}
		return out
	case state.TableAttempts:
		if a, ok := cmp.Or(c.After, c.Before).(*records.Attempt); ok {
			return []reconcile.Request{storesource.Request(a.ID)}
		}
	case state.TableApplications:
		if a, ok := cmp.Or(c.After, c.Before).(*records.Application); ok && a.CurrentAttempt != 0 {
			return []reconcile.Request{storesource.Request(records.AttemptID{App: a.ID, ID: a.CurrentAttempt})}
		}
	}
	return nil
}

// Reconcile brings an attempt and its AM pod together, idempotently: an
// attempt waiting for its AM container gets one; an AM pod that ended
// fails its attempt (an AM that exits without unregistering has failed,
// even with exit code 0); the AM pod of an attempt or application that is
// over is removed with its credentials; an AM still running a while after
// it unregistered is stopped, as YARN stops it.
func (l *Launcher) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	id, err := records.ParseAttemptID(req.Name)
	if err != nil {
		return reconcile.Result{}, nil // not an attempt's: nothing to do, ever
	}
	snap := l.mgr.Snapshot()
	app, att := snap.Application(id.App), snap.Attempt(id)
	container := records.ContainerID{Attempt: id, ID: 1}
	pod, err := podsync.CachedPod(ctx, l.client, l.opts.Namespace, container)
	if err != nil {
		return reconcile.Result{}, err
	}
	if pod != nil {
		return l.withPod(ctx, snap, id, app, att, pod)
	}
	if app == nil || app.UnmanagedAM || app.CurrentAttempt != id.ID || att == nil {
		return reconcile.Result{}, nil // its owner runs the AM, or nothing is left to run
	}
	switch {
	case app.State == records.AppAccepted && att.State == records.AttemptScheduled:
		if err := l.launch(ctx, app, id); err != nil {
			l.opts.Logger.Warn("AM launch failed", "attempt", id.String(), "err", err)
			return reconcile.Result{}, err
		}
	case (app.State == records.AppAccepted || app.State == records.AppRunning) &&
		(att.State == records.AttemptLaunched || att.State == records.AttemptRunning || att.State == records.AttemptFinishing):
		// An AM whose pod is gone has exited: a retry, or the end of an
		// unregistered (FINISHING) attempt — once the API server confirms
		// what the cache says (a pod created an instant ago may not be in
		// it yet).
		if gone, err := podsync.Gone(ctx, l.opts.APIReader, l.opts.Namespace, container); err != nil || !gone {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, l.mgr.AMExited(ctx, id, records.ExitAborted, "Diagnostics: the AM container's pod was deleted")
	}
	return reconcile.Result{}, nil
}

// withPod reconciles an attempt whose AM pod exists.
func (l *Launcher) withPod(ctx context.Context, snap *state.Snapshot, id records.AttemptID, app *records.Application,
	att *records.Attempt, pod *corev1.Pod) (reconcile.Result, error) {
	// The AM container's NodeId, once its pod is bound.
	node := ""
	if pod.Spec.NodeName != "" {
		node = fmt.Sprintf("%s:%d", pod.Spec.NodeName, l.opts.NMPort)
	}
	// The RM ends an AM container on a node it loses itself
	// (rm.Manager.PutNodes): its pod only has to go.
	lost := node != "" && podsync.NodeLost(snap, node)
	if app == nil || app.State.Terminal() {
		// Finished, killed or forgotten: nothing of it may keep running.
		return reconcile.Result{}, podsync.Delete(ctx, l.client, pod, lost)
	}
	cid := records.ContainerID{Attempt: id, ID: 1}
	if att == nil || id.ID != app.CurrentAttempt {
		// The AM of an attempt that failed (it timed out, or its
		// container was lost and a retry began): stopped, as YARN stops
		// a failed attempt's AM container.
		return reconcile.Result{}, podsync.Delete(ctx, l.client, pod, lost)
	}
	if node != "" {
		if c := snap.Container(cid); c == nil || c.Node != node {
			err := l.mgr.AMContainerPlaced(ctx, cid, node, fmt.Sprintf("%s:%d", pod.Spec.NodeName, l.opts.NMHTTPPort), app.AMResource)
			if err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if lost {
		// Placed on its node after the RM lost the node — the RM was not
		// running then —, so the loss did not end it: it ends as the
		// loss ends an AM container.
		if _, err := l.mgr.CompleteContainer(ctx, cid, records.ExitAborted, rm.LostContainerDiagnostics); err != nil {
			return reconcile.Result{}, err
		}
		if err := l.mgr.AMExited(ctx, id, records.ExitAborted, "Diagnostics: "+rm.LostContainerDiagnostics); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, podsync.Delete(ctx, l.client, pod, lost)
	}
	var result reconcile.Result
	if att.State == records.AttemptFinishing {
		// Unregistered but still running: stopped after a grace, as YARN
		// does.
		left := time.UnixMilli(att.FinishTime).Add(finishingGrace).Sub(l.opts.Now())
		if left < 0 {
			return reconcile.Result{}, podsync.Delete(ctx, l.client, pod, lost)
		}
		result.RequeueAfter = left + time.Millisecond
	}
	if code, diag, st := translator.PodOutcome(pod); st == records.ContainerComplete {
		// An AM that exits without unregistering has failed, even with
		// exit code 0.
		if err := l.mgr.AMExited(ctx, id, code, "Diagnostics: "+diag); err != nil {
			return reconcile.Result{}, err
		}
		// The ended pod has told its story; the next attempt gets its own.
		return reconcile.Result{}, podsync.Delete(ctx, l.client, pod, lost)
	}
	return result, nil
}

func (l *Launcher) launch(ctx context.Context, app *records.Application, attempt records.AttemptID) error {
	sc := &yarnpb.ApplicationSubmissionContextProto{}
	if err := proto.Unmarshal(app.SubmissionContext, sc); err != nil {
		return fmt.Errorf("submission context of %s: %w", app.ID, err)
	}
	clc := sc.GetAmContainerSpec()
	container := records.ContainerID{Attempt: attempt, ID: 1}

	// The AM's credentials: what the client sent, plus its AMRMToken under
	// the scheduler's address, as YARN's RM adds it.
	creds, err := credentials.Parse(clc.GetTokens())
	if err != nil {
		return fmt.Errorf("tokens of %s: %w", app.ID, err)
	}
	amrm, err := l.tokens.Issue(attempt)
	if err != nil {
		return err
	}
	creds.Tokens[l.opts.SchedulerAddr] = credentials.Token{Identifier: amrm.GetIdentifier(), Password: amrm.GetPassword(),
		Kind: amrm.GetKind(), Service: l.opts.SchedulerAddr}
	tokenFile, err := creds.Bytes()
	if err != nil {
		return err
	}

	env := map[string]string{}
	for _, kv := range clc.GetEnvironment() {
		env[kv.GetKey()] = kv.GetValue()
	}
	secret, local, err := translator.LaunchSecret(secretName(container), l.opts.Namespace, map[string]string{
		wellknown.LabelApp: app.ID.String(), wellknown.LabelContainer: container.String(), wellknown.LabelManagedBy: wellknown.ManagedByWeft,
		wellknown.LabelRM: l.opts.ClusterID}, tokenFile, clc)
	if err != nil {
		return fmt.Errorf("launch secret of %s: %w", container, err)
	}
	spec := translator.ContainerSpec{
		App: app.ID.String(), Attempt: attempt.String(), Container: container.String(), User: app.User, Queue: app.Queue,
		Tier: records.TierHigh, MemoryMB: app.AMResource.MemoryMB, VCores: app.AMResource.VCores,
		Commands: clc.GetCommand(), Env: env, Runtime: l.opts.Runtime,
		NMPort: l.opts.NMPort, NMHTTPPort: l.opts.NMHTTPPort, AppSubmitTime: app.SubmitTime, MaxAppAttempts: app.MaxAttempts,
		CredentialsSecret: secret.Name, LocalResources: local, RM: l.opts.ClusterID, Namespace: l.opts.Namespace, SchedulerName: l.opts.SchedulerName,
	}
	pod, err := l.opts.Profile.Pod(spec)
	if err != nil {
		return err
	}
	if err := l.client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create credentials of %s: %w", container, err)
	}
	if err := l.client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create AM pod of %s: %w", container, err)
	}
	l.opts.Logger.Info("AM pod created", "attempt", attempt.String(), "pod", pod.Name)
	return l.mgr.AMLaunched(ctx, attempt, container)
}

// finishingGrace is how long an AM may run after unregistering before its
// pod is stopped (clients fetch the job's final state from it meanwhile).
const finishingGrace = time.Minute

// secretName names a container's launch Secret.
func secretName(c records.ContainerID) string { return translator.SecretName(c.String()) }
