package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Queue is one node of the tenants' queue tree. YARN's views show it as a
// CapacityScheduler queue: `yarn queue -status`, getQueueInfo and the REST
// /scheduler page.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wq,categories=weft
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Parent",type=string,JSONPath=`.spec.parent`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.state`
// +kubebuilder:printcolumn:name="Window",type=string,JSONPath=`.status.activeWindow`
// +kubebuilder:printcolumn:name="Running",type=integer,JSONPath=`.status.runningApplications`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingApplications`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   QueueSpec   `json:"spec"`
	Status QueueStatus `json:"status,omitempty"`
}

// QueueSpec is what an administrator sets.
type QueueSpec struct {
	// Parent names the parent Queue; the root has none. Applications are
	// submitted to leaves, by leaf name as in YARN.
	// +optional
	Parent string `json:"parent,omitempty"`
	// Guaranteed resources are the queue's own: never reclaimed from it,
	// and reclaimed for it from queues that borrowed them.
	// +optional
	Guaranteed corev1.ResourceList `json:"guaranteed,omitempty"`
	// Max bounds what the queue may use, borrowing included. Resources not
	// named are unbounded.
	// +optional
	Max corev1.ResourceList `json:"max,omitempty"`
	// Weight shares idle capacity among siblings that want more than their
	// guarantee.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Weight int32 `json:"weight,omitempty"`
	// UserLimitPercent caps one user's share of the queue.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	UserLimitPercent *int32 `json:"userLimitPercent,omitempty"`
	// SubmitACL and AdminACL are YARN ACLs: "*" for everyone, otherwise
	// "user1,user2 group1,group2"; " " for nobody. Queues inherit access
	// from their ancestors.
	// +optional
	SubmitACL string `json:"submitACL,omitempty"`
	// +optional
	AdminACL string `json:"adminACL,omitempty"`
	// State Stopped refuses new applications and lets running ones finish.
	// +kubebuilder:validation:Enum=Running;Stopped
	// +kubebuilder:default=Running
	// +optional
	State string `json:"state,omitempty"`
	// TimeWindows give the queue other guarantees and maxima at times of
	// day — time-sliced quota, such as a larger share in the night trough
	// of the online services. The first window that contains now applies.
	// +optional
	// +listType=map
	// +listMapKey=name
	TimeWindows []QueueTimeWindow `json:"timeWindows,omitempty"`
}

// QueueTimeWindow is a daily window with its own quota.
type QueueTimeWindow struct {
	// Name identifies the window.
	Name string `json:"name"`
	// Start and End are times of day, "HH:MM"; a window may cross midnight.
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	End string `json:"end"`
	// TimeZone is an IANA zone name; UTC when empty.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// +optional
	Guaranteed corev1.ResourceList `json:"guaranteed,omitempty"`
	// +optional
	Max corev1.ResourceList `json:"max,omitempty"`
}

// QueueStatus is what the scheduler observes.
type QueueStatus struct {
	// Used is what the queue's pods hold now.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// Guaranteed is the guarantee in effect (its time window's, if any).
	// +optional
	Guaranteed corev1.ResourceList `json:"guaranteed,omitempty"`
	// ActiveWindow names the time window in effect; empty outside them.
	// +optional
	ActiveWindow string `json:"activeWindow,omitempty"`
	// Borrowed is the part of Used above the guarantee: reclaimable.
	// +optional
	Borrowed corev1.ResourceList `json:"borrowed,omitempty"`
	// +optional
	RunningApplications int32 `json:"runningApplications,omitempty"`
	// +optional
	PendingApplications int32 `json:"pendingApplications,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// QueueList is a list of Queues.
//
// +kubebuilder:object:root=true
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}
