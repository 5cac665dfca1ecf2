package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/weft-sh/weft/bigdataplugin/cgroups/cgroupstest"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/test/bench/kwokfleet"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

func TestClock(t *testing.T) {
	wall0 := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	sim0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		hour    time.Duration
		after   time.Duration // wall time after Wall0
		wantSim time.Duration // simulated time after Sim0
	}{
		{"an hour in two minutes, two minutes in", 2 * time.Minute, 2 * time.Minute, time.Hour},
		{"an hour in two minutes, a second in", 2 * time.Minute, time.Second, 30 * time.Second},
		{"an hour in an hour", time.Hour, 90 * time.Minute, 90 * time.Minute},
		{"an hour in a minute, before the start", time.Minute, -time.Second, -time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clock{Wall0: wall0, Sim0: sim0, Hour: tc.hour}
			if got := c.Sim(wall0.Add(tc.after)).Sub(sim0); got != tc.wantSim {
				t.Errorf("Sim: %s simulated, want %s", got, tc.wantSim)
			}
			if got := c.Wall(sim0.Add(tc.wantSim)).Sub(wall0); got != tc.after {
				t.Errorf("Wall: %s of wall time, want %s", got, tc.after)
			}
			if got := c.Scale(tc.wantSim); got != tc.after {
				t.Errorf("Scale(%s) = %s, want %s", tc.wantSim, got, tc.after)
			}
		})
	}
}

func TestShrinkAndScale(t *testing.T) {
	def := sim.DefaultScenario(5000)
	s := shrink(def, 6, time.Hour, 5*time.Hour, 30*time.Minute)
	if s.Cluster.Nodes != 6 || s.Cluster.MilliCPU != def.Cluster.MilliCPU {
		t.Errorf("cluster %+v, want 6 nodes of the default's size", s.Cluster)
	}
	if want := def.Batch.Mixes[0].PerHour * 6 / 5000; s.Batch.Mixes[0].PerHour != want {
		t.Errorf("spark arrives %g an hour, want %g (scaled with the nodes)", s.Batch.Mixes[0].PerHour, want)
	}
	if got := s.Start.UTC(); got != time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC) || s.Duration.Duration != 5*time.Hour || s.WarmUp.Duration != 30*time.Minute {
		t.Errorf("window %s for %s after %s, want 01:00 for 5h after 30m", got, s.Duration.Duration, s.WarmUp.Duration)
	}
	if len(s.Policies) != 1 || s.Policies[0] != sim.TideReclaim || s.Colocation.CPUSet {
		t.Errorf("policies %v, cpuset %v: want the real stack's one policy, no cpuset", s.Policies, s.Colocation.CPUSet)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}

	p, err := scaled(s, clock{Hour: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][2]time.Duration{
		"notice":           {p.Tide.Notice.Duration, s.Tide.Notice.Duration / 30},
		"agent interval":   {p.Agent.Interval.Duration, s.Intervals.Agent.Duration / 30},
		"peak window":      {p.Agent.PeakWindow.Duration, s.Colocation.PeakWindow.Duration / 30},
		"cooldown":         {p.Agent.Cooldown.Duration, s.Colocation.Cooldown.Duration / 30},
		"preemption grace": {p.PreemptionGrace, s.Intervals.PreemptionGrace.Duration / 30},
		"sample":           {p.Sample, s.Intervals.Sample.Duration / 30},
		"heartbeat":        {p.Heartbeat, s.Intervals.Schedule.Duration / 30},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %s of wall time, want %s", name, got[0], got[1])
		}
	}
	if s.Tide.Notice.Duration != 10*time.Minute {
		t.Errorf("scaling changed the scenario's own notice to %s", s.Tide.Notice.Duration)
	}
	// An hour in ten seconds: the agent's 30 s interval would be 83 ms.
	if _, err := scaled(s, clock{Hour: 10 * time.Second}); err == nil || !strings.Contains(err.Error(), "compress less") {
		t.Errorf("too strong a compression: err %v, want one saying to compress less", err)
	}
}

