// Package amlauncher starts ApplicationMasters on Kubernetes: for each
// accepted application whose attempt waits to be scheduled, it creates
// the AM's credentials Secret and its pod of the reclaimed class (high
// tier), and records the attempt as launched.
package amlauncher

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/credentials"
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
	// ContainerAllocationExpiry is how long a container handed to its AM
	// may go without a pod before it is ended as unused
	// (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms,
	// default 10 minutes), so capacity an AM never used — it died, or a
	// grant was lost with an RM that restarted — returns to the cluster.
	ContainerAllocationExpiry time.Duration
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Launcher launches AM pods.
type Launcher struct {
	mgr    *rm.Manager
	pods   kubernetes.Interface
	tokens AMTokens
	opts   Options
}

// New returns a launcher.
func New(mgr *rm.Manager, client kubernetes.Interface, tokens AMTokens, opts Options) *Launcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ClusterID == "" {
		opts.ClusterID = "weft"
	}
	if opts.ContainerAllocationExpiry <= 0 {
		opts.ContainerAllocationExpiry = 10 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Launcher{mgr: mgr, pods: client, tokens: tokens, opts: opts}
}

// Reconcile brings Kubernetes and the RM's records together, level-based
// and idempotent: AM pods that ended fail their attempts (a retry is
// scheduled while attempts remain), finished applications lose their pods
// and credentials, and attempts waiting for an AM container get one.
func (l *Launcher) Reconcile(ctx context.Context) error {
	firstErr := l.syncPods(ctx)
	snap := l.mgr.Snapshot()
	for _, app := range snap.Applications(state.ApplicationFilter{States: []records.AppState{records.AppAccepted}}) {
		if app.UnmanagedAM {
			continue // its owner runs the AM
		}
		id := records.AttemptID{App: app.ID, ID: app.CurrentAttempt}
		att := snap.Attempt(id)
		if att == nil || att.State != records.AttemptScheduled {
			continue
		}
		if err := l.launch(ctx, app, id); err != nil {
			l.opts.Logger.Warn("AM launch failed", "attempt", id.String(), "err", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
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
		translator.LabelApp: app.ID.String(), translator.LabelContainer: container.String(), translator.LabelManagedBy: "weft",
		translator.LabelRM: l.opts.ClusterID}, tokenFile, clc)
	if err != nil {
		return fmt.Errorf("launch secret of %s: %w", container, err)
	}
	spec := translator.ContainerSpec{
		App: app.ID.String(), Attempt: attempt.String(), Container: container.String(), User: app.User, Queue: app.Queue,
		Tier: translator.TierHigh, MemoryMB: app.AMResource.MemoryMB, VCores: app.AMResource.VCores,
		Commands: clc.GetCommand(), Env: env, Runtime: l.opts.Runtime,
		NMPort: l.opts.NMPort, NMHTTPPort: l.opts.NMHTTPPort, AppSubmitTime: app.SubmitTime, MaxAppAttempts: app.MaxAttempts,
		CredentialsSecret: secret.Name, LocalResources: local, RM: l.opts.ClusterID, Namespace: l.opts.Namespace, SchedulerName: l.opts.SchedulerName,
	}
	pod, err := l.opts.Profile.Pod(spec)
	if err != nil {
		return err
	}
	if _, err := l.pods.CoreV1().Secrets(l.opts.Namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create credentials of %s: %w", container, err)
	}
	if _, err := l.pods.CoreV1().Pods(l.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create AM pod of %s: %w", container, err)
	}
	l.opts.Logger.Info("AM pod created", "attempt", attempt.String(), "pod", pod.Name)
	return l.mgr.AMLaunched(ctx, attempt, container)
}

// syncPods reads Weft's pods back into the records.
func (l *Launcher) syncPods(ctx context.Context) error {
	pods, err := l.pods.CoreV1().Pods(l.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: translator.Selector(l.opts.ClusterID)})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	snap := l.mgr.Snapshot()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	seen := map[records.ContainerID]bool{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		appID, err := records.ParseApplicationID(pod.Labels[translator.LabelApp])
		if err != nil {
			continue
		}
		app := snap.Application(appID)
		if app == nil || app.State.Terminal() {
			// Finished, killed or forgotten: nothing of it may keep running.
			keep(l.delete(ctx, pod))
			continue
		}
		cid, err := records.ParseContainerID(pod.Labels[translator.LabelContainer])
		if err != nil {
			continue
		}
		seen[cid] = true
		if cid.ID != 1 {
			keep(l.syncContainer(ctx, snap, app, cid, pod))
			continue
		}
		attempt := cid.Attempt
		if attempt.ID != app.CurrentAttempt {
			// The AM of an attempt that failed (it timed out, or its
			// container was lost and a retry began): stopped, as YARN
			// stops a failed attempt's AM container.
			keep(l.delete(ctx, pod))
			continue
		}
		if pod.Spec.NodeName != "" {
			node := fmt.Sprintf("%s:%d", pod.Spec.NodeName, l.opts.NMPort)
			if c := snap.Container(cid); c == nil || c.Node != node {
				keep(l.mgr.AMContainerPlaced(ctx, cid, node, fmt.Sprintf("%s:%d", pod.Spec.NodeName, l.opts.NMHTTPPort), app.AMResource))
			}
		}
		if att := snap.Attempt(attempt); att != nil && att.State == records.AttemptFinishing &&
			l.opts.Now().Sub(time.UnixMilli(att.FinishTime)) > finishingGrace {
			// Unregistered but still running: stop it, as YARN does.
			keep(l.delete(ctx, pod))
			continue
		}
		if code, diag, st := translator.PodOutcome(pod); st == records.ContainerComplete {
			// An AM that exits without unregistering has failed, even with
			// exit code 0.
			keep(l.mgr.AMExited(ctx, attempt, code, "Diagnostics: "+diag))
			// The ended pod has told its story; the next attempt gets its own.
			keep(l.delete(ctx, pod))
		}
	}
	// An AM whose pod is gone has exited: a retry, or the end of an
	// unregistered (FINISHING) attempt.
	for _, app := range snap.Applications(state.ApplicationFilter{States: []records.AppState{records.AppAccepted, records.AppRunning}}) {
		if app.UnmanagedAM || app.CurrentAttempt == 0 {
			continue
		}
		id := records.AttemptID{App: app.ID, ID: app.CurrentAttempt}
		att := snap.Attempt(id)
		if att == nil || (att.State != records.AttemptLaunched && att.State != records.AttemptRunning && att.State != records.AttemptFinishing) {
			continue
		}
		if !seen[records.ContainerID{Attempt: id, ID: 1}] {
			keep(l.mgr.AMExited(ctx, id, records.ExitAborted, "Diagnostics: the AM container's pod was deleted"))
		}
	}
	// A running container whose pod is gone was lost with it (evicted,
	// deleted, its node gone). One its AM was given but never started
	// expires, as YARN's ContainerAllocationExpirer ends it.
	now := l.opts.Now()
	for _, app := range snap.Applications(state.ApplicationFilter{States: []records.AppState{records.AppRunning}}) {
		for _, c := range snap.ContainersOfApp(app.ID) {
			if c.ID.ID == 1 || seen[c.ID] {
				continue
			}
			switch {
			case c.State == records.ContainerRunning:
				_, err := l.mgr.CompleteContainer(ctx, c.ID, records.ExitAborted, "Container's pod was deleted")
				keep(err)
			case c.State == records.ContainerNew && c.Acquired && now.Sub(time.UnixMilli(c.StartTime)) > l.opts.ContainerAllocationExpiry:
				_, err := l.mgr.CompleteContainer(ctx, c.ID, records.ExitAborted, "Container expired since it was unused")
				keep(err)
			}
		}
	}
	return firstErr
}

