package colocation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// Reasons of the Events and the DisruptionTarget condition the agent
// writes.
const (
	ReasonEvicted       = "EvictionByWeftColocation"
	ReasonBlind         = "ColocationBlind"
	ReasonConfigInvalid = "ColocationConfigInvalid"
	ReasonCgroupWrite   = "ColocationCgroupWriteFailed"
	ReasonRecovered     = "ColocationRecovered"
)

// Options configures an Agent.
type Options struct {
	// NodeName is the node the agent runs on.
	NodeName string
	// ConfigNamespace and ConfigName name the ConfigMap whose ConfigKey
	// overrides Defaults; absent, Defaults hold.
	ConfigNamespace, ConfigName string
	// Defaults is the configuration from flags (DefaultConfig()).
	Defaults Config
	// Profile names the reclaimed resources batch pods request and the
	// agent publishes (translator.Weft).
	Profile translator.Profile
	// FS is the node's cgroup hierarchy; ProcRoot is /proc. Without FS
	// (the hierarchy could not be opened: an unexpected cgroup version or
	// layout, said in Unusable) the agent runs blind: it offers nothing
	// and says why, while the node plugin serves on. With
	// Defaults.NodeCgroup the agent uses FS, and Box's, for that node
	// (cgroups.FS.ForNode): it measures the node's cgroup and bounds the
	// box under it.
	FS       *cgroups.FS
	Unusable error
	ProcRoot string
	// Box is the big box (FS and the CPU topology).
	Box *Box
	// NumCPU is the machine's online CPUs.
	NumCPU int
	// HeartbeatInterval is how often the agent tells that its published
	// numbers are current (wellknown.AnnotationReclaimedAt; default 20s),
	// well within weft-rm's --capacity-stale-after.
	HeartbeatInterval time.Duration
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Metrics receives the agent's metrics; nil keeps them unregistered.
	Metrics *Metrics
}

// Agent is the colocation agent of one node: a reconciler of its Node,
// requeued every Config.Interval, that measures online usage, computes the
// reclaimable capacity, bounds the big box to it, publishes it on the
// Node, and evicts batch work when memory must come back.
type Agent struct {
	client client.Client
	events record.EventRecorder
	opts   Options
	meter  *Meter
	peaks  Peaks
	hyst   Hysteresis
	// lastHeartbeat is when the heartbeat annotation was last written.
	lastHeartbeat time.Time
	// problem is the reason of the last problem told in an Event, so each
	// is told once, not every second.
	problem string
	// evicted are the batch pods killed recently, by UID: their memory is
	// on its way back and must not make more pods go.
	evicted map[string]eviction
	// loweringSince is when the number to publish fell below what the
	// Node's allocatable shows (zero: it has not): the allocatable
	// follows Config.LowerAfter later.
	loweringSince time.Time
}

// eviction is a batch pod the agent killed: when, and the working set it
// held then.
type eviction struct {
	at         time.Time
	workingSet int64
}

// settle is how long the memory of an evicted pod counts as freed though
// the node does not show it yet: its processes die and the kernel gives
// their pages back over the next moments, not at the kill.
const settle = 10 * time.Second

// NewAgent returns an agent that reads and writes through c and tells
// Events through events.
func NewAgent(c client.Client, events record.EventRecorder, opts Options) *Agent {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 20 * time.Second
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if root := opts.Defaults.NodeCgroup; root != "" && opts.FS != nil {
		fsys, err := opts.FS.ForNode(root)
		if err != nil {
			opts.FS, opts.Unusable = nil, err
		} else {
			opts.FS = fsys
			if opts.Box != nil {
				box := *opts.Box
				box.FS = fsys
				opts.Box = &box
			}
		}
	}
	return &Agent{client: c, events: events, opts: opts, evicted: map[string]eviction{},
		meter: &Meter{FS: opts.FS, ProcRoot: opts.ProcRoot, NumCPU: opts.NumCPU}}
}