func TestMeter(t *testing.T) {
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	m := &meter{Total: colocation.Amount{MilliCPU: 20000, Memory: 200}, From: start}
	// A warm-up sample and task, not measured.
	m.record(start.Add(-time.Minute), []load{{OnlineMilliCPU: 10000}, {OnlineMilliCPU: 10000}})
	m.started(start.Add(-time.Minute))
	m.killedTask(start.Add(-time.Second), sim.KillTide)
	// 30% and 60% of the CPU; memory 50%, then over the top (capped).
	m.record(start, []load{{OnlineMilliCPU: 2000, BatchMilliCPU: 1000, OnlineMemory: 50}, {OnlineMilliCPU: 3000, OnlineMemory: 50}})
	m.record(start.Add(time.Minute), []load{{OnlineMilliCPU: 6000, BatchMilliCPU: 6000, OnlineMemory: 150}, {OnlineMemory: 100}})
	for range 8 {
		m.started(start)
	}
	m.killedTask(start.Add(time.Minute), sim.KillEviction)
	r := m.result()
	if len(r.Samples) != 2 {
		t.Fatalf("%d samples measured, want 2 (the warm-up's left out)", len(r.Samples))
	}
	if r.CPUAvg != 45 || r.MemAvg != 75 || r.CPUP95 != 60 || r.MemP95 != 100 {
		t.Errorf("CPU avg %g p95 %g, memory avg %g p95 %g; want 45, 60, 75, 100", r.CPUAvg, r.CPUP95, r.MemAvg, r.MemP95)
	}
	if r.TaskAttempts != 8 || r.TasksKilled != 1 || r.KillRate() != 12.5 {
		t.Errorf("%d attempts, %d killed (%g%%), want 8, 1 (12.5%%)", r.TaskAttempts, r.TasksKilled, r.KillRate())
	}
	if want := map[string]int{sim.KillEviction: 1}; !maps.Equal(r.TasksKilledBy, want) {
		t.Errorf("killed by cause %v, want %v (the warm-up's tide kill left out)", r.TasksKilledBy, want)
	}
}

// TestKillCause classifies the completed statuses the RM writes, with the
// exit codes and diagnostics of the code that writes them.
func TestKillCause(t *testing.T) {
	evicted := "memory pressure: the node uses 900 MiB, above the eviction watermark 95% of its allocatable 1000 MiB; " +
		"evicted by the colocation agent of node n1 (tier low, working set 200 MiB)"
	for _, tc := range []struct {
		name  string
		exit  int32
		diag  string
		state v1alpha1.NodeState
		want  string
	}{
		{"tide notice expired (allocator killDuePreemptions)", records.ExitPreempted, "Container preempted by scheduler", v1alpha1.StateOfflineToOnline, sim.KillTide},
		{"tide, node already back online", records.ExitPreempted, "Container preempted by scheduler", v1alpha1.StateOnline, sim.KillTide},
		{"queue reclaim on a lent node", records.ExitPreempted, "Container preempted by scheduler", v1alpha1.StateOffline, sim.KillPreemption},
		{"queue reclaim, node unknown", records.ExitPreempted, "Container preempted by scheduler", "", sim.KillPreemption},
		{"colocation agent's memory eviction (podsync reports the pod's outcome)", -137, "Evicted " + evicted, v1alpha1.StateOffline, sim.KillEviction},
		{"eviction, even if preempted on a node going online", records.ExitPreempted, evicted, v1alpha1.StateOfflineToOnline, sim.KillEviction},
		{"pod evicted by weft-tide at the deadline (podsync)", records.ExitAborted, "Container's pod was deleted", v1alpha1.StateOfflineToOnline, sim.KillTide},
		{"pod deleted under it (podsync)", records.ExitAborted, "Container's pod was deleted", v1alpha1.StateOffline, sim.KillPodLost},
		{"expired unused (podsync)", records.ExitAborted, "Container expired since it was unused", v1alpha1.StateOffline, sim.KillAborted},
		{"of a completed attempt (podsync)", records.ExitAborted, "Container of a completed attempt", v1alpha1.StateOffline, sim.KillAborted},
		{"refused by the kubelet at admission (podsync)", records.ExitPreempted,
			"OutOfweft.io/reclaimed-cpu Pod was rejected: Node didn't have enough resource: weft.io/reclaimed-cpu, requested: 250, used: 250, capacity: 250",
			v1alpha1.StateOfflineToOnline, sim.KillRejected},
		{"failed in its pod", 1, "Error exit code 1", v1alpha1.StateOffline, sim.KillOther},
		{"killed by RM", records.ExitKilledByRM, "", v1alpha1.StateOfflineToOnline, sim.KillOther},
	} {
		if got := killCause(tc.exit, tc.diag, tidal(tc.state)); got != tc.want {
			t.Errorf("%s: exit %d %q on a %q node: %q, want %q", tc.name, tc.exit, tc.diag, tc.state, got, tc.want)
		}
	}
}

