// Package sim replays a day of colocation on a virtual clock: an online
// service scaling with a diurnal curve and a stream of MapReduce- and
// Spark-like jobs, on one cluster, under several colocation policies side
// by side (weft-sim).
//
// It drives Weft's own decision code, not a restatement of it: every
// scheduling cycle is scheduler.Schedule over a state.Store and
// state.ApplyPlan (queues, DRF, gangs, elastic workers, preemption with
// notice); the tidal policies call tide.Decide with a TidePoolSpec and
// take notice and drain timeout from tide.Notice and tide.DrainTimeout;
// each node's offer, big box and memory evictions come from
// colocation.Decide, Peaks, Hysteresis and Victims with a colocation.Config
// (LentWhole on lent nodes). What the simulator models itself is what
// Kubernetes and the workloads do around those decisions: kube-scheduler
// placing online replicas, a ReplicaSet scaling, tasks running, a node's
// CPU shared between online and batch work (see docs/architecture/weft-sim.md).
package sim

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

// Scenario is one simulated day: the cluster, its online and batch
// workloads, and the knobs of the policies compared. It is read from YAML
// (LoadScenario); every field left out takes DefaultScenario's value.
type Scenario struct {
	// Seed makes a run reproducible: the same seed, the same input, the
	// same numbers.
	Seed uint64 `json:"seed"`
	// Start is the virtual clock's first instant (a fixed date);
	// Duration how long the day lasts (default 24h).
	Start    metav1.Time     `json:"start"`
	Duration metav1.Duration `json:"duration"`
	// WarmUp is simulated before Start and not measured, so that the day
	// starts on a cluster already busy, as a real day does (default 3h).
	WarmUp  metav1.Duration `json:"warmUp"`
	Cluster Cluster         `json:"cluster"`
	Online  Online          `json:"online"`
	Batch   Batch           `json:"batch"`
	// Tide is the TidePool the tidal policies use (its NodeSelector is
	// ignored: the pool is the whole cluster). The no-notice policy sets
	// its Notice to zero.
	Tide v1alpha1.TidePoolSpec `json:"tide"`
	// Colocation is the node agent's configuration (its windows apply).
	Colocation colocation.Config `json:"colocation"`
	// NodesToScore is the scheduler's node search bound
	// (scheduler.Options.NodesToScore; default 100, as kube-scheduler
	// scores a share of a large cluster's nodes; 0 scores every node).
	NodesToScore int `json:"nodesToScore"`
	// StaticBatchPercent is the share of nodes the static split gives
	// batch work for the whole day.
	StaticBatchPercent int `json:"staticBatchPercent"`
	// Intervals of the control loops, in virtual time.
	Intervals Intervals `json:"intervals"`
	// Policies to run (default: all of Policies, in that order).
	Policies []Policy `json:"policies,omitempty"`
}

// Cluster is a set of identical nodes.
type Cluster struct {
	Nodes int `json:"nodes"`
	// MilliCPU and MemoryGiB are each node's allocatable.
	MilliCPU  int64 `json:"milliCPU"`
	MemoryGiB int64 `json:"memoryGiB"`
	// SystemMilliCPU and SystemMemoryGiB are what the node's daemons (the
	// kubelet, the runtime, agents) use: online usage the agent measures
	// on every node, lent or not.
	SystemMilliCPU  int64 `json:"systemMilliCPU"`
	SystemMemoryGiB int64 `json:"systemMemoryGiB"`
	// Extra are nodes of their own sizes beside the Nodes alike, after
	// them (groundtruth's real node, a machine of a few cores beside the
	// kwok nodes): each runs the system's usage too, and is in the
	// TidePool as the others. The workload is sized by the Nodes alike
	// (Generate, WithNodes): extra nodes add capacity, not demand.
	Extra []NodeSize `json:"extra,omitempty"`
}

// NodeSize is a node's allocatable.
type NodeSize struct {
	MilliCPU  int64   `json:"milliCPU"`
	MemoryGiB float64 `json:"memoryGiB"`
}

// alloc is node i's allocatable: the Nodes alike first, then Extra.
func (c Cluster) alloc(i int) colocation.Amount {
	if i < c.Nodes {
		return colocation.Amount{MilliCPU: c.MilliCPU, Memory: c.MemoryGiB * gib}
	}
	x := c.Extra[i-c.Nodes]
	return colocation.Amount{MilliCPU: x.MilliCPU, Memory: int64(x.MemoryGiB * float64(gib))}
}

