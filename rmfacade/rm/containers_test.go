package rm

import (
	"context"
	"slices"
	"testing"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// countingDurable stands for the disk under the store: it counts commits
// and the most records one wrote.
type countingDurable struct{ commits, most int }

func (d *countingDurable) Load(func(table, key string, value []byte) error) error { return nil }
func (d *countingDurable) Commit(ops []state.Op) error {
	d.commits++
	d.most = max(d.most, len(ops))
	return nil
}
func (d *countingDurable) Close() error { return nil }

// countedManager is a Manager over a store whose commits disk counts.
func countedManager(t *testing.T) (*Manager, *countingDurable) {
	t.Helper()
	disk := &countingDurable{}
	st, err := state.Open(disk)
	if err != nil {
		t.Fatal(err)
	}
	return newManagerOn(t, st), disk
}

// submitRegistered submits n unmanaged applications to queue default and
// registers their AMs, returning their attempts.
func submitRegistered(t *testing.T, m *Manager, n int) []records.AttemptID {
	t.Helper()
	ctx := context.Background()
	var attempts []records.AttemptID
	for range n {
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
	return attempts
}

// heldOn is the memory the containers on a node hold, in MiB.
func heldOn(m *Manager, node string) int64 {
	var held int64
	for _, c := range m.Snapshot().ContainersOnNode(node) {
		held += c.Resource.MemoryMB
	}
	return held
}

// A batch of more than maxGrantsPerWrite grants is stored in several
// transactions (one transaction of a large cluster's 100,000 grants would
// be most of weft-rm's peak heap), whole attempts in each, and each grant is
// checked against the grants of the transactions before it: the node's
// room goes to the first attempt, the rest of it to the second, never more.
func TestAllocateBatchWritesInParts(t *testing.T) {
	m, disk := countedManager(t)
	room := int64(maxGrantsPerWrite * 3 / 2)
	if err := m.PutNode(&records.Node{ID: "n1", Host: "n1", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: room, VCores: int32(room)}}); err != nil {
		t.Fatal(err)
	}
	attempts := submitRegistered(t, m, 2)
	each := slices.Repeat([]Grant{{Node: "n1", Resource: records.Resource{MemoryMB: 1, VCores: 1}, Queue: "default"}}, maxGrantsPerWrite)
	before, most := disk.commits, disk.most
	stored, err := m.AllocateBatch(context.Background(), map[records.AttemptID][]Grant{attempts[0]: each, attempts[1]: each})
	if err != nil {
		t.Fatal(err)
	}
	if n := disk.commits - before; n != 2 || disk.most > max(most, maxGrantsPerWrite) {
		t.Errorf("%d durable commits of at most %d records, want 2 of at most %d", n, disk.most, maxGrantsPerWrite)
	}
	if got := []int{len(stored[attempts[0]]), len(stored[attempts[1]])}; !slices.Equal(got, []int{maxGrantsPerWrite, maxGrantsPerWrite / 2}) {
		t.Errorf("stored %v, want [%d %d]", got, maxGrantsPerWrite, maxGrantsPerWrite/2)
	}
	if held := heldOn(m, "n1"); held != room {
		t.Errorf("node n1 holds %d MiB of %d", held, room)
	}
}

// A cycle's grants of several attempts are stored in one transaction and
// one durable commit, each checked against the store as the transaction
// has it: two attempts wanting the last room on a node get it in attempt
// order, never both; a finished attempt's grants are dropped while the
// others' are stored.
func TestAllocateBatch(t *testing.T) {
	ctx := context.Background()
	m, disk := countedManager(t)
	if err := m.PutNode(&records.Node{ID: "n1", Host: "n1", State: records.NodeRunning, Capability: records.Resource{MemoryMB: 3072, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	attempts := submitRegistered(t, m, 3)
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
	if held := heldOn(m, "n1"); held > 3072 {
		t.Errorf("node n1 holds %d MiB of 3072", held)
	}
}
