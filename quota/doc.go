// Package quota holds the hierarchical multi-tenant queue tree: guaranteed
// and maximum resources, borrowing and reclaim — resource vectors and
// dominant-resource fair shares (the scheduler's arithmetic), and the YARN
// queue tree with its ACLs as clients see it. It knows no Kubernetes type:
// the Queue custom resource and its mapping onto both are quota/api and
// quota/crd, so the scheduler links nothing of Kubernetes.
package quota