// Total is every node's allocatable added up.
func (c Cluster) Total() colocation.Amount {
	var t colocation.Amount
	for i := range c.Nodes + len(c.Extra) {
		a := c.alloc(i)
		t.MilliCPU += a.MilliCPU
		t.Memory += a.Memory
	}
	return t
}

// Online is one online service whose replica count follows the day.
type Online struct {
	// PodMilliCPU and PodMemoryGiB are a replica's requests.
	PodMilliCPU  int64   `json:"podMilliCPU"`
	PodMemoryGiB float64 `json:"podMemoryGiB"`
	// CPUUsageRatio and MemoryUsageRatio are usage over request (online
	// services run far below their requests: that gap is what usage-based
	// reclaim lends).
	CPUUsageRatio    float64 `json:"cpuUsageRatio"`
	MemoryUsageRatio float64 `json:"memoryUsageRatio"`
	// PeakRequestPercent is what the replicas request at the peak, in
	// percent of the cluster's CPU.
	PeakRequestPercent float64 `json:"peakRequestPercent"`
	// SwingPercent is how far the trough is below the peak.
	SwingPercent float64 `json:"swingPercent"`
	// PeakHour and TroughHour (0-24, the Start's time zone): the curve
	// rises from the trough to the peak and falls back, a half cosine
	// each way.
	PeakHour   float64 `json:"peakHour"`
	TroughHour float64 `json:"troughHour"`
	// NoisePercent is the replica count's noise (a slow random walk) and,
	// per node and sample, the usage's.
	NoisePercent float64 `json:"noisePercent"`
}

// Room is how many replicas fit in a node's allocatable by their
// requests, as kube-scheduler's NodeResourcesFit counts: the simulation's
// placement and the ground truth's stand-in for kube-scheduler both ask.
func (o Online) Room(alloc colocation.Amount) int {
	return int(min(alloc.MilliCPU/o.PodMilliCPU, int64(float64(alloc.Memory)/(o.PodMemoryGiB*float64(gib)))))
}

// Batch is the stream of jobs.
type Batch struct {
	// Queues are the leaf queues under root, with guarantees and maxima in
	// percent of the cluster (guarantees are what preemption reclaims).
	Queues []Queue `json:"queues"`
	// Mixes are the kinds of job; each arrives as a Poisson stream.
	Mixes []Mix `json:"mixes"`
	// MaxPendingJobs caps the jobs of a queue waiting for their gang in
	// the scheduler at once (YARN keeps the others ACCEPTED, by its
	// maximum-am-resource-percent); the rest wait outside, in order.
	MaxPendingJobs int `json:"maxPendingJobs"`
}

// Queue is a leaf queue.
type Queue struct {
	Name             string  `json:"name"`
	GuaranteePercent float64 `json:"guaranteePercent"`
	MaxPercent       float64 `json:"maxPercent,omitempty"`
	Weight           float64 `json:"weight,omitempty"`
	// MaxParallelApps caps the queue's applications in the scheduler
	// at once, running or waiting for their gang (CapacityScheduler's
	// yarn.scheduler.capacity.<queue>.max-parallel-apps); later ones wait,
	// ACCEPTED, in order. Zero: no cap.
	MaxParallelApps int `json:"maxParallelApps,omitempty"`
}

// Mix is a kind of job: MapReduce-like (a container per task) or
// Spark-like (fewer, larger, longer executors).
type Mix struct {
	Name  string `json:"name"`
	Queue string `json:"queue"`
	// PerHour is the mean arrival rate; NightFactor multiplies it between
	// the trough and the morning (batch windows run at night).
	PerHour     float64 `json:"perHour"`
	NightFactor float64 `json:"nightFactor,omitempty"`
	// AM and Worker are the containers' requests.
	AM     Size `json:"am"`
	Worker Size `json:"worker"`
	// MinWorkers are the job's gang (medium tier, with the AM);
	// ElasticWorkers how many more may run at once (low tier).
	MinWorkers     IntRange `json:"minWorkers"`
	ElasticWorkers IntRange `json:"elasticWorkers"`
	// Tasks is how many tasks the job runs, each in a container of its
	// own (MapReduce) or, with ReuseContainers, one after another in the
	// job's executors until none is left (Spark); TaskSeconds how long
	// one runs at full speed (log-normal).
	Tasks           IntRange  `json:"tasks"`
	ReuseContainers bool      `json:"reuseContainers,omitempty"`
	TaskSeconds     LogNormal `json:"taskSeconds"`
	// CPUUsageRatio and MemoryUsageRatio are a worker's usage over its
	// request.
	CPUUsageRatio    float64 `json:"cpuUsageRatio"`
	MemoryUsageRatio float64 `json:"memoryUsageRatio"`
}