// SetupWithManager runs the agent under mgr: its Node, and the ConfigMap,
// start a reconcile; every reconcile requeues itself after the interval.
func (a *Agent) SetupWithManager(mgr manager.Manager) error {
	nodeRequest := []reconcile.Request{{NamespacedName: types.NamespacedName{Name: a.opts.NodeName}}}
	return builder.ControllerManagedBy(mgr).Named("colocation").
		// The Node's own updates (the kubelet's status, the agent's
		// patches) need no reconcile of their own: the next one a second
		// later reads them.
		For(&corev1.Node{}, builder.WithPredicates(
			predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == a.opts.NodeName }),
			predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if o.GetNamespace() == a.opts.ConfigNamespace && o.GetName() == a.opts.ConfigName {
				return nodeRequest
			}
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(a)
}

var _ reconcile.Reconciler = (*Agent)(nil)

// batchPod is a batch pod of the node with what the agent needs of it.
type batchPod struct {
	pod       *corev1.Pod
	path      string
	requested Amount
}

// Reconcile measures, decides, enforces and publishes once. Problems are
// told in Events and metrics, never returned: an error would requeue with
// backoff and leave the box unwatched.
func (a *Agent) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := a.opts.Now()
	interval := a.opts.Defaults.Interval.Duration
	var node corev1.Node
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.opts.NodeName}, &node); err != nil {
		a.opts.Logger.Error("colocation: read own node", "node", a.opts.NodeName, "err", err)
		a.opts.Metrics.Errors.WithLabelValues("node").Inc()
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	if a.opts.FS == nil {
		a.blind(ctx, &node, now, ReasonBlind, fmt.Errorf("cgroups: %w", a.opts.Unusable))
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	cfg, err := a.config(ctx)
	if err != nil {
		a.blind(ctx, &node, now, ReasonConfigInvalid, err)
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	interval = cfg.Interval.Duration
	if s, _ := wellknown.TideStateOf(node.Labels); s == wellknown.TideOffline {
		cfg = cfg.LentWhole()
	}
	batch, err := a.batchPods(ctx)
	if err != nil {
		a.blind(ctx, &node, now, ReasonBlind, err)
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	refs := make([]PodCgroup, len(batch))
	for i, b := range batch {
		refs[i] = PodCgroup{UID: string(b.pod.UID), Path: b.path}
	}
	u, perPod, ok, err := a.meter.Measure(now, refs)
	if err != nil {
		a.blind(ctx, &node, now, ReasonBlind, err)
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	if !ok {
		// Primed: the box stays as the last agent left it.
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	a.peaks.Observe(u, cfg.PeakWindow.Duration)
	// A node that is one of several on the machine shows the machine's
	// allocatable (the kubelet reads the machine); its cgroup's limits
	// bound what it holds.
	alloc := Amount{MilliCPU: node.Status.Allocatable.Cpu().MilliValue(), Memory: node.Status.Allocatable.Memory().Value()}.within(u.Capacity)
	cooldownUntil, _ := wellknown.ParseTime(node.Annotations[wellknown.AnnotationColocationCooldownUntil])
	d := Decide(cfg, now, alloc, &a.peaks, cooldownUntil)

	// held is what the node's batch pods were granted (their requests).
	var held Amount
	for _, b := range batch {
		held.MilliCPU, held.Memory = held.MilliCPU+b.requested.MilliCPU, held.Memory+b.requested.Memory
	}
	a.opts.Box.Idle = cfg.CPUIdle
	limits, err := a.opts.Box.Enforce(d.Box, held.Memory, cfg.CPUSet)
	if err != nil {
		a.blind(ctx, &node, now, ReasonCgroupWrite, err)
		return reconcile.Result{RequeueAfter: interval}, nil
	}
	for _, b := range batch {
		if err := a.opts.Box.ConfinePod(b.path, b.requested); err != nil && !errors.Is(err, fs.ErrNotExist) {
			a.opts.Logger.Warn("colocation: confine batch pod", "pod", b.pod.Namespace+"/"+b.pod.Name, "err", err)
			a.opts.Metrics.Errors.WithLabelValues("pod-cgroup").Inc()
		}
	}
	if n := a.evict(ctx, &node, now, d, batch, perPod); n > 0 {
		cooldownUntil = now.Add(cfg.Cooldown.Duration)
		d.Offer, d.Why = Amount{}, "cooling down after an eviction"
		node.Annotations = setAnnotation(node.Annotations, wellknown.AnnotationColocationCooldownUntil, wellknown.FormatTime(cooldownUntil))
		a.lastHeartbeat = time.Time{} // write the cooldown now
	}
	if a.problem != "" {
		a.events.Eventf(&node, corev1.EventTypeNormal, ReasonRecovered, "colocation agent measures and enforces again (was: %s)", a.problem)
		a.problem = ""
	}
	a.publish(ctx, &node, now, d.Offer, held, alloc, cfg, cooldownUntil, &u)
	a.opts.Metrics.observe(u, d, limits)
	return reconcile.Result{RequeueAfter: interval}, nil
}

// config is the flags' configuration with the ConfigMap's over it.
func (a *Agent) config(ctx context.Context) (Config, error) {
	cfg := a.opts.Defaults
	if a.opts.ConfigName == "" {
		return cfg, cfg.Validate()
	}
	var cm corev1.ConfigMap
	err := a.client.Get(ctx, types.NamespacedName{Namespace: a.opts.ConfigNamespace, Name: a.opts.ConfigName}, &cm)
	switch {
	case apierrors.IsNotFound(err):
		return cfg, cfg.Validate()
	case err != nil:
		return cfg, fmt.Errorf("read ConfigMap %s/%s: %w", a.opts.ConfigNamespace, a.opts.ConfigName, err)
	}
	cfg, err = cfg.Merge(cm.Data[ConfigKey])
	if err != nil {
		return cfg, fmt.Errorf("ConfigMap %s/%s: %w", a.opts.ConfigNamespace, a.opts.ConfigName, err)
	}
	return cfg, nil
}

// batchPods are the node's pods that request the profile's reclaimed
// resources and have not ended, with their cgroups in the box.
func (a *Agent) batchPods(ctx context.Context) ([]batchPod, error) {
	var pods corev1.PodList
	// The manager's cache holds only this node's pods.
	if err := a.client.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("list the node's pods: %w", err)
	}
	var out []batchPod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != a.opts.NodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.UID == "" {
			continue
		}
		mem, milli := a.opts.Profile.PodAmounts(p)
		if mem == 0 && milli == 0 {
			continue // online
		}
		out = append(out, batchPod{pod: p, path: a.opts.FS.PodPath(corev1.PodQOSBestEffort, string(p.UID)), requested: Amount{MilliCPU: milli, Memory: mem}})
	}
	return out, nil
}

// evict ends batch pods until d.EvictMemory is freed, lowest tier and
// newest first. Each gets a DisruptionTarget condition saying why — the
// RM reports the container PREEMPTED with it — then its processes are
// killed. What pods killed within the settle time held still counts as
// being freed, so one pressure does not take more pods than it needs; a
// pod killed within the last minute is not chosen again.
func (a *Agent) evict(ctx context.Context, node *corev1.Node, now time.Time, d Decision, batch []batchPod, perPod map[string]Amount) int {
	toFree := d.EvictMemory
	for uid, e := range a.evicted {
		if now.Sub(e.at) > time.Minute {
			delete(a.evicted, uid)
		} else if now.Sub(e.at) <= settle {
			toFree -= e.workingSet
		}
	}
	var candidates []BatchPod
	byUID := map[string]batchPod{}
	for _, b := range batch {
		uid := string(b.pod.UID)
		if _, gone := a.evicted[uid]; gone {
			continue
		}
		byUID[uid] = b
		started := b.pod.CreationTimestamp.Time
		if b.pod.Status.StartTime != nil {
			started = b.pod.Status.StartTime.Time
		}
		candidates = append(candidates, BatchPod{Namespace: b.pod.Namespace, Name: b.pod.Name, UID: uid,
			Tier: translator.PodTier(b.pod), Started: started, WorkingSet: perPod[uid].Memory})
	}
	victims := Victims(candidates, toFree)
	for _, v := range victims {
		b := byUID[v.UID]
		msg := fmt.Sprintf("%s; evicted by the colocation agent of node %s (tier %s, working set %d MiB)", d.EvictWhy, a.opts.NodeName, v.Tier, v.WorkingSet>>20)
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonEvicted, Message: msg, LastTransitionTime: metav1.NewTime(now)}}}})
		if err := a.client.Status().Patch(ctx, b.pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			// Online work comes first: the pod goes even if its AM will
			// not learn why.
			a.opts.Logger.Error("colocation: mark evicted pod", "pod", v.Namespace+"/"+v.Name, "err", err)
		}
		if err := a.kill(b); err != nil {
			a.opts.Logger.Error("colocation: kill evicted pod", "pod", v.Namespace+"/"+v.Name, "err", err)
			a.opts.Metrics.Errors.WithLabelValues("evict").Inc()
			continue
		}
		a.evicted[v.UID] = eviction{at: now, workingSet: v.WorkingSet}
		a.opts.Metrics.Evictions.WithLabelValues(d.EvictKind, v.Tier.String()).Inc()
		a.events.Eventf(b.pod, corev1.EventTypeWarning, "Evicted", "%s", msg)
		a.events.Eventf(node, corev1.EventTypeWarning, ReasonEvicted, "evicted %s/%s: %s", v.Namespace, v.Name, msg)
		a.opts.Logger.Info("colocation: evicted batch pod", "pod", v.Namespace+"/"+v.Name, "tier", v.Tier, "workingSet", v.WorkingSet, "why", d.EvictWhy)
	}
	return len(victims)
}

