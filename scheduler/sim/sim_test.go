package sim

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
)

// small is a short day on a small cluster: from the night's trough into
// the morning's rise, when the tide lends nodes and then takes some back.
func small(nodes int, hours time.Duration) Scenario {
	s := DefaultScenario(nodes)
	s.Start = metav1.NewTime(time.Date(2026, 11, 24, 4, 0, 0, 0, time.UTC))
	s.Duration.Duration = hours * time.Hour
	s.WarmUp.Duration = time.Hour
	return s
}

func run(t *testing.T, s Scenario, parallel int) map[Policy]*Result {
	t.Helper()
	rs, err := Run(context.Background(), s, parallel)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Policy]*Result{}
	for _, r := range rs {
		out[r.Policy] = r
	}
	return out
}

// The same seed gives the same day, whether policies run one at a time
// or side by side; another seed gives another day.
func TestDeterministic(t *testing.T) {
	s := small(30, 2)
	s.Policies = []Policy{RequestGap, TideNotice, TideReclaim}
	table := func(parallel int) string {
		rs, err := Run(context.Background(), s, parallel)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, r := range rs {
			r.Wall = 0
		}
		if err := WriteCSV(&b, rs); err != nil {
			t.Fatal(err)
		}
		if err := WriteTable(&b, rs); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b := table(1), table(3)
	if a != b {
		t.Errorf("two runs of seed %d differ:\n%s\n---\n%s", s.Seed, a, b)
	}
	s.Seed = 2
	if c := table(3); c == a {
		t.Error("seed 2 gave seed 1's day")
	}
}

// Each policy shows what defines it, on the same day.
func TestPolicies(t *testing.T) {
	r := run(t, small(40, 5), 0)
	online, static, gap := r[OnlineOnly], r[StaticSplit], r[RequestGap]
	abrupt, notice, reclaim := r[TideNoNotice], r[TideNotice], r[TideReclaim]
	for _, x := range r {
		t.Logf("%s: cpu %.1f%% work %.0f core-h tasks %d/%d killed %v saved %d transitions %d wait %s",
			x.Policy, x.CPUAvg, x.WorkCoreSeconds/3600, x.TasksKilled, x.TaskAttempts, x.KillsBy, x.SavedByNotice, x.Transitions, x.OnlineWaitMax)
	}
	if online.WorkCoreSeconds != 0 || online.Started != 0 {
		t.Errorf("online only ran batch work: %+v", online)
	}
	for _, x := range []*Result{static, gap, abrupt, notice, reclaim} {
		if x.WorkCoreSeconds <= 0 || x.CPUAvg <= online.CPUAvg {
			t.Errorf("%s: batch work %.0f core-s, CPU %.1f%% not above online only's %.1f%%", x.Policy, x.WorkCoreSeconds, x.CPUAvg, online.CPUAvg)
		}
	}
	for _, x := range []*Result{online, static, gap} {
		if x.Transitions != 0 || x.KillsBy[KillTide] != 0 {
			t.Errorf("%s moved nodes in a tide: %d transitions, %d tide kills", x.Policy, x.Transitions, x.KillsBy[KillTide])
		}
	}
	if abrupt.Transitions == 0 || notice.Transitions == 0 {
		t.Fatalf("the tide did not move: %d and %d transitions", abrupt.Transitions, notice.Transitions)
	}
	// Without notice every task on a node taken back dies; with it, those
	// that end within the notice are saved.
	// Killed tasks by cause: each a task kill of that cause (an AM's not
	// among them), together all of them.
	for _, x := range r {
		sum := 0
		for why, n := range x.TasksKilledBy {
			sum += n
			if n > x.KillsBy[why] {
				t.Errorf("%s: %d tasks killed by %s, more than its %d container kills", x.Policy, n, why, x.KillsBy[why])
			}
		}
		if sum != x.TasksKilled {
			t.Errorf("%s: tasks killed by cause %v sum to %d, want TasksKilled %d", x.Policy, x.TasksKilledBy, sum, x.TasksKilled)
		}
	}
	if abrupt.TasksKilledBy[KillTide] <= notice.TasksKilledBy[KillTide] {
		t.Errorf("no notice killed %d tasks at the tide, notice %d: want more without", abrupt.TasksKilledBy[KillTide], notice.TasksKilledBy[KillTide])
	}
	if abrupt.KillsBy[KillTide] <= notice.KillsBy[KillTide] {
		t.Errorf("no notice killed %d at the tide, notice %d: want more without", abrupt.KillsBy[KillTide], notice.KillsBy[KillTide])
	}
	if abrupt.SavedByNotice != 0 || notice.SavedByNotice == 0 {
		t.Errorf("saved by the notice: %d without it, %d with it", abrupt.SavedByNotice, notice.SavedByNotice)
	}
	// Usage-based reclaim adds the online nodes' idle capacity.
	if reclaim.WorkCoreSeconds <= notice.WorkCoreSeconds || reclaim.CPUAvg <= notice.CPUAvg {
		t.Errorf("reclaim did %.0f core-s at %.1f%%, the tide alone %.0f at %.1f%%", reclaim.WorkCoreSeconds, reclaim.CPUAvg, notice.WorkCoreSeconds, notice.CPUAvg)
	}
	// Static split: its batch nodes never serve online work, so batch work
	// there is never killed by the tide or by online memory.
	if static.Killed != static.KillsBy[KillPreemption] {
		t.Errorf("static split killed %v", static.KillsBy)
	}
}

// The online curve: peak at the peak hour, trough at the trough hour, the
// trough SwingPercent below the peak.
func TestWorkloadCurve(t *testing.T) {
	s := DefaultScenario(1000)
	s.Online.NoisePercent = 0
	w := Generate(s)
	hi, lo := 0, math.MaxInt
	for _, r := range w.Replicas {
		hi, lo = max(hi, r), min(lo, r)
	}
	at := func(hour int) int { return int((time.Duration(hour)*time.Hour + s.WarmUp.Duration) / time.Minute) }
	if r := w.Replicas[at(20)]; r != hi {
		t.Errorf("%d replicas at 20:00, the most is %d", r, hi)
	}
	if r := w.Replicas[at(4)]; r != lo {
		t.Errorf("%d replicas at 04:00, the fewest is %d", r, lo)
	}
	if swing := 100 * float64(hi-lo) / float64(hi); math.Abs(swing-40) > 0.5 {
		t.Errorf("swing %.1f%%, want 40%%", swing)
	}
	// Peak requests are 70% of the cluster's CPU: 1000 × 32 cores × 0.7 / 4.
	if hi != 5600 {
		t.Errorf("peak replicas %d, want 5600", hi)
	}
	if len(w.Jobs) == 0 || !Generate(s).Jobs[0].At.Equal(w.Jobs[0].At) {
		t.Error("no jobs, or not the same jobs twice")
	}
}

// The two tides differ only by the notice: Weft's with a zero notice is
// the tide without one, kill for kill.
func TestNoticeIsTheOnlyDifference(t *testing.T) {
	s := small(30, 3)
	s.Policies = []Policy{TideNoNotice, TideNotice}
	zero := metav1.Duration{}
	s.Tide.Notice = &zero
	r := run(t, s, 0)
	a, b := r[TideNoNotice], r[TideNotice]
	if a.KillsBy[KillTide] == 0 {
		t.Fatal("no tide kills: the day does not exercise the notice")
	}
	if a.Killed != b.Killed || a.TasksDone != b.TasksDone || a.Transitions != b.Transitions || a.CPUAvg != b.CPUAvg {
		t.Errorf("without notice: %d killed, %d tasks, %d transitions, %.2f%%; Weft's tide with notice 0: %d, %d, %d, %.2f%%",
			a.Killed, a.TasksDone, a.Transitions, a.CPUAvg, b.Killed, b.TasksDone, b.Transitions, b.CPUAvg)
	}
}

// An extra node (Cluster.Extra) of the common size is a node like the
// others: on the same workload, the cluster with 10 nodes alike and one
// extra plays the day as the one with 11 alike. A small one (a 2-core
// machine beside 32-core nodes) takes no 4-core replica and offers no
// more than it has.
func TestExtraNodes(t *testing.T) {
	base := small(10, 2)
	w := Generate(base)
	play := func(s Scenario, p Policy) (*engine, *Result) {
		t.Helper()
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(&s, w, p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r.Wall = 0
		return e, r
	}
	c := base.Cluster
	extra, alike := base, base
	extra.Cluster.Extra = []NodeSize{{MilliCPU: c.MilliCPU, MemoryGiB: float64(c.MemoryGiB)}}
	alike.Cluster.Nodes = 11
	for _, p := range []Policy{RequestGap, TideReclaim} {
		var a, b bytes.Buffer
		_, re := play(extra, p)
		_, ra := play(alike, p)
		if err := WriteCSV(&a, []*Result{re}); err != nil {
			t.Fatal(err)
		}
		if err := WriteCSV(&b, []*Result{ra}); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: 10 nodes + 1 extra of their size:\n%s\n11 nodes:\n%s", p, a.String(), b.String())
		}
	}

	tiny := base
	tiny.Cluster.Extra = []NodeSize{{MilliCPU: 2000, MemoryGiB: 23}}
	e, r := play(tiny, TideReclaim)
	n := e.nodes[len(e.nodes)-1]
	if len(e.nodes) != 11 || n.alloc.MilliCPU != 2000 || n.alloc.Memory != 23*gib {
		t.Fatalf("%d nodes, the last of %+v; want 11, the last 2000m and 23 GiB", len(e.nodes), n.alloc)
	}
	if n.online != 0 || n.offer.MilliCPU > 2000 || n.offer.Memory > 23*gib {
		t.Errorf("the 2-core node ends with %d replicas and an offer of %+v", n.online, n.offer)
	}
	_, r10 := play(base, TideReclaim)
	// Its 2 cores count in the cluster's: a little more capacity.
	if total := tiny.Cluster.Total(); total.MilliCPU != 10*c.MilliCPU+2000 || r.CPUAvg <= 0 || r.CPUAvg >= r10.CPUAvg*1.05 {
		t.Errorf("total %+v, CPU avg %.2f%% against %.2f%% without it", total, r.CPUAvg, r10.CPUAvg)
	}

	bad := base
	bad.Cluster.Extra = []NodeSize{{MilliCPU: c.SystemMilliCPU, MemoryGiB: 64}}
	if err := bad.Validate(); err == nil {
		t.Error("an extra node the system's usage fills is valid")
	}
}

// A node takes as many replicas as its CPU and its memory both hold.
func TestOnlineRoom(t *testing.T) {
	o := Online{PodMilliCPU: 4000, PodMemoryGiB: 8}
	for _, tc := range []struct {
		alloc colocation.Amount
		want  int
	}{
		{colocation.Amount{MilliCPU: 32000, Memory: 128 << 30}, 8},
		{colocation.Amount{MilliCPU: 32000, Memory: 20 << 30}, 2}, // memory bounds it
		{colocation.Amount{MilliCPU: 2000, Memory: 23 << 30}, 0},  // a 2-core real node
	} {
		if got := o.Room(tc.alloc); got != tc.want {
			t.Errorf("room on %+v: %d, want %d", tc.alloc, got, tc.want)
		}
	}
}
