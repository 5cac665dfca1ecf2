package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/translator/wellknown"
)

// TidePool is a set of nodes that the tidal controller lends whole to
// batch work while the online services' deployment level (Σ online
// requests / online capacity) is below the watermark, and takes back —
// after notifying batch work — when it rises past it. Each node walks
// Online → OnlineToOffline → Offline → OfflineToOnline → Online; in the
// two intermediate states neither side places new work there.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=tp,categories=weft
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Watermark",type=integer,JSONPath=`.spec.watermarkPercent`
// +kubebuilder:printcolumn:name="Level",type=integer,JSONPath=`.status.levelPercent`
// +kubebuilder:printcolumn:name="Online",type=integer,JSONPath=`.status.nodes.online`
// +kubebuilder:printcolumn:name="ToOffline",type=integer,JSONPath=`.status.nodes.onlineToOffline`
// +kubebuilder:printcolumn:name="Offline",type=integer,JSONPath=`.status.nodes.offline`
// +kubebuilder:printcolumn:name="ToOnline",type=integer,JSONPath=`.status.nodes.offlineToOnline`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TidePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TidePoolSpec   `json:"spec"`
	Status TidePoolStatus `json:"status,omitempty"`
}

// TidePoolSpec is what an operator sets.
type TidePoolSpec struct {
	// NodeSelector chooses the pool's nodes. A node may be in one pool
	// only; a pool that claims a node another pool claimed first is not
	// Ready and moves none of its nodes.
	NodeSelector metav1.LabelSelector `json:"nodeSelector"`
	// WatermarkPercent is the deployment level the pool keeps the online
	// side at: below it, nodes are lent to batch; above WatermarkPercent
	// + BandPercent they are taken back.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=90
	// +optional
	WatermarkPercent int32 `json:"watermarkPercent,omitempty"`
	// BandPercent is the hysteresis band above the watermark within
	// which nothing moves.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=50
	// +kubebuilder:default=5
	// +optional
	BandPercent int32 `json:"bandPercent,omitempty"`
	// MinOnlineNodes is how many of the pool's nodes stay Online whatever
	// the level.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinOnlineNodes int32 `json:"minOnlineNodes,omitempty"`
	// MaxLentNodes caps the nodes lent at once (Offline or on the way);
	// unset: no cap.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxLentNodes *int32 `json:"maxLentNodes,omitempty"`
	// Notice is how long batch work on a node being taken back is given
	// to finish before what is left is killed (default 10m).
	// +optional
	Notice *metav1.Duration `json:"notice,omitempty"`
	// DrainTimeout is how long evicting a node's online pods may take
	// before the node goes back to Online (default 5m).
	// +optional
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
	// Policy chooses the nodes to lend: FewestPods (the fewest online
	// pods to move) or DeletionCost (the lowest sum of
	// controller.kubernetes.io/pod-deletion-cost).
	// +kubebuilder:validation:Enum=FewestPods;DeletionCost
	// +kubebuilder:default=FewestPods
	// +optional
	Policy NodePolicy `json:"policy,omitempty"`
	// Hooks are called at each transition.
	// +optional
	Hooks []Hook `json:"hooks,omitempty"`
	// Windows are the timed mode: from From to To, at least OnlineNodes
	// of the pool's nodes are kept Online whatever the level (a planned
	// peak: a holiday event), and given back after.
	// +optional
	Windows []TimedWindow `json:"windows,omitempty"`
}

// NodePolicy chooses the nodes to lend.
type NodePolicy string

const (
	PolicyFewestPods   NodePolicy = "FewestPods"
	PolicyDeletionCost NodePolicy = "DeletionCost"
)

// Hook is an HTTP endpoint called with the node and its transition: a
// POST of {"pool", "node", "from", "to"} as JSON. A transition completes
// only once every hook for it answered 2xx; a failing hook keeps the node
// in its intermediate state, retried with backoff.
type Hook struct {
	// Name identifies the hook in Events and conditions.
	Name string `json:"name"`
	// URL is the endpoint.
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`
	// States are the states whose entry calls the hook: OnlineToOffline,
	// Offline, OfflineToOnline, Online. None: every state.
	// +optional
	States []NodeState `json:"states,omitempty"`
	// Timeout bounds one call (default 10s).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// TimedWindow keeps nodes Online over a planned period.
//
// +kubebuilder:validation:XValidation:rule="self.to > self.from",message="to must be after from"
type TimedWindow struct {
	From metav1.Time `json:"from"`
	To   metav1.Time `json:"to"`
	// OnlineNodes is how many of the pool's nodes stay Online meanwhile.
	// +kubebuilder:validation:Minimum=0
	OnlineNodes int32 `json:"onlineNodes"`
}

// NodeState is where a pool's node is in the tide.
type NodeState string

// The states are the values of the node's tide-state label, which the
// controller writes and the RM and the node agent read: one set of
// states, and one state machine (wellknown.TideState), for the API and
// the label.
const (
	StateOnline          = NodeState(wellknown.TideOnline)
	StateOnlineToOffline = NodeState(wellknown.TideOnlineToOffline)
	StateOffline         = NodeState(wellknown.TideOffline)
	StateOfflineToOnline = NodeState(wellknown.TideOfflineToOnline)
)

// TidePoolStatus is what the controller observed and did.
type TidePoolStatus struct {
	// LevelPercent is the online deployment level last computed.
	// +optional
	LevelPercent int32 `json:"levelPercent,omitempty"`
	// Nodes counts the pool's nodes per state.
	// +optional
	Nodes NodeCounts `json:"nodes,omitempty"`
	// LastTransitions are the most recent node transitions, newest first.
	// +optional
	LastTransitions []Transition `json:"lastTransitions,omitempty"`
	// Conditions: Ready (the pool is valid and its nodes are its own),
	// Moving (a transition is under way).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the spec generation the status speaks of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// NodeCounts counts nodes per state.
type NodeCounts struct {
	Online          int32 `json:"online"`
	OnlineToOffline int32 `json:"onlineToOffline"`
	Offline         int32 `json:"offline"`
	OfflineToOnline int32 `json:"offlineToOnline"`
}

// Transition is one node's move between states.
type Transition struct {
	Node string      `json:"node"`
	From NodeState   `json:"from"`
	To   NodeState   `json:"to"`
	At   metav1.Time `json:"at"`
	// Reason says why (LevelBelowWatermark, LevelAboveBand, OnlinePending,
	// TimedWindow, DrainTimeout).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// +kubebuilder:object:root=true

// TidePoolList is a list of TidePools.
type TidePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TidePool `json:"items"`
}
