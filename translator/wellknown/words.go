package wellknown

// Kind is where a word is written.
type Kind string

const (
	KindLabel      Kind = "label"
	KindAnnotation Kind = "annotation"
	KindTaint      Kind = "taint"
	// KindResource is an extended resource name (Node allocatable, pod
	// requests).
	KindResource Kind = "resource"
	// KindSecretType is a Secret's type.
	KindSecretType Kind = "secret type"
	// KindTag is the prefix of a YARN tag: an application's tag, or an
	// allocation tag in a container token.
	KindTag Kind = "tag"
)

// Word is one word of the vocabulary: what it is, who writes it, who
// reads it, and why it exists.
type Word struct {
	// Name is the constant of this package that holds the word; Value,
	// the word itself.
	Name, Value string
	Kind        Kind
	// Format is what the word's value holds (for a tag, what follows it).
	Format string
	// Writers and Readers are the packages, by import path, that write
	// and read the word through this package: test/layering checks that
	// these and no others use Name or one of Accessors. A package below
	// translator (protos/...) cannot import this one: it holds a constant
	// of the same value instead, which the check finds.
	Writers, Readers []string
	// Accessors are this package's other names for the word's value
	// (its parser, formatter, value constants): using one uses the word.
	Accessors []string
	// Elsewhere is who else writes or reads the word: outside this
	// module's Go code (the kubelet, kubectl, a YARN client, the Helm
	// chart), or through another package's API.
	Elsewhere string
	// Why is the reason the word exists.
	Why string
}

// The packages that write and read the words.
const (
	module         = "github.com/weft-sh/weft/"
	pkgTranslator  = module + "translator"
	pkgTide        = module + "scheduler/tide"
	pkgAllocator   = module + "rmfacade/allocator"
	pkgAMLauncher  = module + "rmfacade/amlauncher"
	pkgNodesync    = module + "rmfacade/nodesync"
	pkgHA          = module + "rmfacade/server"
	pkgKubestore   = module + "rmfacade/state/kubestore"
	pkgColocation  = module + "bigdataplugin/colocation"
	pkgJanitor     = module + "bigdataplugin/janitor"
	pkgNodeManager = module + "bigdataplugin/nodemanager"
	pkgNMTokens    = module + "protos/yarn/nmtokens"
	pkgDemo        = module + "cmd/weft-demo"
)

// Shared parts of the table.
const (
	rfc3339 = "RFC 3339 time, UTC, to the second (FormatTime, ParseTime)"
	count   = "decimal integer, not negative (FormatCount, ParseCount)"
	// launchSecret: the RM (for an AM) and the node plugin (for any other
	// container) label the container's credentials Secret as its pod.
	secretLabels = "; the RM's AM launcher and the node plugin put it on the container's credentials Secret too"
)

func list(pkgs ...string) []string { return pkgs }

