package sim

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

// Result is one policy's day.
type Result struct {
	Policy Policy
	// Wall is what the run cost in real time.
	Wall time.Duration
	// Utilization in percent of the cluster, over the samples.
	CPUAvg, CPUP95, MemAvg, MemP95 float64
	// Batch work: tasks completed and their CPU time at full speed;
	// containers started; killed before their work was done, by cause,
	// and the CPU time their killed tasks had done.
	TasksDone       int
	WorkCoreSeconds float64
	Started         int
	// TaskAttempts are tasks started, TasksKilled those ended by a kill
	// before they were done (they run again); Killed counts containers,
	// AMs included (AMsKilled).
	TaskAttempts, TasksKilled, AMsKilled int
	Killed                               int
	KillsBy                              map[string]int
	// TasksKilledBy splits TasksKilled by cause (the Kill constants).
	TasksKilledBy   map[string]int
	LostCoreSeconds float64
	JobsSubmitted   int
	JobsDone        int
	// Noticed are containers told their node is taken back; Preempted,
	// those a queue's reclaim chose; SavedByNotice, those of either that
	// finished their task before the deadline.
	Noticed, Preempted, SavedByNotice int
	// Online replicas waiting for a node: the most at once, the longest
	// wait.
	OnlinePendingMax int
	OnlineWaitMax    time.Duration
	// Transitions are tide state changes; TakenBack, the nodes the tide
	// started to take back from batch work (Offline → OfflineToOnline),
	// whose containers are the Noticed.
	Transitions, TakenBack int
	// HotPercent is the share of samples of nodes running online
	// replicas in which the node's CPU was more than 90% busy: where
	// batch work beside online work leaves it no headroom, and its
	// latency suffers (which the simulator does not model otherwise).
	HotPercent      float64
	hot, withOnline int
	Samples         []Sample

	running [records.TierHigh + 1]int
}

// Sample is the cluster at one instant.
type Sample struct {
	At time.Time
	// CPU and Memory utilization in percent, and the part of each that
	// online work (with the system) and batch work use.
	CPU, Memory, OnlineCPU, BatchCPU float64
	// Nodes per tide state: Online, OnlineToOffline, Offline,
	// OfflineToOnline.
	Nodes [4]int
	// Running batch containers by tier: low, medium, high.
	Running [3]int
	// Kills so far; online replicas waiting.
	Kills, OnlinePending int
}

// KillRate is the share of task attempts killed before they were done,
// in percent.
func (r *Result) KillRate() float64 {
	if r.TaskAttempts == 0 {
		return 0
	}
	return 100 * float64(r.TasksKilled) / float64(r.TaskAttempts)
}

func (e *engine) record() {
	var cpu, mem, onCPU, batchCPU float64
	s := Sample{At: e.now, OnlinePending: len(e.pending), Kills: e.r.Killed}
	for _, n := range e.nodes {
		b := n.demandCPU * n.rate
		if n.online > 0 {
			e.r.withOnline++
			if n.onlineCPU+b > 0.9*float64(n.alloc.MilliCPU) {
				e.r.hot++
			}
		}
		onCPU += n.onlineCPU
		batchCPU += b
		cpu += n.onlineCPU + b
		mem += n.onlineMem + n.memUse
		switch n.state {
		case v1alpha1.StateOnline:
			s.Nodes[0]++
		case v1alpha1.StateOnlineToOffline:
			s.Nodes[1]++
		case v1alpha1.StateOffline:
			s.Nodes[2]++
		case v1alpha1.StateOfflineToOnline:
			s.Nodes[3]++
		}
	}
	t := e.sc.Cluster.Total()
	totalCPU, totalMem := float64(t.MilliCPU), float64(t.Memory)
	s.CPU, s.Memory = 100*min(cpu, totalCPU)/totalCPU, 100*min(mem, totalMem)/totalMem
	s.OnlineCPU, s.BatchCPU = 100*onCPU/totalCPU, 100*batchCPU/totalCPU
	s.Running = [3]int{e.r.running[records.TierLow], e.r.running[records.TierMedium], e.r.running[records.TierHigh]}
	e.r.Samples = append(e.r.Samples, s)
}

