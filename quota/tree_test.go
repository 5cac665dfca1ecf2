package quota

import "testing"

func TestTreeAndACLs(t *testing.T) {
	tree, err := NewTree([]QueueConfig{
		{Path: "root.prod.etl", Capacity: 50},
		{Path: "root", Capacity: 100, SubmitACL: " ", AdminACL: "admin"},
		{Path: "root.prod", Capacity: 60, SubmitACL: "alice,bob etl"},
		{Path: "root.default", Capacity: 40, SubmitACL: "*"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		queue, user string
		op          Operation
		want        bool
	}{
		{"default", "anyone", SubmitApplications, true},
		{"default", "anyone", AdministerQueue, false},
		{"etl", "alice", SubmitApplications, true}, // inherited from root.prod
		{"root.prod.etl", "carol", SubmitApplications, false},
		{"etl", "admin", SubmitApplications, true}, // administer implies submit
		{"prod", "admin", AdministerQueue, true},
	}
	for _, tc := range tests {
		q, ok := tree.Queue(tc.queue)
		if !ok {
			t.Fatalf("queue %s not found", tc.queue)
		}
		if got := tree.Allowed(q, tc.user, tc.op); got != tc.want {
			t.Errorf("%s %s %s = %v, want %v", tc.queue, tc.user, tc.op, got, tc.want)
		}
	}
	if root, _ := tree.Queue("root"); len(root.Children) != 2 || root.Leaf() {
		t.Errorf("root children %v", root.Children)
	}
	for _, bad := range [][]QueueConfig{
		{{Path: "root.a"}},
		{{Path: "root"}, {Path: "root.a"}, {Path: "root.a"}},
		{{Path: "root"}, {Path: "root.a"}, {Path: "root.b"}, {Path: "root.a.x"}, {Path: "root.b.x"}},
		{{Path: "other"}},
	} {
		if _, err := NewTree(bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}
