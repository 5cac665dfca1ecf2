package allocator

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/weft-sh/weft/translator"
)

// NodeSource gives the Kubernetes node behind an RM node's host
// (nodesync.Syncer): its labels and taints decide which pods may go there.
type NodeSource interface {
	KubeNode(name string) (*corev1.Node, bool)
	// KubeNodesInTideState returns the nodes whose state in the tide
	// (translator.TideStateLabel) is state.
	KubeNodesInTideState(state string) []*corev1.Node
	// PlacementVersion changes after a node is added or removed or its
	// labels or taints change, once KubeNode shows the change.
	PlacementVersion() uint64
}

// constraints evaluates pods' placement constraints — node selector,
// required node affinity, tolerations of NoSchedule and NoExecute taints,
// as kube-scheduler's NodeAffinity and TaintToleration filters do — against
// a set of nodes, once per distinct set of constraints: the pods of one job
// share theirs. The allocator keeps one from cycle to cycle while the
// nodes' members and their PlacementVersion stay (view.constraints): evaluating
// YARN containers' constraints over 10,000 nodes every cycle was a tenth
// of weft-rm's CPU with nothing changing (test/bench/scale).
type constraints struct {
	nodes *nodeSet
	kube  NodeSource
	// version is kube's PlacementVersion read before any node was.
	version uint64
	memo    map[string]map[string]bool
	// containers is what forPod(containerPod) returned, once asked: it is
	// asked once per YARN request derived.
	containers      map[string]bool
	containersAsked bool
}

func newConstraints(nodes *nodeSet, kube NodeSource) *constraints {
	c := &constraints{nodes: nodes, kube: kube, memo: map[string]map[string]bool{}}
	if kube != nil {
		c.version = kube.PlacementVersion()
	}
	return c
}

// forPod returns the RM nodes p may go to, or nil when it may go to all.
func (c *constraints) forPod(p *corev1.Pod) map[string]bool {
	if c == nil || c.kube == nil {
		return nil
	}
	if p == containerPod {
		if !c.containersAsked {
			c.containers, c.containersAsked = c.evaluate(p), true
		}
		return c.containers
	}
	return c.evaluate(p)
}

func (c *constraints) evaluate(p *corev1.Pod) map[string]bool {
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
	for _, n := range c.nodes.list {
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