func TestPlaceOnline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pending []string
		perNode map[string]int
		room    map[string]int
		want    []placement
	}{
		{"emptiest first, by name among equals", []string{"a", "b", "c"}, map[string]int{"n1": 1, "n2": 0, "n3": 0},
			map[string]int{"n1": 8, "n2": 8, "n3": 8}, []placement{{"a", "n2"}, {"b", "n3"}, {"c", "n1"}}},
		{"full nodes take none", []string{"a", "b"}, map[string]int{"n1": 2, "n2": 1}, map[string]int{"n1": 2, "n2": 2},
			[]placement{{"a", "n2"}, {"b", ""}}},
		// The real node beside the kwok nodes: too small for one replica.
		{"a node with no room takes none", []string{"a", "b"}, map[string]int{"n1": 0, "real": 0}, map[string]int{"n1": 1, "real": 0},
			[]placement{{"a", "n1"}, {"b", ""}}},
		{"no node", []string{"a"}, map[string]int{}, map[string]int{}, []placement{{"a", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := placeOnline(tc.pending, tc.perNode, tc.room)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// The kernel double: the agent's readers see online and batch usage as
// the model says, batch CPU held within the box's quota and what online
// work leaves.
func TestFakeKernel(t *testing.T) {
	s := shrink(sim.DefaultScenario(5000), 6, 0, time.Hour, 0)
	t0 := time.Now()
	k, err := newFakeKernel(t.TempDir(), "n", &s, colocation.Amount{MilliCPU: s.Cluster.MilliCPU, Memory: s.Cluster.MemoryGiB << 30}, t0)
	if err != nil {
		t.Fatal(err)
	}
	o := s.Online
	onlineMilli := int64(4*float64(o.PodMilliCPU)*o.CPUUsageRatio) + s.Cluster.SystemMilliCPU
	batch := []batchUse{{UID: "u1", MilliCPU: 4000, Bytes: 8 << 30}, {UID: "u2", MilliCPU: 4000, Bytes: 8 << 30}}
	l, err := k.advance(t0.Add(10*time.Second), 4, batch)
	if err != nil {
		t.Fatal(err)
	}
	if l.OnlineMilliCPU != onlineMilli || l.BatchMilliCPU != 8000 || l.BatchMemory != 16<<30 {
		t.Errorf("load %+v, want online %dm, batch 8000m and 16 GiB", l, onlineMilli)
	}
	cpu, err := procstat.CPU(k.proc)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Duration(onlineMilli+8000) * 10 * time.Second / 1000; cpu.Busy != want.Truncate(10*time.Millisecond) {
		t.Errorf("/proc/stat busy %s, want %s", cpu.Busy, want)
	}
	used, err := k.fs.CPUUsage(k.fs.PodPath(corev1.PodQOSBestEffort, "u1"))
	if err != nil || used != 40*time.Second {
		t.Errorf("pod u1's cpuacct.usage %s (%v), want 40s", used, err)
	}
	mem, err := procstat.Memory(k.proc)
	if err != nil {
		t.Fatal(err)
	}
	total := s.Cluster.MemoryGiB << 30
	wantUsed := uint64(total>>10-(total-l.OnlineMemory-l.BatchMemory)>>10) << 10 // in kB, as meminfo
	if mem.Used() != wantUsed {
		t.Errorf("meminfo used %d, want %d", mem.Used(), wantUsed)
	}

	// The agent boxes batch work to 2 cores: the kernel holds it there.
	if err := k.fs.SetCPUQuota(k.box, 200*time.Millisecond, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	l, err = k.advance(t0.Add(20*time.Second), 4, batch[:1])
	if err != nil {
		t.Fatal(err)
	}
	if l.BatchMilliCPU != 2000 {
		t.Errorf("batch %dm under a 2-core quota, want 2000m", l.BatchMilliCPU)
	}
	if used, _ := k.fs.CPUUsage(k.fs.PodPath(corev1.PodQOSBestEffort, "u1")); used != 60*time.Second {
		t.Errorf("pod u1's usage %s, want 60s (20s more at 2 cores)", used)
	}
	if _, err := os.Stat(filepath.Join(k.tree.Root, "cpuacct", k.fs.PodPath(corev1.PodQOSBestEffort, "u2"))); !os.IsNotExist(err) {
		t.Errorf("the ended pod u2's cgroup is still there (%v)", err)
	}
}

// TestNoticedContainerTakesNoOtherTask: a container the RM names in a
// PreemptionMessage finishes its task and is given back, as the
// simulation's; the others keep taking tasks. The notice is counted once
// however often the RM repeats it, and, given while its node was being
// taken back, marks its kill as the tide's.
func TestNoticedContainerTakesNoOtherTask(t *testing.T) {
	app := records.ApplicationID{ClusterTimestamp: 1, ID: 1}
	attempt := records.AttemptID{App: app, ID: 1}
	told, kept := records.ContainerID{Attempt: attempt, ID: 2}, records.ContainerID{Attempt: attempt, ID: 3}
	now := time.Now()
	b := &batch{meter: &meter{From: now.Add(-time.Hour)}, clock: clock{Wall0: now, Sim0: now, Hour: time.Minute},
		nodeState: func(string) v1alpha1.NodeState { return v1alpha1.StateOfflineToOnline }}
	a := &am{b: b, mix: &sim.Mix{ReuseContainers: true}, todo: []float64{30, 30},
		held: map[string]*held{told.String(): {id: told, node: "n1"}, kept.String(): {id: kept, node: "n1"}}}
	cs := []*yarnpb.PreemptionContainerProto{{Id: wire.ContainerID(told)}}
	msg := &yarnpb.PreemptionMessageProto{StrictContract: &yarnpb.StrictPreemptionContractProto{Container: cs},
		Contract: &yarnpb.PreemptionContractProto{Container: cs}}
	a.notice(msg)
	a.notice(msg)
	a.notice(nil)
	if b.meter.noticed != 1 {
		t.Errorf("%d notices counted, want 1", b.meter.noticed)
	}
	if !a.held[told.String()].byTide {
		t.Error("a notice on a node being taken back is not marked as the tide's")
	}
	if a.reuses(a.held[told.String()]) {
		t.Error("the noticed container takes another task")
	}
	if !a.reuses(a.held[kept.String()]) {
		t.Error("a container not noticed takes no other task")
	}
	a.mix.ReuseContainers = false
	if a.reuses(a.held[kept.String()]) {
		t.Error("a container of a job that does not reuse them takes another task")
	}
}

// The real node's meter: a kernel double of the node's own size whose
// batch CPU is held by the quota the agent wrote in another tree (the
// kernel's), not in its own.
func TestFakeKernelLimitsFromAnotherTree(t *testing.T) {
	s := shrink(sim.DefaultScenario(5000), 6, 0, time.Hour, 0)
	t0 := time.Now()
	k, err := newFakeKernel(t.TempDir(), "real", &s, colocation.Amount{MilliCPU: 8000, Memory: 16 << 30}, t0)
	if err != nil {
		t.Fatal(err)
	}
	kernel := cgroupstest.V1(t, t.TempDir())
	k.limits = kernel.FS()
	box := k.limits.QOSPath(corev1.PodQOSBestEffort)
	kernel.Add(box, cgroupstest.Usage{})
	if err := k.limits.SetCPUQuota(box, 50*time.Millisecond, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Its own tree's box, which no agent writes, would let it all run.
	l, err := k.advance(t0.Add(time.Second), 0, []batchUse{{UID: "u1", MilliCPU: 2000}})
	if err != nil {
		t.Fatal(err)
	}
	if l.BatchMilliCPU != 500 || k.quota != 500 {
		t.Errorf("batch %dm, quota %dm under the kernel's half-core quota; want 500m, 500m", l.BatchMilliCPU, k.quota)
	}
	// Online work on a small node leaves less than the quota: the node's
	// own size bounds it (8 cores less the system's and 1 replica's use).
	if err := k.limits.SetCPUQuota(box, -1, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	l, err = k.advance(t0.Add(2*time.Second), 1, []batchUse{{UID: "u1", MilliCPU: 8000}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 8000 - l.OnlineMilliCPU; l.BatchMilliCPU != want {
		t.Errorf("batch %dm unbounded on an 8-core node with %dm online, want %dm", l.BatchMilliCPU, l.OnlineMilliCPU, want)
	}
}

func TestPoolSelector(t *testing.T) {
	for _, tc := range []struct {
		withReal   bool
		nodeType   string
		wantMember bool
	}{
		{false, "kwok", true},
		{false, kwokfleet.RealLabel, false},
		{true, "kwok", true},
		{true, kwokfleet.RealLabel, true},
		{true, "other", false},
	} {
		ls := poolSelector(tc.withReal)
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			t.Fatal(err)
		}
		if got := sel.Matches(labels.Set{kwokfleet.NodeLabel: tc.nodeType}); got != tc.wantMember {
			t.Errorf("withReal=%v: a %q node in the pool: %v, want %v", tc.withReal, tc.nodeType, got, tc.wantMember)
		}
	}
}

// The real node's batch pods run busybox burning their pod's CPU, with
// the requests and cgroup (QoS class) the translator gave them.
func TestOnRealNode(t *testing.T) {
	pod, err := translator.Weft.Pod(translator.ContainerSpec{App: "application_1_0001", Container: "container_1_0001_01_000002",
		User: "u", Queue: "etl", Tier: records.TierLow, MemoryMB: 1024, VCores: 1, NodeName: "vm", Namespace: jobsNS, Runtime: translator.Runtime{Image: "fake"}})
	if err != nil {
		t.Fatal(err)
	}
	before := pod.DeepCopy()
	onRealNode(pod, 225)
	c := pod.Spec.Containers[0]
	if c.Image != realImage || !slices.Equal(c.Command, []string{"sh", "-c", burnScript(225)}) || c.Args != nil {
		t.Errorf("container %s %q %q, want %s burning 225m", c.Image, c.Command, c.Args, realImage)
	}
	// The same requests and limits: the same QoS class, hence cgroup.
	if !equality.Semantic.DeepEqual(c.Resources, before.Spec.Containers[0].Resources) || len(pod.Spec.Containers) != 1 {
		t.Errorf("resources %v, want the translator's %v", c.Resources, before.Spec.Containers[0].Resources)
	}
}

func TestBurnScript(t *testing.T) {
	for _, tc := range []struct {
		milli int64
		want  []string // in the script
	}{
		{0, []string{"exec sleep 86400"}},
		{-5, []string{"exec sleep 86400"}},
		{225, []string{"sleep 0.225;", "sleep 0.775;", "kill $b"}},
		{999, []string{"sleep 0.999;", "sleep 0.001;"}},
		{1000, []string{"while :; do :; done"}},
		{4500, []string{"while :; do :; done"}},
	} {
		got := burnScript(tc.milli)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("burnScript(%d) = %q, want it to hold %q", tc.milli, got, w)
			}
		}
		if tc.milli >= 1000 && strings.Contains(got, "sleep") {
			t.Errorf("burnScript(%d) = %q sleeps, want a core burnt", tc.milli, got)
		}
	}
}

// The script, run by busybox's sh for a few seconds, uses about the CPU
// it is given: the shell reaps each busy loop, so the CPU of all of them
// is in the shell's rusage once it is reaped.
func TestBurnScriptBurns(t *testing.T) {
	const busybox = "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil || testing.Short() {
		t.Skip("no", busybox, "or -short")
	}
	const milli, run = 300, 3 * time.Second
	cmd := exec.Command(busybox, "sh", "-c", burnScript(milli))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(run)
	// Stop the shell first (it then reaps nothing more), then the loop.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// The last second's loop is killed unreaped: up to one burst less.
	want := time.Duration(float64(run) * milli / 1000)
	if lo, hi := want-time.Duration(milli)*time.Millisecond-want/4, want+want/4; used < lo || used > hi {
		t.Errorf("%dm for %s used %s of CPU, want %s–%s", milli, run, used, lo, hi)
	}
}

// With the real node, the scenario gets jobs a 2-core node can take, in a
// queue of their own, asked in vcores of realVCoreMilli; the default
// day's containers stay as they are, whole vcores of that size.
func TestWithRealNode(t *testing.T) {
	def := shrink(sim.DefaultScenario(5000), 12, time.Hour, 2*time.Hour, time.Hour)
	s, p, err := withRealNode(def)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(def.Batch.Mixes) != 2 || len(def.Batch.Queues) != 2 {
		t.Fatalf("withRealNode changed its argument's mixes or queues: %d, %d", len(def.Batch.Mixes), len(def.Batch.Queues))
	}
	if !slices.Equal(s.Batch.Mixes[:2], def.Batch.Mixes) || s.Batch.Mixes[2].Name != realMix.Name || s.Batch.Queues[2] != realQueue {
		t.Errorf("mixes %v, queues %v: want the default's and realMix in realQueue", s.Batch.Mixes, s.Batch.Queues)
	}
	if p.VCoreMilli() != realVCoreMilli || p.Name != translator.Weft.Name {
		t.Errorf("profile %s with %dm vcores, want weft's with %dm", p.Name, p.VCoreMilli(), realVCoreMilli)
	}
	// The real node's agent published about 300m (docs/architecture/weft-sim.md): a container
	// of realMix must fit, in whole vcores.
	for _, z := range []sim.Size{realMix.AM, realMix.Worker} {
		if z.MilliCPU > 300 {
			t.Errorf("realMix asks %dm, more than a 2-core node lends", z.MilliCPU)
		}
		if got := resourceOf(z, p); got.GetVirtualCores() != int32(z.MilliCPU/realVCoreMilli) || got.GetMemory() != int64(z.MemoryGiB*1024) {
			t.Errorf("%v asked as %v", z, got)
		}
	}
	if got := resourceOf(sim.Size{MilliCPU: 5000, MemoryGiB: 20}, p).GetVirtualCores(); got != 20 {
		t.Errorf("a 5000m executor is %d vcores of %dm, want 20", got, realVCoreMilli)
	}
	if got := resourceOf(sim.Size{MilliCPU: 5000, MemoryGiB: 20}, translator.Weft).GetVirtualCores(); got != 5 {
		t.Errorf("a 5000m executor is %d vcores of 1000m, want 5", got)
	}

	odd := def
	odd.Batch.Mixes = append(slices.Clone(def.Batch.Mixes), sim.Mix{Name: "odd", AM: sim.Size{MilliCPU: 300}, Worker: sim.Size{MilliCPU: 500}})
	if _, _, err := withRealNode(odd); err == nil || !strings.Contains(err.Error(), "mix odd: a container of 300m") || strings.Contains(err.Error(), "500m") {
		t.Errorf("a 300m AM: err %v, want it refused (weft-rm would round it up), not the 500m worker", err)
	}
}

func TestNodeMeter(t *testing.T) {
	from := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)
	m := &nodeMeter{Alloc: colocation.Amount{MilliCPU: 2000, Memory: 4 << 30}, From: from}
	step := 2 * time.Second
	// Warm-up: not counted, its box counter neither.
	m.record(nodeSample{At: from.Add(-time.Minute), Step: step, Load: load{OnlineMilliCPU: 2000}, Bound: 9, Running: []string{"w"}, Quota: 2000, BoxCPU: time.Second})
	m.record(nodeSample{At: from, Step: step, Load: load{OnlineMilliCPU: 1000, BatchMilliCPU: 500, OnlineMemory: 1 << 30}, Bound: 2, Running: []string{"a"},
		Quota: 500, BoxCPU: 10 * time.Second})
	m.record(nodeSample{At: from.Add(time.Minute), Step: step, Load: load{OnlineMilliCPU: 1000, OnlineMemory: 1 << 30}, Bound: 2, Running: []string{"a", "b"},
		Quota: 300, BoxCPU: 11 * time.Second})
	m.record(nodeSample{At: from.Add(2 * time.Minute), Step: step, Load: load{OnlineMilliCPU: 1000, BatchMilliCPU: 250, OnlineMemory: 1 << 30}, Quota: 900,
		BoxCPU: 12500 * time.Millisecond})
	want := "2000m CPU 4.0 GiB allocatable; CPU avg online 50.0% + batch 12.5%, memory avg 25.0%; at most 2 batch pods bound, 2 Running; box quota at most 900m\n" +
		"  real node's batch containers: 2 ran, 6 container-seconds (wall), the box's quota 300m–500m while they ran; the box's cgroup used 2.5 CPU-seconds (cpuacct.usage)"
	if got := m.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if pods, d := m.Ran(); pods != 2 || d != 3*step {
		t.Errorf("Ran() = %d, %s; want 2, %s", pods, d, 3*step)
	}

	idle := &nodeMeter{Alloc: m.Alloc, From: from}
	idle.record(nodeSample{At: from, Step: step, Quota: 300})
	if got := idle.String(); !strings.Contains(got, "0 ran, 0 container-seconds (wall); the box's") {
		t.Errorf("no batch pod ran, got %s", got)
	}
}

func TestPublished(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vm", Labels: map[string]string{wellknown.LabelTideState: string(v1alpha1.StateOffline)},
		Annotations: map[string]string{wellknown.AnnotationNodeUtilization: wellknown.NodeUtilization{At: time.Unix(1, 0), NodeMilliCPU: 1500, BatchMilliCPU: 200}.String()}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			wellknown.ReclaimedCPU: resource.MustParse("309"), wellknown.ReclaimedMemory: *resource.NewQuantity(3<<29, resource.BinarySI)}}}
	if got, want := published(n), "vm Offline: reclaimed 309m 1.5 GiB; uses 1500m (batch 200m, online 1300m)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	delete(n.Annotations, wellknown.AnnotationNodeUtilization)
	n.Status.Allocatable = nil
	if got, want := published(n), "vm Offline: reclaimed 0m 0.0 GiB"; got != want {
		t.Errorf("not published yet: got %s, want %s", got, want)
	}
}

// TestEvictedEnder: a pod the agent evicted on a kwok node fails as the
// kubelet would fail it (its containers exit 137), once; the RM's reading
// of it (translator.PodOutcome) is a PREEMPTED container whose
// diagnostics name the agent, which the comparison counts as an eviction.
// Pods not so marked, or no longer running, are left alone.
func TestEvictedEnder(t *testing.T) {
	ctx := t.Context()
	msg := "memory pressure: …; evicted by the colocation agent of node kwok-node-0001 (tier low, working set 1024 MiB)"
	running := func(name string, conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: jobsNS, UID: types.UID(name)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "task", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}}
	}
	agents := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: colocation.ReasonEvicted, Message: msg}
	others := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}
	evicted, preempted, plain := running("evicted", agents), running("preempted", others), running("plain")
	cl := fake.NewClientset(evicted, preempted, plain)
	e := newEvictedEnder(cl)
	for range 2 {
		e.end(ctx, []*corev1.Pod{evicted, preempted, plain})
	}
	if n := e.count(); n != 1 {
		t.Errorf("ended %d pods, want 1 (once)", n)
	}
	for _, name := range []string{"preempted", "plain"} {
		p, err := cl.CoreV1().Pods(jobsNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase != corev1.PodRunning {
			t.Errorf("%s: phase %s, want it left Running", name, p.Status.Phase)
		}
	}
	p, err := cl.CoreV1().Pods(jobsNS).Get(ctx, "evicted", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodFailed || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil ||
		p.Status.ContainerStatuses[0].State.Terminated.ExitCode != 137 || !evictedByAgent(p) {
		t.Fatalf("evicted pod's status: %+v, want Failed, its container terminated 137, the agent's condition kept", p.Status)
	}
	exit, diag, state := translator.PodOutcome(p)
	if state != records.ContainerComplete || exit != records.ExitPreempted {
		t.Errorf("the RM reads the evicted pod as %v exit %d, want complete, PREEMPTED", state, exit)
	}
	if got := killCause(exit, diag, false); got != sim.KillEviction {
		t.Errorf("kill cause of %q: %q, want %q", diag, got, sim.KillEviction)
	}
}
