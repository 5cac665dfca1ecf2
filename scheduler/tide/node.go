package tide

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/translator/wellknown"
)

// StateOf is a node's state in the tide (Online without a label). A
// label that holds no state is returned as it is: such a node is neither
// counted nor moved (no state moves to or from it).
func StateOf(n *corev1.Node) v1alpha1.NodeState {
	if s := v1alpha1.NodeState(n.Labels[wellknown.LabelTideState]); s != "" {
		return s
	}
	return v1alpha1.StateOnline
}

// since is when the node entered its state.
func since(n *corev1.Node) time.Time {
	t, _ := wellknown.ParseTime(n.Annotations[wellknown.AnnotationTideSince])
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
	n.Labels[wellknown.LabelTideState] = string(s)
	n.Annotations[wellknown.AnnotationTideSince] = wellknown.FormatTime(now)
	delete(n.Annotations, wellknown.AnnotationTideHooksDone)
	delete(n.Annotations, wellknown.AnnotationTideHookRetry)
	if s != v1alpha1.StateOfflineToOnline {
		delete(n.Annotations, wellknown.AnnotationTideNoticeDeadline)
		delete(n.Annotations, wellknown.AnnotationTideNoticedPods)
		delete(n.Annotations, wellknown.AnnotationTideKilledPods)
	}
	var taints []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != wellknown.TaintTide {
			taints = append(taints, t)
		}
	}
	if v := wellknown.TideState(s).Taint(); v != "" {
		taints = append(taints, corev1.Taint{Key: wellknown.TaintTide, Value: v, Effect: corev1.TaintEffectNoSchedule})
	}
	n.Spec.Taints = taints
}

// hooksDone are the hooks that answered for the move to s.
func hooksDone(n *corev1.Node, s v1alpha1.NodeState) map[string]bool {
	h, err := wellknown.ParseHooksDone(n.Annotations[wellknown.AnnotationTideHooksDone])
	done := map[string]bool{}
	if err != nil || v1alpha1.NodeState(h.State) != s {
		return done
	}
	for _, name := range h.Hooks {
		done[name] = true
	}
	return done
}

func markHookDone(n *corev1.Node, s v1alpha1.NodeState, name string) {
	done := hooksDone(n, s)
	done[name] = true
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	h := wellknown.HooksDone{State: wellknown.TideState(s), Hooks: slices.Collect(maps.Keys(done))}
	n.Annotations[wellknown.AnnotationTideHooksDone] = h.String()
}

// annotationCount is a node's count annotation (0 if absent or not one).
func annotationCount(n *corev1.Node, key string) int {
	v, _ := wellknown.ParseCount(n.Annotations[key])
	return v
}

// hookRetry is when a node's failed hooks are called again and how many
// times in a row they failed (zero time: now).
func hookRetry(n *corev1.Node) (time.Time, int) {
	r, _ := wellknown.ParseHookRetry(n.Annotations[wellknown.AnnotationTideHookRetry])
	return r.At, r.Failures
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
