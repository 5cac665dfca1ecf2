package tide

import (
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/translator"
)

// What the controller keeps on a pool's Node: everything a restarted
// controller needs to carry a move on.
const (
	// LabelPool names the TidePool that claims the node.
	LabelPool = "weft.io/tide-pool"
	// LabelState is the node's state in the tide.
	LabelState = translator.TideStateLabel
	// TaintKey is the tide's NoSchedule taint: value TaintTransition in
	// both intermediate states (no new work of either side), TaintOffline
	// while lent (online work stays off; Weft's batch pods tolerate it,
	// translator.BatchTolerations).
	TaintKey        = translator.TideTaintKey
	TaintTransition = "transition"
	TaintOffline    = translator.TideTaintOffline
	// AnnotationSince is when the node entered its state (RFC 3339).
	AnnotationSince = "weft.io/tide-since"
	// AnnotationDeadline is when, on the way back to online work, the
	// batch work still on the node is ended (RFC 3339).
	AnnotationDeadline = translator.TideNoticeDeadline
	// AnnotationHooksDone lists the hooks that answered for the state the
	// node is completing its move to: "Offline:drain-dns,cmdb".
	AnnotationHooksDone = "weft.io/tide-hooks-done"
	// AnnotationHookRetry is when the hooks of the node's move, having
	// failed, are called again, and how many times in a row they failed:
	// "2026-11-24T03:00:00Z,3".
	AnnotationHookRetry = "weft.io/tide-hook-retry"
	// AnnotationNoticedPods is how many batch pods were on the node when
	// its move back to online work gave them notice; AnnotationKilledPods,
	// how many were still there at the deadline. Together: the kill rate.
	AnnotationNoticedPods = "weft.io/tide-noticed-pods"
	AnnotationKilledPods  = "weft.io/tide-killed-pods"
	// AnnotationDeletionCost marks a pod whose pod-deletion-cost the
	// controller set (the value it set), so that it is changed or removed
	// only while it is still the controller's.
	AnnotationDeletionCost = "weft.io/tide-deletion-cost"
)

// StateOf is a node's state in the tide (Online without a label).
func StateOf(n *corev1.Node) v1alpha1.NodeState {
	if s := v1alpha1.NodeState(n.Labels[LabelState]); s != "" {
		return s
	}
	return v1alpha1.StateOnline
}

// since is when the node entered its state.
func since(n *corev1.Node) time.Time {
	t, _ := time.Parse(time.RFC3339, n.Annotations[AnnotationSince])
	return t
}

// setState moves a node to s at now: its label, its taint, its clock.
// The hooks done and the deadline belong to the state left.
func setState(n *corev1.Node, s v1alpha1.NodeState, now time.Time) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Labels[LabelState] = string(s)
	n.Annotations[AnnotationSince] = now.UTC().Format(time.RFC3339)
	delete(n.Annotations, AnnotationHooksDone)
	delete(n.Annotations, AnnotationHookRetry)
	if s != v1alpha1.StateOfflineToOnline {
		delete(n.Annotations, AnnotationDeadline)
		delete(n.Annotations, AnnotationNoticedPods)
		delete(n.Annotations, AnnotationKilledPods)
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != TaintKey {
			taints = append(taints, t)
		}
	}
	switch s {
	case v1alpha1.StateOnlineToOffline, v1alpha1.StateOfflineToOnline:
		taints = append(taints, corev1.Taint{Key: TaintKey, Value: TaintTransition, Effect: corev1.TaintEffectNoSchedule})
	case v1alpha1.StateOffline:
		taints = append(taints, corev1.Taint{Key: TaintKey, Value: TaintOffline, Effect: corev1.TaintEffectNoSchedule})
	}
	n.Spec.Taints = taints
}

// hooksDone are the hooks that answered for the move to s.
func hooksDone(n *corev1.Node, s v1alpha1.NodeState) map[string]bool {
	state, names, ok := strings.Cut(n.Annotations[AnnotationHooksDone], ":")
	done := map[string]bool{}
	if !ok || v1alpha1.NodeState(state) != s {
		return done
	}
	for _, name := range strings.Split(names, ",") {
		if name != "" {
			done[name] = true
		}
	}
	return done
}

func markHookDone(n *corev1.Node, s v1alpha1.NodeState, name string) {
	done := hooksDone(n, s)
	done[name] = true
	var names []string
	for k := range done {
		names = append(names, k)
	}
	slices.Sort(names)
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[AnnotationHooksDone] = string(s) + ":" + strings.Join(names, ",")
}

// annotationInt is a node's integer annotation (0 if absent or not one).
func annotationInt(n *corev1.Node, key string) int {
	v, _ := strconv.Atoi(n.Annotations[key])
	return v
}

// hookRetry is when a node's failed hooks are called again and how many
// times in a row they failed (zero time: now).
func hookRetry(n *corev1.Node) (time.Time, int) {
	at, count, _ := strings.Cut(n.Annotations[AnnotationHookRetry], ",")
	t, _ := time.Parse(time.RFC3339, at)
	c, _ := strconv.Atoi(count)
	return t, c
}

// hookBackoff is how long after its failures-th failure in a row a
// node's hooks wait: 5 s, doubling, at most 5 minutes.
func hookBackoff(failures int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}
