// Package scheduler binds Weft's pods to nodes by the reclaimable capacity each reports, with gang and tier-ordered preemption.
//
// It is built out by its own issues; see README.md for what works today.
package scheduler
