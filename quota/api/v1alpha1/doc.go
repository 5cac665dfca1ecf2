// Package v1alpha1 is the weft.io/v1alpha1 API: the Queue tree that holds
// tenants' guaranteed and maximum resources.
//
// +kubebuilder:object:generate=true
// +groupName=weft.io
package v1alpha1