// Size is a container's request.
type Size struct {
	MilliCPU  int64   `json:"milliCPU"`
	MemoryGiB float64 `json:"memoryGiB"`
}

// IntRange is drawn uniformly from [Min, Max].
type IntRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// LogNormal is a duration distribution by its median and the standard
// deviation of its logarithm, capped at Max seconds.
type LogNormal struct {
	Median float64 `json:"median"`
	Sigma  float64 `json:"sigma"`
	Max    float64 `json:"max,omitempty"`
}

// Intervals of the control loops. Production runs the agent every second
// and the tide every 30 s; the simulator samples coarser where the
// decision does not change faster (the agent's peak window is minutes).
type Intervals struct {
	// Schedule is a scheduling cycle (weft-rm runs one per AM heartbeat
	// and change; the simulator on this period).
	Schedule metav1.Duration `json:"schedule"`
	// Agent is a node agent's measurement and decision.
	Agent metav1.Duration `json:"agent"`
	// Tide is the tidal controller's decision.
	Tide metav1.Duration `json:"tide"`
	// Scale is the online ReplicaSet's resize.
	Scale metav1.Duration `json:"scale"`
	// Sample is how often utilization is recorded.
	Sample metav1.Duration `json:"sample"`
	// Drain is how long evicting a lent node's online pods takes (their
	// termination grace).
	Drain metav1.Duration `json:"drain"`
	// PreemptionGrace is the notice a queue's preemption victim's AM gets
	// (weft-rm's --preemption-grace).
	PreemptionGrace metav1.Duration `json:"preemptionGrace"`
}

// Policy is a way to run the day.
type Policy string

// The policies compared.
const (
	// OnlineOnly runs no batch work: the utilization to beat.
	OnlineOnly Policy = "online-only"
	// StaticSplit dedicates StaticBatchPercent of the nodes to batch work
	// all day.
	StaticSplit Policy = "static-split"
	// RequestGap lends every node what online pods do not request
	// (allocatable − requests), without a box: batch work slows when online
	// work uses its CPU and is evicted under memory pressure.
	RequestGap Policy = "request-gap"
	// TideNoNotice lends whole nodes by the tide and takes them back at
	// once, killing what runs there (Katalyst's tide).
	TideNoNotice Policy = "tide-no-notice"
	// TideNotice is Weft's tide: taken back after the pool's notice.
	TideNotice Policy = "weft-tide"
	// TideReclaim is Weft's tide with notice plus usage-based reclaim on
	// the online nodes, held in the big box by the node agent.
	TideReclaim Policy = "weft-tide+reclaim"
)

// Policies is every policy, in the order tables list them.
var Policies = []Policy{OnlineOnly, StaticSplit, RequestGap, TideNoNotice, TideNotice, TideReclaim}

// cost ranks policies by how much a run of them costs.
func (p Policy) cost() int {
	switch p {
	case TideReclaim, RequestGap:
		return 3
	case TideNoNotice, TideNotice:
		return 2
	case StaticSplit:
		return 1
	}
	return 0
}

func (p Policy) batch() bool        { return p != OnlineOnly }
func (p Policy) tidal() bool        { return p == TideNoNotice || p == TideNotice || p == TideReclaim }
func (p Policy) usageReclaim() bool { return p == TideReclaim }

