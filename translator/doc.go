// Package translator turns YARN applications, ResourceRequests and ContainerLaunchContexts into pods of the reclaimed colocation class, in priority tiers.
//
// It is built out by its own issues; see README.md for what works today.
package translator
