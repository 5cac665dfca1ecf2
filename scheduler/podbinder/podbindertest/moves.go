// Package podbindertest helps test doubles of podbinder.Binder, which
// stand in for it at the API server's boundary in other packages' tests.
package podbindertest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Moves answers podbinder.Binder's Moved for a double that keeps its pods
// as a list and changes them in place or by replacing them: it remembers
// how each pod looked when last answered, and reports those that look
// different now. The zero value is ready; a double calls Reset from its
// Pods, as the Binder starts Moved afresh there.
type Moves struct {
	last map[types.UID]look
}

// look is what a cycle reads to tell a pod moved.
type look struct {
	pod           *corev1.Pod
	version, node string
	deleting      bool
}

func lookOf(p *corev1.Pod) look {
	return look{pod: p, version: p.ResourceVersion, node: p.Spec.NodeName, deleting: p.DeletionTimestamp != nil}
}

// Reset remembers shown, every pod as Pods returned it.
func (m *Moves) Reset(shown []*corev1.Pod) {
	m.last = make(map[types.UID]look, len(shown))
	for _, p := range shown {
		m.last[p.UID] = lookOf(p)
	}
}

// Moved returns, of shown (every pod as Pods would return it now), those
// that look different from the last answer or that also names, and the
// uids of the pods answered before that shown no longer holds; then
// remembers shown.
func (m *Moves) Moved(shown []*corev1.Pod, also []types.UID) (pods []*corev1.Pod, gone []types.UID) {
	asked := map[types.UID]bool{}
	for _, uid := range also {
		asked[uid] = true
	}
	now := make(map[types.UID]look, len(shown))
	for _, p := range shown {
		now[p.UID] = lookOf(p)
		if was, ok := m.last[p.UID]; !ok || was != now[p.UID] || asked[p.UID] {
			pods = append(pods, p)
		}
	}
	for uid := range m.last {
		if _, ok := now[uid]; !ok {
			gone = append(gone, uid)
		}
	}
	for uid := range asked {
		if _, ok := now[uid]; !ok && m.last[uid].pod == nil {
			gone = append(gone, uid)
		}
	}
	m.last = now
	return pods, gone
}