// DefaultScenario is the realistic default day on n nodes: a 40% swing
// with the online peak at 20:00 and the trough at 04:00, replicas using
// 35% of the CPU they request, and a Spark and a MapReduce stream in two
// queues, busier at night.
func DefaultScenario(n int) Scenario {
	sec := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }
	notice := sec(10 * time.Minute)
	scale := float64(n) / 5000
	return Scenario{
		Seed:     1,
		Start:    metav1.NewTime(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)),
		Duration: sec(24 * time.Hour),
		WarmUp:   sec(3 * time.Hour),
		Cluster:  Cluster{Nodes: n, MilliCPU: 32000, MemoryGiB: 128, SystemMilliCPU: 1000, SystemMemoryGiB: 4},
		Online: Online{PodMilliCPU: 4000, PodMemoryGiB: 8, CPUUsageRatio: 0.35, MemoryUsageRatio: 0.7,
			PeakRequestPercent: 70, SwingPercent: 40, PeakHour: 20, TroughHour: 4, NoisePercent: 5},
		Batch: Batch{
			Queues: []Queue{{Name: "etl", GuaranteePercent: 8, Weight: 3, MaxParallelApps: max(1, int(1000*scale))},
				{Name: "adhoc", GuaranteePercent: 2, Weight: 1, MaxParallelApps: max(1, int(400*scale))}},
			Mixes: []Mix{
				{Name: "spark", Queue: "etl", PerHour: 300 * scale, NightFactor: 1.5,
					AM: Size{MilliCPU: 1000, MemoryGiB: 4}, Worker: Size{MilliCPU: 5000, MemoryGiB: 20},
					MinWorkers: IntRange{2, 6}, ElasticWorkers: IntRange{10, 40}, Tasks: IntRange{200, 2000}, ReuseContainers: true,
					TaskSeconds: LogNormal{Median: 300, Sigma: 0.8, Max: 3600}, CPUUsageRatio: 0.9, MemoryUsageRatio: 0.85},
				{Name: "mapreduce", Queue: "adhoc", PerHour: 60 * scale, NightFactor: 1.5,
					AM: Size{MilliCPU: 1000, MemoryGiB: 2}, Worker: Size{MilliCPU: 2000, MemoryGiB: 4},
					MinWorkers: IntRange{2, 10}, ElasticWorkers: IntRange{10, 60}, Tasks: IntRange{10, 150},
					TaskSeconds: LogNormal{Median: 600, Sigma: 0.6, Max: 3600}, CPUUsageRatio: 0.9, MemoryUsageRatio: 0.8},
			},
			MaxPendingJobs: 50,
		},
		Tide:               v1alpha1.TidePoolSpec{WatermarkPercent: 90, BandPercent: 5, Notice: &notice},
		Colocation:         colocation.DefaultConfig(),
		StaticBatchPercent: 20,
		NodesToScore:       100,
		Intervals: Intervals{Schedule: sec(time.Minute), Agent: sec(30 * time.Second), Tide: sec(30 * time.Second),
			Scale: sec(time.Minute), Sample: sec(time.Minute), Drain: sec(30 * time.Second), PreemptionGrace: sec(15 * time.Second)},
		Policies: Policies,
	}
}

// LoadScenario reads a scenario from YAML over DefaultScenario (with the
// node count the file sets, 5,000 if it sets none). Unknown fields are an
// error.
func LoadScenario(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	return ParseScenario(data)
}

// ParseScenario is LoadScenario of data.
func ParseScenario(data []byte) (Scenario, error) {
	var probe struct {
		Cluster struct {
			Nodes int `json:"nodes"`
		} `json:"cluster"`
	}
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	s := DefaultScenario(max(probe.Cluster.Nodes, 0))
	if probe.Cluster.Nodes == 0 {
		s = DefaultScenario(5000)
	}
	// Lists replace the defaults' rather than merge into them.
	s.Batch.Queues, s.Batch.Mixes, s.Policies = nil, nil, nil
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return Scenario{}, fmt.Errorf("scenario: %w", err)
	}
	def := DefaultScenario(s.Cluster.Nodes)
	if s.Batch.Queues == nil {
		s.Batch.Queues = def.Batch.Queues
	}
	if s.Batch.Mixes == nil {
		s.Batch.Mixes = def.Batch.Mixes
	}
	if s.Policies == nil {
		s.Policies = Policies
	}
	return s, s.Validate()
}

