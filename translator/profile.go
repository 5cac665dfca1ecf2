// Package translator turns YARN containers — an AM's submission context or
// a container an AM launches — into Kubernetes pods of the reclaimed
// colocation class, in priority tiers below every online workload.
//
// Resource names and QoS markers differ between colocation systems, so
// they come from a Profile: Weft's own node agent (weft.io/reclaimed-*
// extended resources, the big box), Katalyst (reclaimed_* resources from
// CNR, qos_level annotation), Koordinator and Volcano
// (kubernetes.io/batch-* extended resources), or plain cpu/memory
// requests.
package translator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator/wellknown"
)

// Profile says how reclaimed resources and QoS are spelled for the
// colocation system the cluster runs.
type Profile struct {
	Name string
	// CPU and Memory are the resource names requested. CPUMilli tells
	// whether CPU is counted in millicores (an integer extended resource)
	// rather than as a cpu quantity.
	CPU, Memory corev1.ResourceName
	CPUMilli    bool
	// MilliCPUPerVCore is how much CPU one YARN vcore is (default 1000).
	// YARN itself decouples the two (yarn.nodemanager.resource.cpu-vcores
	// defaults to 8 whatever the cores); reclaimed CPU is shared, so a
	// vcore smaller than a core is common where batch packs densely.
	MilliCPUPerVCore int64
	// StrictCPU caps each container at its vcores (a CPU limit), as
	// YARN's …cgroups.strict-resource-usage=true does. By default, as in
	// YARN, vcores are a share (the CPU request) and a container may use
	// CPU the node leaves idle; what all reclaimed pods of a node may use
	// together is the node's big box. Extended CPU resources (Katalyst,
	// Koordinator) always carry a limit equal to the request, as
	// Kubernetes requires, and their node agents enforce the cgroups.
	StrictCPU bool
	// CapacityFromCNR reads each node's reclaimable capacity from
	// Katalyst's CustomNodeResource of the same name
	// (status.resources.allocatable), where Katalyst's node agent reports
	// it, instead of from the Node's allocatable.
	CapacityFromCNR bool
	// CapacityHeartbeat, when set, is the Node annotation in which the
	// node agent that publishes the capacity writes when it last measured
	// (RFC 3339). A capacity whose heartbeat is missing or stale is read
	// as none: a dead agent's last number must not stay on offer.
	CapacityHeartbeat string
	// Labels and Annotations mark every pod's QoS class.
	Labels, Annotations map[string]string
	// Priorities are the PriorityClass values of the tiers. They sit below
	// online workloads: negative where online pods default to 0, inside
	// the batch band where the colocation system defines one.
	Priorities map[records.Tier]int32
}

// Built-in profiles.
var (
	// Katalyst reads reclaimed capacity from CNR and reclaimed_cores QoS
	// from the pod annotation.
	Katalyst = Profile{
		Name: "katalyst", CPU: "resource.katalyst.kubewharf.io/reclaimed_millicpu", CPUMilli: true,
		Memory: "resource.katalyst.kubewharf.io/reclaimed_memory", CapacityFromCNR: true,
		Annotations: map[string]string{"katalyst.kubewharf.io/qos_level": "reclaimed_cores"},
		Priorities:  map[records.Tier]int32{records.TierHigh: -1000, records.TierMedium: -2000, records.TierLow: -3000},
	}
	// Koordinator (and Volcano, which publishes the same names) exposes
	// batch capacity as kubernetes.io/batch-* in Node allocatable; its
	// koord-batch band is 5000-5999, below koord-mid and koord-prod.
	Koordinator = Profile{
		Name: "koordinator", CPU: "kubernetes.io/batch-cpu", CPUMilli: true, Memory: "kubernetes.io/batch-memory",
		Labels:     map[string]string{"koordinator.sh/qosClass": "BE"},
		Priorities: map[records.Tier]int32{records.TierHigh: 5900, records.TierMedium: 5500, records.TierLow: 5100},
	}
	// Weft is Weft's own colocation agent (weft-nodeplugin --colocation):
	// it publishes what online services leave unused as the extended
	// resources weft.io/reclaimed-cpu (millicores) and
	// weft.io/reclaimed-memory (bytes) in Node allocatable, so kubelet
	// admits batch pods by them. A pod requesting only extended resources
	// is BestEffort: kubelet puts every one under kubepods/besteffort,
	// the big box whose limits the agent keeps at the reclaimable amount.
	Weft = Profile{
		Name: "weft", CPU: wellknown.ReclaimedCPU, CPUMilli: true, Memory: wellknown.ReclaimedMemory,
		CapacityHeartbeat: wellknown.AnnotationReclaimedAt,
		Priorities:        map[records.Tier]int32{records.TierHigh: -1000, records.TierMedium: -2000, records.TierLow: -3000},
	}
	// Plain requests cpu and memory, for clusters without a colocation
	// agent (and for tests).
	Plain = Profile{
		Name: "plain", CPU: corev1.ResourceCPU, Memory: corev1.ResourceMemory,
		Priorities: map[records.Tier]int32{records.TierHigh: -1000, records.TierMedium: -2000, records.TierLow: -3000},
	}
)

// ProfileByName returns a built-in profile.
func ProfileByName(name string) (Profile, error) {
	for _, p := range []Profile{Weft, Katalyst, Koordinator, Plain} {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("translator: unknown profile %q (weft, katalyst, koordinator, plain)", name)
}

// PriorityClassName names a tier's PriorityClass.
func PriorityClassName(t records.Tier) string { return "weft-" + t.String() }

// VCoreMilli is the CPU of one vcore in millicores.
func (p Profile) VCoreMilli() int64 {
	if p.MilliCPUPerVCore > 0 {
		return p.MilliCPUPerVCore
	}
	return 1000
}

// Amounts reads memory (bytes) and CPU (millicores) from a resource list
// in this profile's names.
func (p Profile) Amounts(l corev1.ResourceList) (bytes, milli int64) {
	if q, ok := l[p.Memory]; ok {
		bytes = q.Value()
	}
	if q, ok := l[p.CPU]; ok {
		milli = q.MilliValue()
		if p.CPUMilli {
			milli = q.Value()
		}
	}
	return bytes, milli
}

// PodAmounts is what a pod requests in this profile's names, as
// kube-scheduler counts it: its containers' sum or its largest init
// container, whichever is more, plus the pod's overhead.
func (p Profile) PodAmounts(pod *corev1.Pod) (bytes, milli int64) {
	for _, c := range pod.Spec.Containers {
		b, m := p.Amounts(c.Resources.Requests)
		bytes, milli = bytes+b, milli+m
	}
	for _, c := range pod.Spec.InitContainers {
		b, m := p.Amounts(c.Resources.Requests)
		bytes, milli = max(bytes, b), max(milli, m)
	}
	b, m := p.Amounts(pod.Spec.Overhead)
	return bytes + b, milli + m
}