// kill ends a batch pod's running containers. Only the containers: the
// sandbox's pause process lives in the pod's cgroup too, and ending it
// would make the kubelet tear the sandbox down instead of reporting the
// containers' exits. With no running container known, the whole pod's
// cgroup goes.
func (a *Agent) kill(b batchPod) error {
	var paths []string
	for _, cs := range append(append([]corev1.ContainerStatus(nil), b.pod.Status.InitContainerStatuses...), b.pod.Status.ContainerStatuses...) {
		if cs.State.Running == nil {
			continue
		}
		if name, ok := containerCgroup(a.opts.FS.Driver(), cs.ContainerID); ok {
			paths = append(paths, b.path+"/"+name)
		}
	}
	if len(paths) == 0 {
		paths = []string{b.path}
	}
	var errs []error
	for _, p := range paths {
		if err := a.opts.FS.Kill(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// containerCgroup is the name of a container's cgroup inside its pod's,
// as the runtime names it under the kubelet's cgroup driver.
func containerCgroup(d cgroups.Driver, containerID string) (string, bool) {
	runtime, id, ok := strings.Cut(containerID, "://")
	if !ok || id == "" {
		return "", false
	}
	if d != cgroups.Systemd {
		return id, true
	}
	prefix, ok := map[string]string{"containerd": "cri-containerd-", "cri-o": "crio-", "docker": "docker-"}[runtime]
	return prefix + id + ".scope", ok
}

// blind is the fail-safe: the agent cannot measure, read its
// configuration or write the box, so it offers nothing new (running work
// keeps the box it has) and says why, once, in an Event on the Node.
func (a *Agent) blind(ctx context.Context, node *corev1.Node, now time.Time, reason string, err error) {
	a.opts.Logger.Error("colocation: offering no batch capacity", "reason", reason, "err", err)
	a.opts.Metrics.Errors.WithLabelValues(reason).Inc()
	a.opts.Metrics.Blind.Set(1)
	if msg := reason + ": " + err.Error(); msg != a.problem {
		a.events.Eventf(node, corev1.EventTypeWarning, reason, "colocation agent offers no batch capacity: %v", err)
		a.problem = msg
	}
	a.hyst.Reset()
	a.publish(ctx, node, now, Amount{}, Amount{}, Amount{}, a.opts.Defaults, time.Time{}, nil)
}

// publish writes offer into the Node's capacity and allocatable as the
// profile's extended resources, so that the kubelet admits batch pods by
// it and weft-rm schedules by it; and the heartbeat that says the number
// is current, with the measurement u it came from (nil, blind: none).
//
// What it writes is never less than held, what the node's batch pods
// request (Published): the kubelet admits a pod against the number as it
// is when the pod arrives, and one that weft-rm bound by the number
// before a drop would be rejected (OutOf<resource>, its container lost
// to its AM) though it takes nothing new. The drop itself is enforced at
// once by the box; the number only stops new work, which a floor at
// held does as well (no room left), as YARN leaves running containers
// alone when a node's resource is updated below what they hold.
//
// A fall reaches weft-rm first: the allocatable keeps what it shows for
// Config.LowerAfter while wellknown.AnnotationReclaimedLowering carries the new
// number, by which weft-rm stops granting at once; the containers it
// granted before become pods meanwhile, and the allocatable then falls to
// what is offered or they request. Blind (u nil), it falls at once: fail
// safe.
func (a *Agent) publish(ctx context.Context, node *corev1.Node, now time.Time, offer, held, alloc Amount, cfg Config, cooldownUntil time.Time, u *Usage) {
	bytes, milli := a.opts.Profile.Amounts(node.Status.Allocatable)
	shown := Amount{MilliCPU: milli, Memory: bytes}
	_, present := node.Status.Allocatable[a.opts.Profile.CPU]
	value, changed := a.hyst.Next(offer, alloc, cfg.Hysteresis)
	value = Published(value, held)
	write, lowering := value, ""
	if falls := present && (value.MilliCPU < shown.MilliCPU || value.Memory < shown.Memory); !falls || u == nil || cfg.LowerAfter.Duration <= 0 {
		a.loweringSince = time.Time{}
	} else {
		if a.loweringSince.IsZero() {
			a.loweringSince = now
		}
		if now.Sub(a.loweringSince) < cfg.LowerAfter.Duration {
			write = Amount{MilliCPU: max(value.MilliCPU, shown.MilliCPU), Memory: max(value.Memory, shown.Memory)}
			lowering = wellknown.Lowering{MilliCPU: value.MilliCPU, Memory: value.Memory}.String()
		} else {
			a.loweringSince = time.Time{}
		}
	}
	if lowering != "" {
		a.annotate(ctx, node, lowering) // first: weft-rm stops granting
	}
	if changed || write != shown || !present {
		list := map[corev1.ResourceName]resource.Quantity{
			a.opts.Profile.CPU:    *resource.NewQuantity(write.MilliCPU, resource.DecimalSI),
			a.opts.Profile.Memory: *resource.NewQuantity(write.Memory, resource.BinarySI),
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": list, "allocatable": list}})
		if err := a.client.Status().Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
			a.opts.Logger.Error("colocation: publish reclaimable capacity", "err", err)
			a.opts.Metrics.Errors.WithLabelValues("publish").Inc()
			a.hyst.Reset()
			return
		}
		a.lastHeartbeat = time.Time{}
	}
	if lowering == "" {
		a.annotate(ctx, node, "") // after: the allocatable has followed
	}
	a.opts.Metrics.Offered.WithLabelValues("cpu").Set(float64(value.MilliCPU))
	a.opts.Metrics.Offered.WithLabelValues("memory").Set(float64(value.Memory))
	if now.Sub(a.lastHeartbeat) < a.opts.HeartbeatInterval {
		return
	}
	ann := map[string]any{wellknown.AnnotationReclaimedAt: wellknown.FormatTime(now), wellknown.AnnotationNodeUtilization: nil}
	if u != nil {
		ann[wellknown.AnnotationNodeUtilization] = wellknown.NodeUtilization{At: u.At.UTC(),
			NodeMilliCPU: u.Online.MilliCPU + u.Batch.MilliCPU, NodeMemory: u.NodeMemory,
			BatchMilliCPU: u.Batch.MilliCPU, BatchMemory: u.Batch.Memory}.String()
	}
	if !cooldownUntil.IsZero() {
		ann[wellknown.AnnotationColocationCooldownUntil] = wellknown.FormatTime(cooldownUntil)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err := a.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		a.opts.Logger.Error("colocation: heartbeat", "err", err)
		a.opts.Metrics.Errors.WithLabelValues("publish").Inc()
		return
	}
	a.lastHeartbeat = now
}

// annotate sets wellknown.AnnotationReclaimedLowering on node to v, or removes
// it for "", unless it is so already.
func (a *Agent) annotate(ctx context.Context, node *corev1.Node, v string) {
	if node.Annotations[wellknown.AnnotationReclaimedLowering] == v {
		return
	}
	var val any
	if v != "" {
		val = v
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{wellknown.AnnotationReclaimedLowering: val}}})
	if err := a.client.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		a.opts.Logger.Error("colocation: publish a falling reclaimable capacity", "err", err)
		a.opts.Metrics.Errors.WithLabelValues("publish").Inc()
	}
}

func setAnnotation(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
