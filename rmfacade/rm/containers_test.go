package rm

import (
	"context"
	"slices"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// countingDurable stands for the disk under the store: it counts commits.
type countingDurable struct{ commits int }

func (d *countingDurable) Load(func(table, key string, value []byte) error) error { return nil }
func (d *countingDurable) Commit([]state.Op) error                                { d.commits++; return nil }
func (d *countingDurable) Close() error                                           { return nil }

// A cycle's grants of several attempts are stored in one transaction and
// one durable commit, each checked against the store as the transaction
// has it: two attempts wanting the last room on a node get it in attempt
// order, never both; a finished attempt's grants are dropped while the
// others' are stored.
func TestAllocateBatch(t *testing.T) {
	ctx := context.Background()
	disk := &countingDurable{}
	st, err := state.Open(disk)
	if err != nil {
		t.Fatal(err)
	}
	m := newManagerOn(t, st)
	if err := m.PutNode(&records.Node{ID: "n1", Host: "n1", State: records.NodeRunning, Capability: records.Resource{MemoryMB: 3072, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	var attempts []records.AttemptID
	for range 3 {
		id := m.NewApplicationID()
		if err := m.Submit(ctx, Submission{ID: id, User: "bob", Queue: "default", UnmanagedAM: true}); err != nil {
			t.Fatal(err)
		}
		at := records.AttemptID{App: id, ID: 1}
		if _, err := m.RegisterAM(ctx, at, "h", 1, ""); err != nil {
			t.Fatal(err)
		}
		attempts = append(attempts, at)
	}
	if _, err := m.Kill(ctx, attempts[2].App, "bob", ""); err != nil {
		t.Fatal(err)
	}
	gib := Grant{Node: "n1", Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Queue: "default"}
	before := disk.commits
	// The second attempt is first in the map literal's source order, and
	// wants two of the node's three GiB; the first wants two too.
	stored, err := m.AllocateBatch(ctx, map[records.AttemptID][]Grant{
		attempts[1]: {gib, gib},
		attempts[0]: {gib, gib},
		attempts[2]: {gib},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := disk.commits - before; n != 1 {
		t.Errorf("%d durable commits for one batch, want 1", n)
	}
	if got := []int{len(stored[attempts[0]]), len(stored[attempts[1]]), len(stored[attempts[2]])}; !slices.Equal(got, []int{2, 1, 0}) {
		t.Fatalf("stored %v containers for the three attempts, want [2 1 0]: attempt order decides, a killed attempt gets none", got)
	}
	held := 0
	for _, c := range m.Snapshot().ContainersOnNode("n1") {
		held += int(c.Resource.MemoryMB)
	}
	if held > 3072 {
		t.Errorf("node n1 holds %d MiB of 3072", held)
	}
}
