// Package wellknown is the vocabulary Weft's processes agree through on
// Kubernetes objects and YARN records: the labels, annotations, taints,
// extended resources, Secret type and tags one of weft-rm, weft-tide and
// the node plugin's agent writes and another reads. No import shows such
// an agreement (a word written by one process is read by another, as a
// string), so the words live here, each once, and Words lists who writes
// and who reads each of them; test/layering checks the list against the
// code.
//
// The keys are untyped string constants, so that they index a Kubernetes
// object's map[string]string as they are; the extended resources are
// corev1.ResourceName, as resource lists take them. The values with a
// structure have their parser and formatter here (values.go, tide.go,
// lowering.go, utilization.go), so that writer and reader cannot read
// the format differently.
package wellknown

import corev1 "k8s.io/api/core/v1"

// Labels on every pod Weft makes for a YARN container, so that kubectl
// shows the YARN view (`kubectl get pods -l weft.io/app=application_…
// -L weft.io/tier`), and so that the RM and the node plugin find the pod
// of a container again.
//
// LabelQueue, LabelApp and LabelTier also place a pod that is not a YARN
// container, which its owner hands to Weft's scheduler: its queue (full
// path or leaf name, default root.default), its job (pods with the same
// value form one application and one gang; default the pod alone) and
// its tier (default medium, the pod being its own job's minimum).
const (
	LabelApp       = "weft.io/app"
	LabelAttempt   = "weft.io/attempt"
	LabelContainer = "weft.io/container"
	// LabelTier is the container's tier (records.Tier's name: high,
	// medium, low), which decides who gives way first.
	LabelTier  = "weft.io/tier"
	LabelQueue = "weft.io/queue"
	LabelUser  = "weft.io/user"
	// LabelRM names the ResourceManager (its cluster id) whose application
	// a pod runs: each RM manages only its own pods, so several can share
	// a namespace.
	LabelRM = "weft.io/rm"
	// LabelManagedBy is Kubernetes' recommended label; ManagedByWeft its
	// value on Weft's pods, which the tide recognises as batch work.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByWeft  = "weft"
)

// What the tidal controller (weft-tide) keeps on a pool's Node:
// everything a restarted controller needs to carry a move on, and what
// the RM and the node agent need to know of a lent node.
const (
	// LabelTidePool names the TidePool that claims the node.
	LabelTidePool = "weft.io/tide-pool"
	// LabelTideState is the node's TideState.
	LabelTideState = "weft.io/tide-state"
	// TaintTide is the tide's NoSchedule taint: TaintTideTransition in
	// both intermediate states (no new work of either side), and
	// TaintTideOffline while the node is lent, which every pod Weft makes
	// tolerates (translator.BatchTolerations) and online work does not.
	TaintTide           = "weft.io/tide"
	TaintTideTransition = "transition"
	TaintTideOffline    = "offline"
	// AnnotationTideSince is when the node entered its state.
	AnnotationTideSince = "weft.io/tide-since"
	// AnnotationTideNoticeDeadline is when, on the way back to online
	// work, the batch work still on the node is ended: the RM tells the
	// AMs, the tide evicts what is left then.
	AnnotationTideNoticeDeadline = "weft.io/tide-notice-deadline"
	// AnnotationTideHooksDone lists the hooks that answered for the state
	// the node is completing its move to (HooksDone).
	AnnotationTideHooksDone = "weft.io/tide-hooks-done"
	// AnnotationTideHookRetry is when the hooks of the node's move, having
	// failed, are called again, and how many times in a row they failed
	// (HookRetry).
	AnnotationTideHookRetry = "weft.io/tide-hook-retry"
	// AnnotationTideNoticedPods is how many batch pods were on the node
	// when its move back to online work gave them notice;
	// AnnotationTideKilledPods, how many were still there at the
	// deadline. Together: the kill rate.
	AnnotationTideNoticedPods = "weft.io/tide-noticed-pods"
	AnnotationTideKilledPods  = "weft.io/tide-killed-pods"
	// AnnotationTideDeletionCost marks a pod whose pod-deletion-cost the
	// controller set (the value it set), so that it is changed or removed
	// only while it is still the controller's.
	AnnotationTideDeletionCost = "weft.io/tide-deletion-cost"
)