// Validate tells what is wrong with s, all at once.
func (s Scenario) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if s.Duration.Duration <= 0 || s.WarmUp.Duration < 0 {
		bad("duration %s must be positive, warmUp %s not negative", s.Duration.Duration, s.WarmUp.Duration)
	}
	c := s.Cluster
	if c.Nodes <= 0 || c.MilliCPU <= 0 || c.MemoryGiB <= 0 {
		bad("cluster: nodes, milliCPU and memoryGiB must be positive")
	}
	if c.SystemMilliCPU >= c.MilliCPU || c.SystemMemoryGiB >= c.MemoryGiB {
		bad("cluster: the system's usage leaves nothing")
	}
	for i, x := range c.Extra {
		if x.MilliCPU <= c.SystemMilliCPU || x.MemoryGiB <= float64(c.SystemMemoryGiB) {
			bad("cluster: extra node %d (%dm, %g GiB): the system's usage leaves nothing", i, x.MilliCPU, x.MemoryGiB)
		}
	}
	o := s.Online
	if o.PodMilliCPU <= 0 || o.PodMemoryGiB <= 0 || o.PodMilliCPU > c.MilliCPU {
		bad("online: a replica's requests must be positive and fit a node")
	}
	if o.PeakRequestPercent <= 0 || o.PeakRequestPercent > 100 || o.SwingPercent < 0 || o.SwingPercent >= 100 {
		bad("online: peakRequestPercent in (0, 100], swingPercent in [0, 100)")
	}
	if o.CPUUsageRatio <= 0 || o.CPUUsageRatio > 1 || o.MemoryUsageRatio <= 0 || o.MemoryUsageRatio > 1 {
		bad("online: usage ratios in (0, 1]")
	}
	if o.PeakHour < 0 || o.PeakHour >= 24 || o.TroughHour < 0 || o.TroughHour >= 24 || o.PeakHour == o.TroughHour {
		bad("online: peakHour and troughHour in [0, 24) and apart")
	}
	queues := map[string]bool{}
	for _, q := range s.Batch.Queues {
		if q.Name == "" || queues[q.Name] {
			bad("batch: queue %q unnamed or twice", q.Name)
		}
		queues[q.Name] = true
	}
	for _, m := range s.Batch.Mixes {
		if !queues[m.Queue] {
			bad("batch: mix %s: queue %q is not one of batch.queues", m.Name, m.Queue)
		}
		if m.PerHour < 0 || m.Worker.MilliCPU <= 0 || m.AM.MilliCPU <= 0 || m.Tasks.Min < 1 || m.Tasks.Max < m.Tasks.Min ||
			m.MinWorkers.Min < 1 || m.MinWorkers.Max < m.MinWorkers.Min || m.ElasticWorkers.Max < m.ElasticWorkers.Min ||
			m.TaskSeconds.Median <= 0 || m.CPUUsageRatio <= 0 || m.MemoryUsageRatio <= 0 {
			bad("batch: mix %s: rates, sizes, ranges and ratios must be positive and ordered", m.Name)
		}
	}
	if s.Batch.MaxPendingJobs <= 0 {
		bad("batch: maxPendingJobs must be positive")
	}
	if s.NodesToScore < 0 {
		bad("nodesToScore %d is negative", s.NodesToScore)
	}
	if s.StaticBatchPercent < 0 || s.StaticBatchPercent > 100 {
		bad("staticBatchPercent %d is not in [0, 100]", s.StaticBatchPercent)
	}
	iv := s.Intervals
	for name, d := range map[string]time.Duration{"schedule": iv.Schedule.Duration, "agent": iv.Agent.Duration, "tide": iv.Tide.Duration,
		"scale": iv.Scale.Duration, "sample": iv.Sample.Duration} {
		if d <= 0 {
			bad("intervals: %s must be positive", name)
		}
	}
	if err := s.Colocation.Validate(); err != nil {
		bad("colocation: %w", err)
	}
	for _, p := range s.Policies {
		known := false
		for _, k := range Policies {
			known = known || p == k
		}
		if !known {
			bad("policy %q is not one of %v", p, Policies)
		}
	}
	return errors.Join(errs...)
}

// WithNodes is s on n nodes, its jobs' arrival rates and its queues'
// parallel applications scaled with the cluster, so that batch demand
// keeps its share of the capacity.
func (s Scenario) WithNodes(n int) Scenario {
	old := s.Cluster.Nodes
	s.Cluster.Nodes = n
	f := float64(n) / float64(old)
	mixes := slices.Clone(s.Batch.Mixes)
	for i := range mixes {
		mixes[i].PerHour *= f
	}
	queues := slices.Clone(s.Batch.Queues)
	for i := range queues {
		queues[i].MaxParallelApps = int(math.Ceil(float64(queues[i].MaxParallelApps) * f))
	}
	s.Batch.Mixes, s.Batch.Queues = mixes, queues
	return s
}
