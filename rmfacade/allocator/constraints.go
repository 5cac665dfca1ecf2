package allocator

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// NodeSource gives the Kubernetes node behind an RM node's host
// (nodesync.Syncer): its labels and taints decide which pods may go there.
type NodeSource interface {
	KubeNode(name string) (*corev1.Node, bool)
	// KubeNodesInTideState returns the nodes whose state in the tide
	// (wellknown.LabelTideState) is state.
	KubeNodesInTideState(state wellknown.TideState) []*corev1.Node
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
// YARN containers' constraints over 10,000 nodes every cycle would be a
// tenth of weft-rm's CPU with nothing changing (test/bench/scale).
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
	key, err := constraintKey(p)
	if err != nil {
		return nil
	}
	if allowed, ok := c.memo[key]; ok {
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
	c.memo[key] = allowed
	return allowed
}

// containerPod stands for the pods of YARN containers: no selector, the
// tolerations translator.Profile gives every pod (nodes lent whole by the
// tidal controller).
var containerPod = &corev1.Pod{Spec: corev1.PodSpec{Tolerations: translator.BatchTolerations}}

// constraintKey is what evaluate remembers a pod's constraints by: its
// node selector, its node affinity and its tolerations. It is written out
// by hand, the affinity alone (rare) as JSON: json.Marshal of all three for
// each pod would be a seventh of the first cycle over 5,000 pending pods
// (BenchmarkFirstCycleOfPods), which every binding round waits for. Label
// keys and values, and so a toleration's, hold no NUL byte.
func constraintKey(p *corev1.Pod) (string, error) {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p.Spec.NodeSelector)) {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(p.Spec.NodeSelector[k])
		b.WriteByte(0)
	}
	b.WriteByte(1)
	for _, t := range p.Spec.Tolerations {
		for _, f := range []string{t.Key, string(t.Operator), t.Value, string(t.Effect)} {
			b.WriteString(f)
			b.WriteByte(0)
		}
		if t.TolerationSeconds != nil {
			b.WriteString(strconv.FormatInt(*t.TolerationSeconds, 10))
		}
		b.WriteByte(0)
	}
	b.WriteByte(1)
	if a := nodeAffinity(p); a != nil {
		j, err := json.Marshal(a)
		if err != nil {
			return "", err
		}
		b.Write(j)
	}
	return b.String(), nil
}

func nodeAffinity(p *corev1.Pod) *corev1.NodeAffinity {
	if p.Spec.Affinity == nil {
		return nil
	}
	return p.Spec.Affinity.NodeAffinity
}