// What Weft's node agent (the node plugin's colocation agent) publishes
// on its Node.
const (
	// ReclaimedCPU (millicores) and ReclaimedMemory (bytes) are the
	// extended resources in which the agent publishes what online
	// services leave unused, in the Node's allocatable, so that the
	// kubelet admits batch pods by them (translator.Weft).
	ReclaimedCPU    corev1.ResourceName = "weft.io/reclaimed-cpu"
	ReclaimedMemory corev1.ResourceName = "weft.io/reclaimed-memory"
	// AnnotationReclaimedAt is the agent's heartbeat: a capacity whose
	// heartbeat is missing or stale is read as none, since a dead agent's
	// last number must not stay on offer.
	AnnotationReclaimedAt = "weft.io/reclaimed-at"
	// AnnotationReclaimedLowering is set while the reclaimed capacity is
	// falling: the amount the Node's allocatable will show once the
	// containers granted by the old number have become pods (Lowering).
	// The RM schedules by the lower of the two at once; the kubelet
	// admits by the allocatable, which so never falls under a pod granted
	// before the fall. The agent removes it when the allocatable has
	// followed.
	AnnotationReclaimedLowering = "weft.io/reclaimed-lowering"
	// AnnotationNodeUtilization is what the node used at the agent's last
	// measurement (NodeUtilization), written with each heartbeat. It
	// stands in for what a NodeManager sends in every
	// NodeHeartbeatRequest; weft-rm shows it as the node's
	// resourceUtilization in YARN's REST API.
	AnnotationNodeUtilization = "weft.io/node-utilization"
	// AnnotationColocationCooldownUntil is when the node takes new batch
	// work again after an eviction, kept on the Node so that a restarted
	// agent does not offer at once what it just took back.
	AnnotationColocationCooldownUntil = "weft.io/colocation-cooldown-until"
)

// What weft-rm's replicas keep for one another.
const (
	// LabelRMActive marks the pod of the active replica: the Service
	// selects on it (value "true"), so Service clients reach the active
	// alone while every replica stays Ready.
	LabelRMActive = "weft.io/rm-active"
	// LabelRMState names the state store a Secret belongs to;
	// LabelRMStateRecord says what the Secret holds of it (log, snapshot
	// or chunk).
	LabelRMState       = "weft.io/rm-state"
	LabelRMStateRecord = "weft.io/rm-state-record"
	// AnnotationRMStateSeq is the log sequence number a state Secret is
	// at.
	AnnotationRMStateSeq = "weft.io/rm-state-seq"
	// AnnotationRMStateWriter identifies the write that created a log
	// entry, so that a retried create can tell its own earlier success
	// from another writer's entry.
	AnnotationRMStateWriter = "weft.io/rm-state-writer"
	// AnnotationRMStateChunks is how many chunks a snapshot has.
	AnnotationRMStateChunks = "weft.io/rm-state-chunks"
	// SecretTypeRMState marks the store's Secrets as Weft's state, not
	// credentials to mount.
	SecretTypeRMState corev1.SecretType = "weft.io/rm-state"
)

// Tags: prefixes of YARN tags, each followed by its value.
const (
	// AllocationTagTier and AllocationTagQueue carry the RM's decisions
	// the node needs to build a container's pod (its tier's name, its
	// queue) in the container token's allocation tags, where the RM's
	// signature covers them. protos/yarn/nmtokens, below this package,
	// holds them as nmtokens.TagTier and nmtokens.TagQueue.
	AllocationTagTier  = "weft.io/tier="
	AllocationTagQueue = "weft.io/queue="
	// Application tags that steer tiers. YARN lowercases tags, so these
	// are lowercase; a client sets them with e.g. `-Dmapreduce.job.tags=`
	// or `spark.yarn.tags` — no client code changes.
	//
	// TagMinWorkers declares how many of the job's worker containers are
	// its minimum: "weft.min-workers=4".
	TagMinWorkers = "weft.min-workers="
	// TagHighPriorities lists the YARN request priorities whose containers
	// are parameter servers or coordinators: "weft.high-priorities=1,2".
	TagHighPriorities = "weft.high-priorities="
	// TagMaxWorkers declares the most worker containers the job will run
	// (Spark's spark.dynamicAllocation.maxExecutors, say):
	// "weft.max-workers=40". The queue holds quota for it as it scales.
	TagMaxWorkers = "weft.max-workers="
)
