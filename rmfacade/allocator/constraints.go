package allocator

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator"
)

// NodeSource gives the Kubernetes node behind an RM node's host
// (nodesync.Syncer): its labels and taints decide which pods may go there.
type NodeSource interface {
	KubeNode(name string) (*corev1.Node, bool)
}

// constraints evaluates pods' placement constraints — node selector,
// required node affinity, tolerations of NoSchedule and NoExecute taints,
// as kube-scheduler's NodeAffinity and TaintToleration filters do — against
// the nodes of one cycle, once per distinct set of constraints: the pods of
// one job share theirs.
type constraints struct {
	nodes []*records.Node
	kube  NodeSource
	memo  map[string]map[string]bool
}

func newConstraints(nodes []*records.Node, kube NodeSource) *constraints {
	return &constraints{nodes: nodes, kube: kube, memo: map[string]map[string]bool{}}
}

// forPod returns the RM nodes p may go to, or nil when it may go to all.
func (c *constraints) forPod(p *corev1.Pod) map[string]bool {
	if c == nil || c.kube == nil {
		return nil
	}
	key, err := json.Marshal(struct {
		Selector    map[string]string
		Affinity    *corev1.NodeAffinity
		Tolerations []corev1.Toleration
	}{p.Spec.NodeSelector, nodeAffinity(p), p.Spec.Tolerations})
	if err != nil {
		return nil
	}
	if allowed, ok := c.memo[string(key)]; ok {
		return allowed
	}
	required := nodeaffinity.GetRequiredNodeAffinity(p)
	allowed, all := map[string]bool{}, true
	for _, n := range c.nodes {
		kn, ok := c.kube.KubeNode(n.Host)
		if ok {
			match, err := required.Match(kn)
			_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(kn.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			})
			ok = err == nil && match && !untolerated
		}
		allowed[n.ID] = ok
		all = all && ok
	}
	if all {
		allowed = nil
	}
	c.memo[string(key)] = allowed
	return allowed
}

// containerPod stands for the pods of YARN containers: no selector, the
// tolerations translator.Profile gives every pod (nodes lent whole by the
// tidal controller).
var containerPod = &corev1.Pod{Spec: corev1.PodSpec{Tolerations: translator.BatchTolerations}}

func nodeAffinity(p *corev1.Pod) *corev1.NodeAffinity {
	if p.Spec.Affinity == nil {
		return nil
	}
	return p.Spec.Affinity.NodeAffinity
}
