// Package quota holds the hierarchical multi-tenant queue tree: guaranteed and maximum resources, borrowing and reclaim.
//
// It is built out by its own issues; see README.md for what works today.
package quota
