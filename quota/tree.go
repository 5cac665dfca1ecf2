package quota

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// QueueConfig configures one queue of a tree, in CapacityScheduler terms.
type QueueConfig struct {
	// Path is the full dotted name, starting at "root".
	Path        string  `json:"path"`
	Capacity    float32 `json:"capacity"`
	MaxCapacity float32 `json:"maxCapacity,omitempty"`
	State       string  `json:"state,omitempty"`
	SubmitACL   string  `json:"submitACL,omitempty"`
	AdminACL    string  `json:"adminACL,omitempty"`
	// UserLimitPercent caps one user's share of a leaf (QueueQuota's).
	UserLimitPercent int32 `json:"userLimitPercent,omitempty"`
}

// DefaultQueues is YARN's out-of-the-box tree: root with one leaf,
// "default", open to everyone.
var DefaultQueues = []QueueConfig{
	{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
	{Path: "root.default", Capacity: 100},
}

// Tree is an immutable queue tree.
type Tree struct {
	byPath map[string]*records.Queue
	byLeaf map[string]*records.Queue
	order  []*records.Queue
}

// NewTree builds a tree from configs. Every queue but root needs its
// parent; leaf names must be unique, as YARN resolves queues by leaf name.
// A queue without ACLs inherits access from its ancestors, as in YARN,
// where an ACL of " " (nobody) is the default below root.
func NewTree(configs []QueueConfig) (*Tree, error) {
	t := &Tree{byPath: map[string]*records.Queue{}, byLeaf: map[string]*records.Queue{}}
	sorted := slices.Clone(configs)
	slices.SortStableFunc(sorted, func(a, b QueueConfig) int { return strings.Count(a.Path, ".") - strings.Count(b.Path, ".") })
	for _, c := range sorted {
		if c.Path != "root" && !strings.HasPrefix(c.Path, "root.") {
			return nil, fmt.Errorf("quota: queue %q is not under root", c.Path)
		}
		if _, dup := t.byPath[c.Path]; dup {
			return nil, fmt.Errorf("quota: queue %q configured twice", c.Path)
		}
		q := &records.Queue{Path: c.Path, Name: c.Path[strings.LastIndexByte(c.Path, '.')+1:], Capacity: c.Capacity,
			MaxCapacity: c.MaxCapacity, State: c.State, SubmitACL: c.SubmitACL, AdminACL: c.AdminACL, UserLimitPercent: c.UserLimitPercent}
		if q.MaxCapacity == 0 {
			q.MaxCapacity = 100
		}
		if q.State == "" {
			q.State = "RUNNING"
		}
		if q.SubmitACL == "" {
			q.SubmitACL = " "
		}
		if q.AdminACL == "" {
			q.AdminACL = " "
		}
		if c.Path != "root" {
			q.Parent = c.Path[:strings.LastIndexByte(c.Path, '.')]
			parent, ok := t.byPath[q.Parent]
			if !ok {
				return nil, fmt.Errorf("quota: queue %q has no parent %q", c.Path, q.Parent)
			}
			parent.Children = append(parent.Children, q.Path)
			if other, dup := t.byLeaf[q.Name]; dup {
				return nil, fmt.Errorf("quota: queues %q and %q share the leaf name %q", other.Path, q.Path, q.Name)
			}
			t.byLeaf[q.Name] = q
		}
		t.byPath[c.Path] = q
		t.order = append(t.order, q)
	}
	if _, ok := t.byPath["root"]; !ok {
		return nil, fmt.Errorf("quota: no root queue")
	}
	return t, nil
}

// Queue resolves a queue by full path or by leaf name.
func (t *Tree) Queue(name string) (*records.Queue, bool) {
	if q, ok := t.byPath[name]; ok {
		return q, true
	}
	q, ok := t.byLeaf[name]
	return q, ok
}

// Queues returns every queue, parents before children.
func (t *Tree) Queues() []*records.Queue { return t.order }

// Operation is an ACL-guarded queue operation, named as YARN's QueueACL.
type Operation string

const (
	SubmitApplications Operation = "SUBMIT_APPLICATIONS"
	AdministerQueue    Operation = "ADMINISTER_QUEUE"
)

// Allowed reports whether user may perform op on queue q: granted by the
// queue's or any ancestor's ACL, with administer implying submit.
func (t *Tree) Allowed(q *records.Queue, user string, op Operation) bool {
	for cur := q; cur != nil; cur = t.byPath[cur.Parent] {
		if aclAllows(cur.AdminACL, user) || op == SubmitApplications && aclAllows(cur.SubmitACL, user) {
			return true
		}
		if cur.Parent == "" {
			break
		}
	}
	return false
}

// aclAllows evaluates a YARN ACL string: "*" for everyone, otherwise
// "user1,user2 group1,group2". Groups are not resolved here: without a
// group mapping only the user list grants access.
func aclAllows(acl, user string) bool {
	if strings.TrimSpace(acl) == "*" {
		return true
	}
	users, _, _ := strings.Cut(strings.TrimLeft(acl, " "), " ")
	if strings.HasPrefix(acl, " ") {
		return false
	}
	return slices.Contains(strings.Split(users, ","), user)
}
