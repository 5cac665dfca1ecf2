package allocator

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// quiet is the tests' logger.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// registered submits an unmanaged-AM application of alice's to queue and
// registers its first attempt.
func registered(t *testing.T, mgr *rm.Manager, queue string) records.AttemptID {
	t.Helper()
	ctx := context.Background()
	app := mgr.NewApplicationID()
	if err := mgr.Submit(ctx, rm.Submission{ID: app, User: "alice", Queue: queue, UnmanagedAM: true}); err != nil {
		t.Fatal(err)
	}
	attempt := records.AttemptID{App: app, ID: 1}
	if _, err := mgr.RegisterAM(ctx, attempt, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	return attempt
}

// testRM is an RM over a store of its own, with the queues given, on a
// clock the test moves through the returned time.
func testRM(t *testing.T, queues []quota.QueueConfig) (*rm.Manager, *time.Time) {
	t.Helper()
	st, err := state.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree(queues)
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000)
	return rm.New(st, tree, rm.Options{Logger: quiet, Now: func() time.Time { return now }}), &now
}

// Outstanding sums an attempt's ANY asks as totals (AMRMClient resends
// totals; a zero removes its key), ignoring node- and rack-local requests,
// which repeat the ANY request's containers.
func TestOutstanding(t *testing.T) {
	ask := func(name string, prio int32, mb int64, vcores int32, n int32) *yarnpb.ResourceRequestProto {
		return &yarnpb.ResourceRequestProto{ResourceName: proto.String(name), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(prio)},
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(mb), VirtualCores: proto.Int32(vcores)}, NumContainers: proto.Int32(n)}
	}
	a := New(nil, Options{})
	att := records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 1, ID: 1}, ID: 1}
	other := records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 1, ID: 2}, ID: 1}
	for _, tc := range []struct {
		name   string
		update []*yarnpb.ResourceRequestProto
		n      int
		want   records.Resource
	}{
		{"none yet", nil, 0, records.Resource{}},
		{"maps and a reducer", []*yarnpb.ResourceRequestProto{ask("*", 20, 1024, 1, 4), ask("host1", 20, 1024, 1, 4), ask("*", 10, 2048, 2, 1)}, 5, records.Resource{MemoryMB: 6144, VCores: 6}},
		{"a new total for the maps", []*yarnpb.ResourceRequestProto{ask("*", 20, 1024, 1, 1)}, 2, records.Resource{MemoryMB: 3072, VCores: 3}},
		{"the reducer granted", []*yarnpb.ResourceRequestProto{ask("*", 10, 2048, 2, 0)}, 1, records.Resource{MemoryMB: 1024, VCores: 1}},
	} {
		a.Update(att, tc.update)
		n, res := a.Outstanding(att)
		if n != tc.n || res != tc.want {
			t.Errorf("%s: Outstanding = %d, %+v; want %d, %+v", tc.name, n, res, tc.n, tc.want)
		}
	}
	if n, res := a.Outstanding(other); n != 0 || res != (records.Resource{}) {
		t.Errorf("another attempt: Outstanding = %d, %+v; want nothing", n, res)
	}
	a.Forget(att)
	if n, _ := a.Outstanding(att); n != 0 {
		t.Errorf("after Forget: %d containers outstanding", n)
	}
}

func TestPauseAfterACycle(t *testing.T) {
	for _, c := range []struct{ took, interval, want time.Duration }{
		{time.Millisecond, time.Second, minPause},
		{0, time.Second, minPause},
		{10 * time.Millisecond, time.Second, minPause},
		{20 * time.Millisecond, time.Second, 60 * time.Millisecond},
		{30 * time.Millisecond, time.Second, 90 * time.Millisecond},
		{400 * time.Millisecond, time.Second, time.Second},
		{3 * time.Second, time.Second, time.Second},
		{time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}, // an interval under the floor
	} {
		if got := pauseAfter(c.took, c.interval); got != c.want {
			t.Errorf("pauseAfter(%v, %v) = %v, want %v", c.took, c.interval, got, c.want)
		}
	}
}
