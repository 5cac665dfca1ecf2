// Package scheduler binds Weft's pods to nodes by the reclaimable capacity each reports, with gang and tier-ordered preemption.
//
// How it works and why: docs/architecture/scheduler.md.
//
// The core is in memory and knows nothing of Kubernetes: one scheduling
// cycle reads a state snapshot and returns a Plan of placements and
// preemptions, which the state store's plan applier validates against the
// current state (Nomad's optimistic model). Layout:
//   - objects: Node, Application, Request, Allocation and Plan, kept apart
//     from any cache or shim (YuniKorn style).
//   - state: the store (copy-on-write B-trees) with one writer, snapshots
//     and ApplyPlan.
//   - this package: the cycle (queue ordering, gangs, elastic requests,
//     node selection) and tier-ordered preemption planning.
package scheduler
