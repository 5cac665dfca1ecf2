package main

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/translator"
)

// clock maps the real run's wall time onto the scenario's virtual time:
// one simulated hour passes in Hour of wall time, so that a few hours of
// the day fit in minutes.
type clock struct {
	// Wall0 is the wall instant at which the scenario's time is Sim0.
	Wall0, Sim0 time.Time
	// Hour is how much wall time a simulated hour takes.
	Hour time.Duration
}

// factor is how many simulated seconds pass per wall second.
func (c clock) factor() float64 { return float64(time.Hour) / float64(c.Hour) }

// Sim is the scenario's instant at wall instant t.
func (c clock) Sim(t time.Time) time.Time {
	return c.Sim0.Add(time.Duration(float64(t.Sub(c.Wall0)) * c.factor()))
}

// Wall is the wall instant at which the scenario reaches t.
func (c clock) Wall(t time.Time) time.Time { return c.Wall0.Add(c.Scale(t.Sub(c.Sim0))) }

// Scale is a simulated span in wall time.
func (c clock) Scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / c.factor())
}

// shrink is s on nodes nodes, over the length hours of the day that start
// at from (a time of day), warmed up warmUp before, run under the one
// policy the real stack is — weft-tide with notice and the node agent's
// usage-based reclaim in the big box — and with the agent's big box not
// bound to a cpuset, as a kwok node has no CPU topology.
func shrink(s sim.Scenario, nodes int, from, length, warmUp time.Duration) sim.Scenario {
	s = s.WithNodes(nodes)
	y, m, d := s.Start.UTC().Date()
	s.Start = metav1.NewTime(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Add(from))
	s.Duration = metav1.Duration{Duration: length}
	s.WarmUp = metav1.Duration{Duration: warmUp}
	s.Policies = []sim.Policy{sim.TideReclaim}
	s.Colocation.CPUSet = false
	return s
}

// periods are the real run's settings: the scenario's spans and control
// periods in wall time.
type periods struct {
	// Tide is the TidePool's spec with its notice and drain timeout in
	// wall time.
	Tide v1alpha1.TidePoolSpec
	// Agent is the node agent's configuration with its interval, peak
	// window, window grace, cooldown and LowerAfter in wall time.
	Agent colocation.Config
	// PreemptionGrace is weft-rm's --preemption-grace; NodeCooldown its
	// --node-cooldown (5 simulated minutes, its default).
	PreemptionGrace, NodeCooldown time.Duration
	// Scale is how often the online Deployment is resized; Sample, how
	// often the cluster is measured; Heartbeat, the AMs' allocate period
	// (YARN's 1 s, simulated: it is the scheduling cycle the simulation
	// runs every Intervals.Schedule).
	Scale, Sample, Heartbeat time.Duration
	// Profile is the node plugin's translator profile (its vcore size,
	// weft-rm's --milli-cpu-per-vcore): translator.Weft, or
	// withRealNode's.
	Profile translator.Profile
}

// minAgentInterval is the least interval the node agent's configuration
// accepts (colocation.Config.Validate).
const minAgentInterval = 100 * time.Millisecond

// scaled is s's periods on c. It fails where a period would fall below
// what the real component accepts: the compression is too strong.
func scaled(s sim.Scenario, c clock) (periods, error) {
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: c.Scale(d)} }
	p := periods{Tide: *s.Tide.DeepCopy(), Agent: s.Colocation}
	notice := time.Duration(0)
	if s.Tide.Notice != nil {
		notice = s.Tide.Notice.Duration
	}
	p.Tide.Notice = dur(notice)
	// The simulation drains a lent node's replicas in Intervals.Drain
	// (their termination grace); the tide gives up after its timeout.
	if s.Tide.DrainTimeout != nil {
		p.Tide.DrainTimeout = dur(s.Tide.DrainTimeout.Duration)
	}
	p.Agent.Interval = *dur(s.Intervals.Agent.Duration)
	p.Agent.PeakWindow = *dur(s.Colocation.PeakWindow.Duration)
	p.Agent.WindowGrace = *dur(s.Colocation.WindowGrace.Duration)
	p.Agent.Cooldown = *dur(s.Colocation.Cooldown.Duration)
	p.Agent.LowerAfter = *dur(s.Colocation.LowerAfter.Duration)
	if p.Agent.Interval.Duration < minAgentInterval {
		return periods{}, fmt.Errorf("the agent's interval of %s is %s of wall time, below the %s it accepts: compress less",
			s.Intervals.Agent.Duration, p.Agent.Interval.Duration, minAgentInterval)
	}
	p.PreemptionGrace = c.Scale(s.Intervals.PreemptionGrace.Duration)
	p.NodeCooldown = c.Scale(5 * time.Minute)
	p.Scale = c.Scale(s.Intervals.Scale.Duration)
	p.Sample = c.Scale(s.Intervals.Sample.Duration)
	p.Heartbeat = c.Scale(s.Intervals.Schedule.Duration)
	// LowerAfter's default (10 s) covers YARN's AM heartbeat of a second
	// or three; here an AM's allocate period is the simulation's
	// scheduling interval, a minute, which the scaled default would not
	// cover: the kubelet would reject what was granted before a fall.
	p.Agent.LowerAfter.Duration = max(p.Agent.LowerAfter.Duration, 2*p.Heartbeat)
	return p, p.Agent.Validate()
}
