package main

import (
	"strings"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

// killCause names why the RM ended a container that was running a task,
// from the completed status its AM reads, as the simulation names its
// kills (sim's Kill constants).
//
// PREEMPTED (-102, "Container preempted by scheduler") is what
// rmfacade/allocator's killDuePreemptions writes for both the tidal
// controller's notice (tideNotices) and a queue's reclaim: the status
// alone cannot tell them apart, so the container's node tells: one
// being taken back from batch work (tidal, its tide state at the notice
// or at the kill OfflineToOnline or already Online) was a tide's kill,
// any other a queue's preemption. At the same deadline weft-tide evicts the batch
// pods still on the node (scheduler/tide drive), racing the RM: a pod
// deleted under its container on a tidal node (podsync: "Container's pod
// was deleted", ABORTED) is the tide's kill too. The colocation agent's memory eviction
// (bigdataplugin/colocation) marks the pod with its "evicted by the
// colocation agent" message before it kills it; podsync reports the
// pod's outcome with it. A pod gone under its container (podsync:
// "Container's pod was deleted", ABORTED) elsewhere is KillPodLost; one the
// kubelet refused at admission (podsync reports its reason, "OutOf<resource>
// Pod was rejected: …", as PREEMPTED) KillRejected; another
// ABORTED (expired unused, of a completed attempt, dropped at an RM
// restart) KillAborted.
func killCause(exit int32, diag string, tidal bool) string {
	switch {
	case strings.Contains(diag, "evicted by the colocation agent"):
		return sim.KillEviction
	case strings.Contains(diag, "Pod was rejected"):
		return sim.KillRejected
	case exit == records.ExitPreempted && tidal:
		return sim.KillTide
	case exit == records.ExitPreempted:
		return sim.KillPreemption
	case exit == records.ExitAborted && strings.Contains(diag, "pod was deleted") && tidal:
		return sim.KillTide
	case exit == records.ExitAborted && strings.Contains(diag, "pod was deleted"):
		return sim.KillPodLost
	case exit == records.ExitAborted:
		return sim.KillAborted
	}
	return sim.KillOther
}

// tidal reports whether a node in state s is being (or has been) taken
// back from batch work by the tidal controller.
func tidal(s v1alpha1.NodeState) bool {
	return s == v1alpha1.StateOfflineToOnline || s == v1alpha1.StateOnline
}
