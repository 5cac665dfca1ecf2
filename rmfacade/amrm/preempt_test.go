package amrm

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// fakeClock is the allocator's time, moved by the test.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Tenant A borrows B's idle half of the node; when B asks, A's elastic
// (low tier) containers are announced to A's AM in a PreemptionMessage,
// killed PREEMPTED only after the grace period, and B gets the room. A's
// minimum (medium) stays.
// queueFixture is an RM with queues a and b (each guaranteed half, able
// to borrow all), one node of 8 GB and 8 vcores, an allocator on a fake
// clock, and the AM protocol; am submits and registers an unmanaged AM.
type queueFixture struct {
	t          *testing.T
	mgr        *rm.Manager
	alloc      *allocator.Allocator
	clock      *fakeClock
	tokens     *Tokens
	addr       string
	responseID map[*ipc.Client]int32
	metrics    *prometheus.Registry
}

func newQueueFixture(t *testing.T, tune ...func(*allocator.Options)) *queueFixture {
	t.Helper()
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree([]quota.QueueConfig{
		{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
		{Path: "root.a", Capacity: 50, MaxCapacity: 100},
		{Path: "root.b", Capacity: 50, MaxCapacity: 100},
	})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := &fakeClock{now: time.Now()}
	mgr := rm.New(st, tree, rm.Options{Logger: quiet, Now: clock.Now})
	reg := prometheus.NewRegistry()
	aopts := allocator.Options{Logger: quiet, PreemptionGrace: 30 * time.Second, Now: clock.Now, Metrics: reg}
	for _, f := range tune {
		f(&aopts)
	}
	alloc := allocator.New(mgr, aopts)
	tokens := NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
	addr := ipctest.Serve(t, ipc.Options{Tokens: tokens}, New(mgr, Options{Allocator: alloc, Keys: nmtokens.New([]byte("fedcba9876543210fedcba9876543210"))}).Service())
	if err := mgr.PutNode(&records.Node{ID: "node-a:8041", Host: "node-a", Port: 8041, HTTPAddress: "node-a:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	return &queueFixture{t: t, mgr: mgr, alloc: alloc, clock: clock, tokens: tokens, addr: addr, responseID: map[*ipc.Client]int32{}, metrics: reg}
}

func (f *queueFixture) am(queue string, tags ...string) (records.AttemptID, *ipc.Client) {
	t := f.t
	t.Helper()
	id := f.mgr.NewApplicationID()
	if err := f.mgr.Submit(context.Background(), rm.Submission{ID: id, User: "alice", Queue: queue, Tags: tags, UnmanagedAM: true}); err != nil {
		t.Fatal(err)
	}
	attempt := records.AttemptID{App: id, ID: 1}
	return attempt, f.register(attempt)
}

// register dials the AM protocol with the attempt's AMRMToken and
// registers.
func (f *queueFixture) register(attempt records.AttemptID) *ipc.Client {
	t := f.t
	t.Helper()
	tok, err := f.tokens.Issue(attempt)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipctest.Dial(t, f.addr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: tok.GetIdentifier(), Password: tok.GetPassword()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(c, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h")},
		&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// allocate heartbeats, asking for n more containers of mb and vcores.
func (f *queueFixture) allocate(c *ipc.Client, n int32, mb int64, vcores int32) *yarnpb.AllocateResponseProto {
	t := f.t
	t.Helper()
	req := &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(f.responseID[c])}
	if n > 0 {
		req.Ask = []*yarnpb.ResourceRequestProto{{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(vcores)}, NumContainers: proto.Int32(n)}}
	}
	resp := &yarnpb.AllocateResponseProto{}
	if err := call(c, "allocate", req, resp); err != nil {
		t.Fatal(err)
	}
	f.responseID[c] = resp.GetResponseId()
	return resp
}

func (f *queueFixture) cycle() {
	f.t.Helper()
	if _, err := f.alloc.Cycle(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func TestPreemptionWithAdvanceNotice(t *testing.T) {
	f := newQueueFixture(t)
	ctx := context.Background()
	mgr, clock := f.mgr, f.clock
	am := f.am
	allocate := func(c *ipc.Client, n int32) *yarnpb.AllocateResponseProto {
		t.Helper()
		return f.allocate(c, n, 2048, 2)
	}
	cycle := f.cycle

	// A takes the whole node: one medium (its minimum), three low.
	attemptA, a := am("a")
	allocate(a, 4)
	cycle()
	if got := len(allocate(a, 0).GetAllocatedContainers()); got != 4 {
		t.Fatalf("A got %d containers, want 4", got)
	}
	for _, c := range mgr.Snapshot().ContainersOfAttempt(attemptA) {
		if err := mgr.ContainerRunning(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
	}

	// B asks for its guarantee, half the node. Its minimum (one
	// container) is reclaimed first, then its elastic one once the minimum
	// runs: one victim each time, a low-tier container of A, announced to
	// A strictly and in the contract, killed PREEMPTED only after the grace
	// period.
	attemptB, b := am("b")
	allocate(b, 2)
	gone := map[string]bool{}
	for round := 1; round <= 2; round++ {
		cycle()
		resp := allocate(a, 0)
		var victim string
		for _, pc := range resp.GetPreempt().GetStrictContract().GetContainer() {
			if id := wire.ContainerIDOf(pc.GetId()).String(); !gone[id] {
				victim = id
			}
		}
		if len(resp.GetPreempt().GetStrictContract().GetContainer()) != 1 || len(resp.GetPreempt().GetContract().GetContainer()) != 1 || victim == "" {
			t.Fatalf("round %d: preemption message %v, want one new container", round, resp.GetPreempt())
		}
		for _, c := range mgr.Snapshot().ContainersOfAttempt(attemptA) {
			if c.ID.String() == victim && c.Tier != records.TierLow {
				t.Errorf("round %d: victim %s is %s tier", round, c.ID, c.Tier)
			}
		}

		// Within the grace period nothing is killed, no other victim is
		// chosen, and B waits.
		clock.Add(10 * time.Second)
		cycle()
		if got := len(allocate(b, 0).GetAllocatedContainers()); got != 0 {
			t.Fatalf("round %d: B got %d containers before the victim went", round, got)
		}
		resp = allocate(a, 0)
		if len(resp.GetCompletedContainerStatuses()) != 0 || len(resp.GetPreempt().GetStrictContract().GetContainer()) != 1 {
			t.Fatalf("round %d, within the grace: completed %v, preempt %v", round, resp.GetCompletedContainerStatuses(), resp.GetPreempt())
		}

		// After it, the victim is killed PREEMPTED and B gets the room.
		clock.Add(25 * time.Second)
		cycle()
		resp = allocate(a, 0)
		if st := resp.GetCompletedContainerStatuses(); len(st) != 1 || wire.ContainerIDOf(st[0].GetContainerId()).String() != victim ||
			st[0].GetExitStatus() != records.ExitPreempted {
			t.Fatalf("round %d: completed %v, want the victim PREEMPTED", round, st)
		}
		// (B's elastic container may already have its victim named:
		// its minimum was placed in the same cycle.)
		for _, pc := range resp.GetPreempt().GetStrictContract().GetContainer() {
			if wire.ContainerIDOf(pc.GetId()).String() == victim {
				t.Errorf("round %d: the killed victim is still announced", round)
			}
		}
		gone[victim] = true
		if got := len(allocate(b, 0).GetAllocatedContainers()); got != 1 {
			t.Fatalf("round %d: B got %d containers, want 1", round, got)
		}
		for _, c := range mgr.Snapshot().ContainersOfAttempt(attemptB) {
			if err := mgr.ContainerRunning(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}

	// B is at its guarantee and A keeps its minimum: nothing more goes.
	cycle()
	if p := allocate(a, 0).GetPreempt(); p != nil {
		t.Errorf("preemption beyond B's guarantee: %v", p)
	}
	tiers := map[records.Tier]int{}
	for _, c := range mgr.Snapshot().ContainersOfAttempt(attemptA) {
		if c.State != records.ContainerComplete {
			tiers[c.Tier]++
		}
	}
	if tiers[records.TierMedium] != 1 || tiers[records.TierLow] != 1 {
		t.Errorf("A keeps %v, want its medium and one low", tiers)
	}

	// The metrics tell the same: two low-tier preemptions from A, and B
	// using its guarantee.
	if err := testutil.GatherAndCompare(f.metrics, strings.NewReader(`
# HELP weft_preemptions_total Containers chosen as preemption victims, by the victim's tier and queue.
# TYPE weft_preemptions_total counter
weft_preemptions_total{queue="root.a",tier="low"} 2
`), "weft_preemptions_total"); err != nil {
		t.Error(err)
	}
	gathered, err := f.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var bUsed float64 = -1
	for _, mf := range gathered {
		if mf.GetName() != "weft_queue_resource" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["queue"] == "root.b" && l["kind"] == "used" && l["resource"] == "millicpu" {
				bUsed = m.GetGauge().GetValue()
			}
		}
	}
	if bUsed != 4000 {
		t.Errorf("weft_queue_resource{queue=root.b,kind=used,resource=millicpu} = %v, want 4000", bUsed)
	}
}

// A gang whose minimum cannot fit gets nothing (no partial placement that
// would hold capacity while waiting), and smaller jobs behind it run.
func TestGangNotPartiallyPlacedNorBlocking(t *testing.T) {
	f := newQueueFixture(t)
	// 5 workers of 2 vcores are its minimum: 10 vcores on an 8-vcore node.
	_, gang := f.am("a", "weft.min-workers=5")
	f.allocate(gang, 5, 1024, 2)
	_, small := f.am("a")
	f.allocate(small, 2, 1024, 2)
	for i := 0; i < 3; i++ {
		f.cycle()
	}
	if got := len(f.allocate(gang, 0, 0, 0).GetAllocatedContainers()); got != 0 {
		t.Errorf("the gang got %d of its 5 minimum containers", got)
	}
	if got := len(f.allocate(small, 0, 0, 0).GetAllocatedContainers()); got != 2 {
		t.Errorf("the job behind the gang got %d containers, want 2", got)
	}
}

// The allocator takes its queue quotas from Options.Quotas when set (the
// server's: absolute ones from Queue objects, time windows applied): a
// maximum of 4 vcores there caps queue a, whatever its capacity share.
func TestQuotasFromOptions(t *testing.T) {
	var at time.Time
	f := newQueueFixture(t, func(o *allocator.Options) {
		o.Quotas = func(cluster quota.Resource, now time.Time) ([]quota.QueueQuota, error) {
			at = now
			max := quota.Resource{MilliCPU: 4000, Memory: 8192 << 20}
			return []quota.QueueQuota{{Path: "root", Guaranteed: cluster}, {Path: "root.a", Max: &max}, {Path: "root.b"}}, nil
		}
	})
	_, a := f.am("a")
	f.allocate(a, 4, 1024, 2)
	f.cycle()
	if got := len(f.allocate(a, 0, 0, 0).GetAllocatedContainers()); got != 2 {
		t.Errorf("granted %d containers of 2 vcores under a 4-vcore max, want 2", got)
	}
	if !at.Equal(f.clock.Now()) {
		t.Errorf("quotas asked for %v, want the allocator's clock %v", at, f.clock.Now())
	}
}

// An AM's container counts in its queue (as in YARN), and is taken out of
// what the node reports others hold, so it is counted once: queue a, at
// most half of an 8-vcore node, holds its 2-vcore AM and one 2-vcore
// container, not two.
func TestAMContainerCountsInItsQueue(t *testing.T) {
	f := newQueueFixture(t, func(o *allocator.Options) {
		o.Quotas = func(cluster quota.Resource, now time.Time) ([]quota.QueueQuota, error) {
			half := quota.Resource{MilliCPU: cluster.MilliCPU / 2, Memory: cluster.Memory / 2}
			return []quota.QueueQuota{{Path: "root", Guaranteed: cluster}, {Path: "root.a", Max: &half}, {Path: "root.b"}}, nil
		}
	})
	ctx := context.Background()
	id := f.mgr.NewApplicationID()
	if err := f.mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "a",
		AMResource: records.Resource{MemoryMB: 1024, VCores: 2}}); err != nil {
		t.Fatal(err)
	}
	attempt := records.AttemptID{App: id, ID: 1}
	am := records.ContainerID{Attempt: attempt, ID: 1}
	// The AM's pod is placed; the node does not count it among others'
	// pods (it is Weft's), the queue does.
	if err := f.mgr.AMContainerPlaced(ctx, am, "node-a:8041", "node-a:8042", records.Resource{MemoryMB: 1024, VCores: 2}); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.AMLaunched(ctx, attempt, am); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.PutNode(&records.Node{ID: "node-a:8041", Host: "node-a", Port: 8041, HTTPAddress: "node-a:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	c := f.register(attempt)
	f.allocate(c, 3, 1024, 2)
	f.cycle()
	f.cycle()
	if got := len(f.allocate(c, 0, 0, 0).GetAllocatedContainers()); got != 1 {
		t.Errorf("queue a got %d containers beside its AM under a 4-vcore max, want 1", got)
	}
}

// A job tagged with its maximum (weft.max-workers, settable through
// mapreduce.job.tags or spark.yarn.tags) has quota held for the workers it
// may still run: another AM asking at the same time gets only the rest,
// and the first scales to its maximum.
func TestDeclaredMaximumOverTheAMProtocol(t *testing.T) {
	f := newQueueFixture(t)
	_, x := f.am("a", "weft.max-workers=6")
	f.allocate(x, 2, 1024, 1)
	f.cycle()
	if got := len(f.allocate(x, 0, 0, 0).GetAllocatedContainers()); got != 2 {
		t.Fatalf("x got %d, want 2", got)
	}
	_, y := f.am("a")
	f.allocate(y, 6, 1024, 1)
	f.cycle()
	if got := len(f.allocate(y, 0, 0, 0).GetAllocatedContainers()); got != 2 {
		t.Fatalf("y got %d on an 8-vcore node with x's 2 running and 4 held, want 2", got)
	}
	f.allocate(x, 4, 1024, 1)
	f.cycle()
	if got := len(f.allocate(x, 0, 0, 0).GetAllocatedContainers()); got != 4 {
		t.Fatalf("x got %d more, want the 4 up to its maximum", got)
	}
}
