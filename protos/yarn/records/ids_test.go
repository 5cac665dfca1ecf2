package records

import (
	"fmt"
	"strings"
	"testing"
)

// TestIDStringsMatchFormat holds the appending formatters to the fmt
// patterns YARN's ids are defined by.
func TestIDStringsMatchFormat(t *testing.T) {
	for _, ts := range []int64{0, 7, 1700000000000, -3} {
		for _, app := range []int32{0, 1, 42, 9999, 10000, 123456, -5} {
			a := ApplicationID{ClusterTimestamp: ts, ID: app}
			if got, want := a.String(), fmt.Sprintf("application_%d_%04d", ts, app); got != want {
				t.Errorf("ApplicationID %v: %q, want %q", a, got, want)
			}
			for _, attempt := range []int32{0, 1, 12, 1234567, -2} {
				at := AttemptID{App: a, ID: attempt}
				if got, want := at.String(), fmt.Sprintf("appattempt_%d_%04d_%06d", ts, app, attempt); got != want {
					t.Errorf("AttemptID %v: %q, want %q", at, got, want)
				}
				for _, other := range []int32{1, 10, 100, 1000, 10000, 100000} {
					o := ApplicationID{ClusterTimestamp: ts, ID: other}
					if got := strings.HasPrefix(at.String(), o.AttemptPrefix()); got != (other == app) {
						t.Errorf("%s starts with %s's attempt prefix %q: %v", at, o, o.AttemptPrefix(), got)
					}
				}
				if !strings.HasPrefix(at.String(), a.AttemptPrefix()) {
					t.Errorf("%s does not start with its application's attempt prefix %q", at, a.AttemptPrefix())
				}
				for _, c := range []int64{1, 99, 1234567, 3<<40 | 5, 123<<40 | 77} {
					seq, epoch := c&0xffffffffff, c>>40
					want := fmt.Sprintf("container_%d_%04d_%02d_%06d", ts, app, attempt, seq)
					if epoch > 0 {
						want = fmt.Sprintf("container_e%02d_%d_%04d_%02d_%06d", epoch, ts, app, attempt, seq)
					}
					if got := (ContainerID{Attempt: at, ID: c}).String(); got != want {
						t.Errorf("ContainerID %d: %q, want %q", c, got, want)
					}
				}
			}
		}
	}
}

// Ids order as issued: a later RM incarnation after every id of an earlier
// one, whatever the sequence numbers; attempts by application first.
func TestIDsCompare(t *testing.T) {
	early, late := ApplicationID{ClusterTimestamp: 1, ID: 9000}, ApplicationID{ClusterTimestamp: 2, ID: 1}
	next := ApplicationID{ClusterTimestamp: 2, ID: 2}
	for _, tc := range []struct {
		name string
		got  int
		want int
	}{
		{"an earlier incarnation first", early.Compare(late), -1},
		{"then the sequence", next.Compare(late), 1},
		{"equal", late.Compare(late), 0},
		{"attempts by application first", AttemptID{App: early, ID: 5}.Compare(AttemptID{App: late, ID: 1}), -1},
		{"then the attempt number", AttemptID{App: late, ID: 2}.Compare(AttemptID{App: late, ID: 1}), 1},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// A container's logs link is its node's NodeManager page for it, as a
// real RM gives it in container reports; none before it has a node.
func TestContainerLogsURL(t *testing.T) {
	id := ContainerID{Attempt: AttemptID{App: ApplicationID{ClusterTimestamp: 1700000000000, ID: 3}, ID: 1}, ID: 2}
	c := &Container{ID: id, NodeHTTP: "weft-node-2:8042"}
	if got, want := c.LogsURL("alice"), "http://weft-node-2:8042/node/containerlogs/container_1700000000000_0003_01_000002/alice"; got != want {
		t.Fatalf("LogsURL = %q, want %q", got, want)
	}
	if got := (&Container{ID: id}).LogsURL("alice"); got != "" {
		t.Fatalf("a container without a node links %q", got)
	}
}
