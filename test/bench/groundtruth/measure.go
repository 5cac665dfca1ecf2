package main

import (
	"maps"
	"sync"
	"time"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

// load is what one node uses at an instant, as its cgroups and /proc say
// (the kernel double writes them from the usage model; see node.go).
type load struct {
	// OnlineMilliCPU and OnlineMemory are the online replicas' and the
	// system's; BatchMilliCPU and BatchMemory, the batch pods' (their CPU
	// within the big box's quota).
	OnlineMilliCPU, BatchMilliCPU int64
	OnlineMemory, BatchMemory     int64
}

// meter measures the real run as the simulation defines its numbers
// (sim.Result): at each sample, the cluster's CPU and memory in use over
// its allocatable, capped at 100%; the run's CPUAvg and MemAvg are their
// means over the samples from the scenario's Start on, and its kill rate
// the task attempts killed before they were done over those started.
type meter struct {
	// Total is the nodes' allocatable added up (the real node's too).
	Total colocation.Amount
	// From is the scenario's Start: the warm-up before it is not
	// measured, as the simulation counts from there.
	From time.Time

	mu               sync.Mutex
	samples          []sim.Sample
	attempts, killed int
	killedBy         map[string]int
	// noticed counts the containers told to go (a tide's notice or a
	// queue's reclaim), as sim.Result's Noticed plus Preempted.
	noticed int
	// transitions and takenBack count tide moves as sim.Result's.
	transitions, takenBack int
}

// notice counts a container told to go at at (the scenario's time).
func (m *meter) notice(at time.Time) { m.tally(at, func() { m.noticed++ }) }

// transition counts a node's move to tide state to at at: as the
// simulation's Transitions, and its TakenBack when the tide starts to
// take the node back from batch work.
func (m *meter) transition(at time.Time, to v1alpha1.NodeState) {
	m.tally(at, func() {
		m.transitions++
		if to == v1alpha1.StateOfflineToOnline {
			m.takenBack++
		}
	})
}

// tally runs add under the meter's lock if at is in the measured window.
func (m *meter) tally(at time.Time, add func()) {
	if at.Before(m.From) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	add()
}

// record adds a sample at at (the scenario's time) of loads, one per
// node.
func (m *meter) record(at time.Time, loads []load) {
	var cpu, mem, onCPU, batchCPU float64
	for _, l := range loads {
		onCPU += float64(l.OnlineMilliCPU)
		batchCPU += float64(l.BatchMilliCPU)
		cpu += float64(l.OnlineMilliCPU + l.BatchMilliCPU)
		mem += float64(l.OnlineMemory + l.BatchMemory)
	}
	totalCPU, totalMem := float64(m.Total.MilliCPU), float64(m.Total.Memory)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, sim.Sample{At: at, CPU: 100 * min(cpu, totalCPU) / totalCPU, Memory: 100 * min(mem, totalMem) / totalMem,
		OnlineCPU: 100 * onCPU / totalCPU, BatchCPU: 100 * batchCPU / totalCPU, Kills: m.killed})
}

// started counts a task attempt started at at (the scenario's time),
// killedTask one ended then by a kill before it was done (it runs again:
// another attempt). The warm-up's are not counted.
// cause is a sim Kill constant (killCause).
func (m *meter) started(at time.Time) { m.count(at, "") }
func (m *meter) killedTask(at time.Time, cause string) {
	m.count(at, cause)
}

// count counts an attempt started when cause is empty, else one killed
// for cause.
func (m *meter) count(at time.Time, cause string) {
	m.tally(at, func() {
		if cause == "" {
			m.attempts++
			return
		}
		m.killed++
		if m.killedBy == nil {
			m.killedBy = map[string]int{}
		}
		m.killedBy[cause]++
	})
}

// result is the run's sim.Result over the samples from From on.
func (m *meter) result() *sim.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &sim.Result{Policy: "real", TaskAttempts: m.attempts, TasksKilled: m.killed, TasksKilledBy: maps.Clone(m.killedBy), Noticed: m.noticed,
		Transitions: m.transitions, TakenBack: m.takenBack}
	for _, s := range m.samples {
		if !s.At.Before(m.From) {
			r.Samples = append(r.Samples, s)
		}
	}
	r.Summarize()
	return r
}