// finish counts what is still waiting at the end and sums the samples.
func (e *engine) finish() {
	for _, p := range e.pending {
		e.r.OnlineWaitMax = max(e.r.OnlineWaitMax, e.now.Sub(p.created))
	}
	e.r.Summarize()
	if e.r.withOnline > 0 {
		e.r.HotPercent = 100 * float64(e.r.hot) / float64(e.r.withOnline)
	}
}

// Summarize sets the utilization averages and p95s from the samples: a
// run measured elsewhere (the ground truth's real run) is summed up the
// same way as a simulated one.
func (r *Result) Summarize() {
	var cpu, mem []float64
	for _, s := range r.Samples {
		cpu = append(cpu, s.CPU)
		mem = append(mem, s.Memory)
	}
	r.CPUAvg, r.CPUP95 = mean(cpu), percentile(cpu, 95)
	r.MemAvg, r.MemP95 = mean(mem), percentile(mem, 95)
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

// Run generates the scenario's workload once and plays it under each of
// its policies, up to parallel at once (GOMAXPROCS if zero). Each policy
// runs alone in its engine, so the results do not depend on parallel.
func Run(ctx context.Context, s Scenario, parallel int) ([]*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	w := Generate(s)
	if parallel <= 0 {
		parallel = runtime.GOMAXPROCS(0)
	}
	out := make([]*Result, len(s.Policies))
	errs := make([]error, len(s.Policies))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	// The policies that keep the most batch work running cost the most:
	// they start first, so that the last to finish is a cheap one.
	order := make([]int, len(s.Policies))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return s.Policies[b].cost() - s.Policies[a].cost() })
	for _, i := range order {
		p := s.Policies[i]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			e, err := newEngine(&s, w, p)
			if err == nil {
				out[i], err = e.run(ctx)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// WriteTable prints the policies side by side.
func WriteTable(w io.Writer, rs []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tCPU avg %\tCPU p95 %\tmem avg %\tmem p95 %\tbatch core-h\ttasks done\tcontainers\tkill rate %\tkills (tide/evict/preempt)\tlost core-h\tonline pending max\tonline wait max\tonline nodes >90% CPU %\ttransitions\twall s\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%d\t%d\t%.2f\t%d (%d/%d/%d)\t%.0f\t%d\t%s\t%.2f\t%d\t%.1f\t\n", r.Policy,
			r.CPUAvg, r.CPUP95, r.MemAvg, r.MemP95, r.WorkCoreSeconds/3600, r.TasksDone, r.Started, r.KillRate(),
			r.Killed, r.KillsBy[KillTide], r.KillsBy[KillEviction], r.KillsBy[KillPreemption], r.LostCoreSeconds/3600,
			r.OnlinePendingMax, r.OnlineWaitMax.Round(time.Second), r.HotPercent, r.Transitions, r.Wall.Seconds())
	}
	return tw.Flush()
}

// WriteCSV writes every policy's samples, one row per policy and instant.
func WriteCSV(w io.Writer, rs []*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"policy", "time", "cpu_pct", "memory_pct", "online_cpu_pct", "batch_cpu_pct",
		"nodes_online", "nodes_online_to_offline", "nodes_offline", "nodes_offline_to_online",
		"running_low", "running_medium", "running_high", "kills", "online_pending"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	for _, r := range rs {
		for _, s := range r.Samples {
			row := []string{string(r.Policy), s.At.UTC().Format(time.RFC3339), f(s.CPU), f(s.Memory), f(s.OnlineCPU), f(s.BatchCPU)}
			for _, n := range s.Nodes {
				row = append(row, strconv.Itoa(n))
			}
			for _, n := range s.Running {
				row = append(row, strconv.Itoa(n))
			}
			row = append(row, strconv.Itoa(s.Kills), strconv.Itoa(s.OnlinePending))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
