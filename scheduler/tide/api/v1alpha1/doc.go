// Package v1alpha1 is the weft.io/v1alpha1 API of tidal colocation: the
// TidePool, a set of nodes lent whole to batch work in the online
// services' trough and taken back, with notice, at their peak.
//
// +kubebuilder:object:generate=true
// +groupName=weft.io
package v1alpha1