// Words returns the vocabulary, a fresh copy each call.
func Words() []Word {
	return []Word{
		{Name: "LabelApp", Value: LabelApp, Kind: KindLabel,
			Format:  "the application's id (application_<cluster timestamp>_<sequence>); on a pod that is no YARN container, its job's name",
			Writers: list(pkgTranslator, pkgAMLauncher, pkgNodeManager), Readers: list(pkgAllocator, pkgJanitor),
			Elsewhere: "kubectl users select an application's pods by it; owners of pods that are no YARN container set it" + secretLabels,
			Why:       "the janitor keeps the local files of the applications with pods on the node, and pods of one job form one gang"},
		{Name: "LabelAttempt", Value: LabelAttempt, Kind: KindLabel, Format: "the attempt's id (appattempt_…)",
			Writers: list(pkgTranslator), Elsewhere: "kubectl users",
			Why: "shows which attempt of an application a pod belongs to"},
		{Name: "LabelContainer", Value: LabelContainer, Kind: KindLabel, Format: "the container's id (container_…)",
			Writers: list(pkgTranslator, pkgAMLauncher, pkgNodeManager), Readers: list(pkgTranslator),
			Elsewhere: "the RM and the node plugin read it through translator.ContainerOf" + secretLabels,
			Why:       "maps a pod back to its YARN container, whose state the pod's outcome becomes"},
		{Name: "LabelTier", Value: LabelTier, Kind: KindLabel, Format: "a tier's name: high, medium or low (records.Tier)",
			Writers: list(pkgTranslator), Readers: list(pkgTranslator, pkgAllocator, pkgDemo), Accessors: list("TierOf"),
			Elsewhere: "owners of pods that are no YARN container set it; the node agent and the tide read it through translator.PodTier",
			Why:       "decides who gives way first: eviction, the tide's notice and preemption take the lowest tier first"},
		{Name: "LabelQueue", Value: LabelQueue, Kind: KindLabel, Format: "the queue's path made a label value; on a pod that is no YARN container, a full path or leaf name",
			Writers: list(pkgTranslator), Readers: list(pkgAllocator), Elsewhere: "owners of pods that are no YARN container set it",
			Why: "charges a pod to its queue"},
		{Name: "LabelUser", Value: LabelUser, Kind: KindLabel, Format: "the submitting user made a label value",
			Writers: list(pkgTranslator), Elsewhere: "kubectl users",
			Why: "shows whose container a pod runs"},
		{Name: "LabelRM", Value: LabelRM, Kind: KindLabel, Format: "the RM's cluster id made a label value",
			Writers: list(pkgTranslator, pkgAMLauncher, pkgNodeManager), Readers: list(pkgTranslator),
			Elsewhere: "the RM and the node plugin read it through translator.ContainerOf and translator.Selector" + secretLabels,
			Why:       "each RM manages only its own pods, so several can share a namespace"},
		{Name: "LabelManagedBy", Value: LabelManagedBy, Kind: KindLabel, Format: `"weft" (ManagedByWeft)`,
			Writers: list(pkgTranslator, pkgAMLauncher, pkgNodeManager), Readers: list(pkgTranslator, pkgTide), Accessors: list("ManagedByWeft"),
			Elsewhere: "the RM lists its pods by it through translator.Selector" + secretLabels,
			Why:       "marks Weft's pods as batch work, which the tide does not drain from a node it lends"},

		{Name: "LabelTidePool", Value: LabelTidePool, Kind: KindLabel, Format: "the TidePool's name",
			Writers: list(pkgTide), Readers: list(pkgTide),
			Why: "a node belongs to one pool: a second pool selecting it leaves it to the first"},
		{Name: "LabelTideState", Value: LabelTideState, Kind: KindLabel, Format: "a TideState (Online, OnlineToOffline, Offline, OfflineToOnline); none is Online",
			Writers: list(pkgTide), Readers: list(pkgTide, pkgNodesync, pkgColocation), Accessors: list("TideStateOf", "ParseTideState"),
			Elsewhere: "the RM's allocator reads it through nodesync's KubeNodesInTideState",
			Why:       "the tide's state lives on the Node, so a restarted controller carries a move on, the RM gives notice on a node being taken back, and the agent lends a whole node"},
		{Name: "TaintTide", Value: TaintTide, Kind: KindTaint, Format: "NoSchedule, value transition (TaintTideTransition) or offline (TaintTideOffline)",
			Writers: list(pkgTide), Readers: list(pkgTide, pkgTranslator), Accessors: list("TaintTideTransition", "TaintTideOffline"),
			Elsewhere: "kube-scheduler and the RM's allocator keep untolerating pods off; translator.BatchTolerations tolerates offline",
			Why:       "keeps online work off a lent node and every new pod off a node in transition"},
		{Name: "AnnotationTideSince", Value: AnnotationTideSince, Kind: KindAnnotation, Format: rfc3339,
			Writers: list(pkgTide), Readers: list(pkgTide),
			Why: "times a drain against the pool's DrainTimeout and a transition for its metrics"},
		{Name: "AnnotationTideNoticeDeadline", Value: AnnotationTideNoticeDeadline, Kind: KindAnnotation, Format: rfc3339,
			Writers: list(pkgTide), Readers: list(pkgTide, pkgAllocator, pkgNodesync),
			Why: "the RM tells the AMs when their containers on a node being taken back are preempted, and reports the node DECOMMISSIONING with the time left; the tide evicts what is left then"},
		{Name: "AnnotationTideHooksDone", Value: AnnotationTideHooksDone, Kind: KindAnnotation, Format: `"<TideState>:<hook>,<hook>…" (HooksDone)`,
			Writers: list(pkgTide), Readers: list(pkgTide), Accessors: list("HooksDone", "ParseHooksDone"),
			Why: "a hook that answered is not called again for the same move, by this controller or the next"},
		{Name: "AnnotationTideHookRetry", Value: AnnotationTideHookRetry, Kind: KindAnnotation, Format: `"<RFC 3339 time>,<failures>" (HookRetry)`,
			Writers: list(pkgTide), Readers: list(pkgTide), Accessors: list("HookRetry", "ParseHookRetry"),
			Why: "failing hooks back off across reconciles and restarts"},
		{Name: "AnnotationTideNoticedPods", Value: AnnotationTideNoticedPods, Kind: KindAnnotation, Format: count,
			Writers: list(pkgTide), Readers: list(pkgTide),
			Why: "with AnnotationTideKilledPods, the notice's outcome (the kill rate), counted once across restarts"},
		{Name: "AnnotationTideKilledPods", Value: AnnotationTideKilledPods, Kind: KindAnnotation, Format: count,
			Writers: list(pkgTide), Readers: list(pkgTide),
			Why: "the batch pods still on a node at its notice's deadline, counted once across restarts"},
		{Name: "AnnotationTideDeletionCost", Value: AnnotationTideDeletionCost, Kind: KindAnnotation,
			Format:  "the decimal pod-deletion-cost the tide set on the pod",
			Writers: list(pkgTide), Readers: list(pkgTide),
			Why: "the tide changes or removes a pod's deletion cost only while it is still the one it set, never a user's"},

		{Name: "ReclaimedCPU", Value: string(ReclaimedCPU), Kind: KindResource, Format: "millicores, as an integer quantity",
			Writers: list(pkgTranslator), Readers: list(pkgTranslator),
			Elsewhere: "the node agent publishes it in the Node's allocatable and the RM reads it there, both through translator.Weft; " +
				"pods request it through translator's Profile.Pod; the kubelet admits pods by it",
			Why: "what online services leave unused, lent to batch pods"},
		{Name: "ReclaimedMemory", Value: string(ReclaimedMemory), Kind: KindResource, Format: "bytes",
			Writers: list(pkgTranslator), Readers: list(pkgTranslator),
			Elsewhere: "as ReclaimedCPU",
			Why:       "what online services leave unused, lent to batch pods"},
		{Name: "AnnotationReclaimedAt", Value: AnnotationReclaimedAt, Kind: KindAnnotation, Format: rfc3339,
			Writers: list(pkgColocation), Readers: list(pkgNodesync, pkgTranslator),
			Elsewhere: "translator.Weft names it the RM's capacity heartbeat (Profile.CapacityHeartbeat)",
			Why:       "a capacity whose heartbeat is missing or stale is read as none: a dead agent's last number must not stay on offer"},
		{Name: "AnnotationReclaimedLowering", Value: AnnotationReclaimedLowering, Kind: KindAnnotation, Format: `JSON {"milliCPU","memory"} (Lowering)`,
			Writers: list(pkgColocation), Readers: list(pkgNodesync), Accessors: list("Lowering", "ParseLowering"),
			Why: "the RM stops granting by a falling capacity at once, while the allocatable keeps the old one until the containers granted by it are pods the kubelet admitted"},
		{Name: "AnnotationNodeUtilization", Value: AnnotationNodeUtilization, Kind: KindAnnotation,
			Format:  `JSON {"at","nodeMilliCPU","nodeMemory","batchMilliCPU","batchMemory"} (NodeUtilization)`,
			Writers: list(pkgColocation), Readers: list(pkgNodesync), Accessors: list("NodeUtilization", "ParseNodeUtilization"),
			Why: "stands in for a NodeManager heartbeat's utilization, which YARN's REST API shows"},
		{Name: "AnnotationColocationCooldownUntil", Value: AnnotationColocationCooldownUntil, Kind: KindAnnotation, Format: rfc3339,
			Writers: list(pkgColocation), Readers: list(pkgColocation),
			Why: "a restarted agent keeps the cooldown after an eviction instead of offering at once what it just took back"},

		{Name: "LabelRMActive", Value: LabelRMActive, Kind: KindLabel, Format: `"true"`,
			Writers: list(pkgHA), Readers: list(pkgHA),
			Elsewhere: "the Helm chart's Service selects on it; weft-rm's --ha-pod help names it",
			Why:       "Service clients reach the active replica alone while every replica stays Ready"},
		{Name: "LabelRMState", Value: LabelRMState, Kind: KindLabel, Format: "the store's name",
			Writers: list(pkgKubestore), Readers: list(pkgKubestore),
			Why: "a replica that takes over lists the Secrets of its store"},
		{Name: "LabelRMStateRecord", Value: LabelRMStateRecord, Kind: KindLabel, Format: "log, snapshot or chunk",
			Writers: list(pkgKubestore), Readers: list(pkgKubestore),
			Why: "a replica that takes over tells the log from the snapshots it replays it on"},
		{Name: "AnnotationRMStateSeq", Value: AnnotationRMStateSeq, Kind: KindAnnotation, Format: "decimal log sequence number",
			Writers: list(pkgKubestore), Readers: list(pkgKubestore),
			Why: "orders the log and says which entries a snapshot covers"},
		{Name: "AnnotationRMStateWriter", Value: AnnotationRMStateWriter, Kind: KindAnnotation, Format: "an opaque id of one write",
			Writers: list(pkgKubestore), Readers: list(pkgKubestore),
			Why: "a retried create tells its own earlier success from another writer's entry"},
		{Name: "AnnotationRMStateChunks", Value: AnnotationRMStateChunks, Kind: KindAnnotation, Format: count,
			Writers: list(pkgKubestore), Readers: list(pkgKubestore),
			Why: "a snapshot is whole only with all its chunks"},
		{Name: "SecretTypeRMState", Value: string(SecretTypeRMState), Kind: KindSecretType, Format: "the Secret holds records.json.gz",
			Writers: list(pkgKubestore), Readers: list(pkgKubestore),
			Why: "marks the store's Secrets as Weft's state, not credentials to mount"},

		{Name: "AllocationTagTier", Value: AllocationTagTier, Kind: KindTag, Format: "a tier's name (records.Tier)",
			Writers: list(pkgNMTokens), Readers: list(pkgNMTokens),
			Elsewhere: "the RM signs it into a container token (nmtokens.Keys.ContainerToken); the node plugin reads it (VerifyContainerToken)",
			Why:       "the node builds the container's pod with the tier the RM decided, under the RM's signature"},
		{Name: "AllocationTagQueue", Value: AllocationTagQueue, Kind: KindTag, Format: "the queue's path",
			Writers: list(pkgNMTokens), Readers: list(pkgNMTokens), Elsewhere: "as AllocationTagTier",
			Why: "the node labels the container's pod with its queue, under the RM's signature"},
		{Name: "TagMinWorkers", Value: TagMinWorkers, Kind: KindTag, Format: "decimal integer, not negative",
			Readers: list(pkgTranslator), Elsewhere: "a YARN client sets it among the application's tags",
			Why: "how many worker containers are the job's minimum, which run in tier medium"},
		{Name: "TagHighPriorities", Value: TagHighPriorities, Kind: KindTag, Format: "comma-separated YARN request priorities",
			Readers: list(pkgTranslator), Elsewhere: "a YARN client sets it among the application's tags",
			Why: "containers of parameter servers or coordinators run in tier high"},
		{Name: "TagMaxWorkers", Value: TagMaxWorkers, Kind: KindTag, Format: "decimal integer, not negative",
			Readers: list(pkgTranslator), Elsewhere: "a YARN client sets it among the application's tags; the RM reads it through translator.MaxWorkers",
			Why: "the queue holds quota for the most workers an elastic job will run"},
	}
}
