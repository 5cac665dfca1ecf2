// Package crd maps the Queue custom resource (quota/api/v1alpha1) onto
// quota's two views of a queue tree: YARN's, which clients read as
// CapacityScheduler queues (percent capacities, ACLs, states), and the
// scheduler's absolute quotas, with the time window in effect. It is the
// only part of quota that knows Kubernetes types, so the scheduler, which
// imports quota's arithmetic, links none of them.
package crd

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
)

// ConfigsFromQueues maps Queue objects onto YARN's view of a queue tree,
// which clients read as CapacityScheduler queues. The top queue is "root"
// whatever its object is named, as YARN paths require. A queue's capacity
// is its CPU guarantee as a share of its parent's, or of its siblings'
// when the parent has none, or its weight's share when no sibling has a
// guarantee; its maximum capacity likewise from CPU maxima.
func ConfigsFromQueues(queues []v1alpha1.Queue) ([]quota.QueueConfig, error) {
	var out []quota.QueueConfig
	err := walkQueues(queues, func(q *v1alpha1.Queue, path string, capacity, maxCapacity float32) {
		out = append(out, quota.QueueConfig{Path: path, Capacity: capacity, MaxCapacity: maxCapacity, State: yarnState(q.Spec.State),
			SubmitACL: q.Spec.SubmitACL, AdminACL: q.Spec.AdminACL, UserLimitPercent: ptrOr(q.Spec.UserLimitPercent)})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// walkQueues checks that Queue objects form one tree and visits it from
// the root, parents before children and siblings by name, with each
// queue's YARN path and its capacity and maximum capacity as percentages
// of its parent's (see ConfigsFromQueues).
func walkQueues(queues []v1alpha1.Queue, visit func(q *v1alpha1.Queue, path string, capacity, maxCapacity float32)) error {
	byName := map[string]*v1alpha1.Queue{}
	children := map[string][]*v1alpha1.Queue{}
	var root *v1alpha1.Queue
	for i := range queues {
		q := &queues[i]
		byName[q.Name] = q
		if q.Spec.Parent == "" {
			if root != nil {
				return fmt.Errorf("quota: queues %q and %q both have no parent", root.Name, q.Name)
			}
			root = q
			continue
		}
		children[q.Spec.Parent] = append(children[q.Spec.Parent], q)
	}
	if root == nil {
		return fmt.Errorf("quota: no root queue (one without a parent)")
	}
	for name := range children {
		if byName[name] == nil {
			return fmt.Errorf("quota: queue %q names a parent that does not exist", children[name][0].Name)
		}
	}
	visited := 0
	var walk func(q *v1alpha1.Queue, path string, capacity, maxCapacity float32)
	walk = func(q *v1alpha1.Queue, path string, capacity, maxCapacity float32) {
		visit(q, path, capacity, maxCapacity)
		visited++
		kids := children[q.Name]
		slices.SortFunc(kids, func(a, b *v1alpha1.Queue) int { return cmp.Compare(a.Name, b.Name) })
		var guaranteed, weights float64
		for _, k := range kids {
			guaranteed += milliCPU(k.Spec.Guaranteed)
			weights += float64(max(k.Spec.Weight, 0))
		}
		parentGuaranteed, parentMax := milliCPU(q.Spec.Guaranteed), milliCPU(q.Spec.Max)
		for _, k := range kids {
			var c float64
			switch {
			case parentGuaranteed > 0:
				c = milliCPU(k.Spec.Guaranteed) / parentGuaranteed
			case guaranteed > 0:
				c = milliCPU(k.Spec.Guaranteed) / guaranteed
			case weights > 0:
				c = float64(max(k.Spec.Weight, 0)) / weights
			default:
				c = 1 / float64(len(kids))
			}
			m := 1.0
			if km := milliCPU(k.Spec.Max); km > 0 && parentMax > 0 {
				m = min(km/parentMax, 1)
			}
			walk(k, path+"."+k.Name, float32(min(c, 1)*100), float32(m*100))
		}
	}
	walk(root, "root", 100, 100)
	if visited != len(queues) {
		return fmt.Errorf("quota: %d of %d queues are not under the root (a parent cycle?)", len(queues)-visited, len(queues))
	}
	return nil
}

// milliCPU is a resource list's CPU in millicores (0 when absent).
func milliCPU(l corev1.ResourceList) float64 {
	q, ok := l[corev1.ResourceCPU]
	if !ok {
		return 0
	}
	return float64(q.MilliValue())
}

func yarnState(s string) string {
	if s == "Stopped" {
		return "STOPPED"
	}
	return "RUNNING"
}

// QuotasFromCRDs maps Queue objects onto the scheduler's quotas at now:
// each queue's guarantee and maximum in absolute quantities, those of the
// time window in effect (Effective), with its weight. milliCPUPerVCore
// converts Kubernetes CPU to the scheduler's CPU unit (a YARN vcore is
// 1000 of it; 0 means 1000). Paths are ConfigsFromQueues's.
func QuotasFromCRDs(queues []v1alpha1.Queue, now time.Time, milliCPUPerVCore int64) ([]quota.QueueQuota, error) {
	if milliCPUPerVCore <= 0 {
		milliCPUPerVCore = 1000
	}
	var out []quota.QueueQuota
	err := walkQueues(queues, func(q *v1alpha1.Queue, path string, _, _ float32) {
		guaranteed, maximum, _ := Effective(q.Spec, now)
		qq := quota.QueueQuota{Path: path, Guaranteed: fromResourceList(guaranteed, milliCPUPerVCore), Weight: float64(max(q.Spec.Weight, 0))}
		qq.UserLimitPercent = ptrOr(q.Spec.UserLimitPercent)
		if len(maximum) > 0 {
			m := fromResourceList(maximum, milliCPUPerVCore)
			qq.Max = &m
		}
		out = append(out, qq)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fromResourceList converts Kubernetes quantities: CPU to the scheduler's
// unit (1000 a vcore), memory in bytes, other resources by value.
func fromResourceList(l corev1.ResourceList, milliCPUPerVCore int64) quota.Resource {
	var r quota.Resource
	for name, q := range l {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue() * 1000 / milliCPUPerVCore
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		default:
			r.SetInPlace(string(name), q.Value())
		}
	}
	return r
}

// ptrOr is *p, or zero for nil.
func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
