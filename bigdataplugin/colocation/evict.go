package colocation

import (
	"sort"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// BatchPod is a batch pod running on the node, as eviction sees it.
type BatchPod struct {
	Namespace, Name, UID string
	Tier                 records.Tier
	// Started is when the pod started; the newest has lost the least work.
	Started time.Time
	// WorkingSet is the memory its eviction gives back.
	WorkingSet int64
}

// Victims chooses the batch pods to evict to free toFree bytes: lowest
// tier first (elastic workers before a job's minimum, ApplicationMasters
// last), and within a tier the newest first, as the kubelet's and YARN's
// preemption lose the least finished work; then by name, so the choice
// is the same every time. It takes pods until their working sets add up
// to toFree, or all of them.
func Victims(pods []BatchPod, toFree int64) []BatchPod {
	if toFree <= 0 {
		return nil
	}
	order := append([]BatchPod(nil), pods...)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if a.Tier != b.Tier {
			return a.Tier < b.Tier // an unknown tier (0) before low
		}
		if !a.Started.Equal(b.Started) {
			return a.Started.After(b.Started)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var freed int64
	for i, p := range order {
		freed += p.WorkingSet
		if freed >= toFree {
			return order[:i+1]
		}
	}
	return order
}