// finishingGrace is how long an AM may run after unregistering before its
// pod is stopped (clients fetch the job's final state from it meanwhile).
const finishingGrace = time.Minute

// completedPodRetention is how long the pod of a completed container is
// kept for its logs and status, as a NodeManager keeps a stopped
// container's (yarn.nodemanager.duration-to-track-stopped-containers).
const completedPodRetention = 2 * time.Minute

// syncContainer reads a task container's pod into its record, and removes
// pods whose container the RM has ended (released by the AM, or of an
// attempt that is over).
func (l *Launcher) syncContainer(ctx context.Context, snap *state.Snapshot, app *records.Application, id records.ContainerID, pod *corev1.Pod) error {
	c := snap.Container(id)
	if c == nil {
		return l.delete(ctx, pod) // no grant stands behind it
	}
	code, diag, st := translator.PodOutcome(pod)
	if c.State != records.ContainerComplete && id.Attempt.ID != app.CurrentAttempt && !app.KeepContainers {
		if _, err := l.mgr.CompleteContainer(ctx, id, records.ExitAborted, "Container of a completed attempt"); err != nil {
			return err
		}
		return l.delete(ctx, pod)
	}
	switch {
	case c.State == records.ContainerComplete && st != records.ContainerComplete:
		return l.delete(ctx, pod)
	case c.State == records.ContainerComplete:
		if l.opts.Now().Sub(time.UnixMilli(c.FinishTime)) > completedPodRetention {
			return l.delete(ctx, pod)
		}
	case st == records.ContainerComplete:
		_, err := l.mgr.CompleteContainer(ctx, id, code, diag)
		return err
	case st == records.ContainerRunning && c.State == records.ContainerNew:
		return l.mgr.ContainerRunning(ctx, id)
	}
	return nil
}

// delete removes a pod and its credentials Secret.
func (l *Launcher) delete(ctx context.Context, pod *corev1.Pod) error {
	if err := l.pods.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			err := l.pods.CoreV1().Secrets(pod.Namespace).Delete(ctx, v.Secret.SecretName, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete secret %s: %w", v.Secret.SecretName, err)
			}
		}
	}
	return nil
}

// secretName names a container's launch Secret.
func secretName(c records.ContainerID) string { return translator.SecretName(c.String()) }
