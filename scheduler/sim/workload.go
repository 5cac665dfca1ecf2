package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Workload is a day's input (its warm-up first), generated once from the scenario's seed and
// replayed, unchanged, under every policy: the online replica count at
// each scale step and the batch jobs in arrival order.
type Workload struct {
	// Replicas is the online service's replica count at
	// Start − WarmUp + i×Scale.
	Replicas []int
	// Jobs are the batch jobs, by arrival.
	Jobs []Job
	// seed keys the per-node usage noise (noise).
	seed uint64
}

// Job is one batch job as submitted.
type Job struct {
	At      time.Time
	Mix     int // index into Scenario.Batch.Mixes
	Queue   string
	Min     int // gang workers (medium tier)
	Elastic int // more workers at once (low tier)
	// Tasks are the tasks' durations at full speed, in seconds; a killed
	// task runs again from the start.
	Tasks []float64
}

// Generate makes the scenario's workload. The same scenario (seed
// included) always makes the same workload.
func Generate(s Scenario) *Workload {
	rng := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	w := &Workload{seed: s.Seed}
	o := s.Online
	start := s.Start.Add(-s.WarmUp.Duration)
	length := s.WarmUp.Duration + s.Duration.Duration
	peak := o.PeakRequestPercent / 100 * float64(int64(s.Cluster.Nodes)*s.Cluster.MilliCPU) / float64(o.PodMilliCPU)
	steps := int(length/s.Intervals.Scale.Duration) + 1
	// The noise is a slow AR(1) walk whose stationary deviation is
	// NoisePercent: replicas wander around the curve for tens of minutes,
	// as a service's load does, rather than jumping each minute.
	const a = 0.95
	sigma := o.NoisePercent / 100
	n := rng.NormFloat64() * sigma
	for i := range steps {
		at := start.Add(time.Duration(i) * s.Intervals.Scale.Duration)
		r := peak * (1 - o.SwingPercent/100*(1-o.shape(at))) * (1 + n)
		w.Replicas = append(w.Replicas, max(0, int(math.Round(r))))
		n = a*n + math.Sqrt(1-a*a)*sigma*rng.NormFloat64()
	}
	for mi, m := range s.Batch.Mixes {
		peakRate := m.PerHour * max(1, m.NightFactor)
		if peakRate <= 0 {
			continue
		}
		// A Poisson stream thinned to the hour's rate.
		for t := 0.0; ; {
			t += rng.ExpFloat64() / peakRate * 3600
			at := start.Add(time.Duration(t * float64(time.Second)))
			if !at.Before(start.Add(length)) {
				break
			}
			rate := m.PerHour
			if o.night(at) && m.NightFactor > 0 {
				rate *= m.NightFactor
			}
			if rng.Float64()*peakRate > rate {
				continue
			}
			j := Job{At: at, Mix: mi, Queue: m.Queue, Min: m.MinWorkers.draw(rng), Elastic: m.ElasticWorkers.draw(rng)}
			j.Tasks = make([]float64, m.Tasks.draw(rng))
			for k := range j.Tasks {
				j.Tasks[k] = m.TaskSeconds.draw(rng)
			}
			w.Jobs = append(w.Jobs, j)
		}
	}
	slices.SortStableFunc(w.Jobs, func(a, b Job) int { return a.At.Compare(b.At) })
	return w
}

// shape is the day's curve at t: 1 at the peak hour, 0 at the trough, a
// half cosine between them each way.
func (o Online) shape(t time.Time) float64 {
	h := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	rise := math.Mod(o.PeakHour-o.TroughHour+24, 24)
	since := math.Mod(h-o.TroughHour+24, 24)
	if since <= rise {
		return 0.5 - 0.5*math.Cos(math.Pi*since/rise)
	}
	return 0.5 + 0.5*math.Cos(math.Pi*(since-rise)/(24-rise))
}

// night is the four hours either side of the trough.
func (o Online) night(t time.Time) bool {
	h := float64(t.Hour()) + float64(t.Minute())/60
	d := math.Abs(math.Mod(h-o.TroughHour+36, 24) - 12)
	return d >= 8
}

func (r IntRange) draw(rng *rand.Rand) int {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + rng.IntN(r.Max-r.Min+1)
}

func (l LogNormal) draw(rng *rand.Rand) float64 {
	v := l.Median * math.Exp(l.Sigma*rng.NormFloat64())
	if l.Max > 0 {
		v = min(v, l.Max)
	}
	return max(v, 1)
}

// noise is a node's usage noise at a sample: normal with deviation sigma,
// the same for the same node and sample under every policy, whatever else
// each policy drew before.
func (w *Workload) noise(node, sample int, sigma float64) float64 {
	h := splitmix(w.seed ^ splitmix(uint64(node)<<32|uint64(uint32(sample))))
	u1 := (float64(h>>11) + 0.5) / (1 << 53)
	u2 := float64(splitmix(h)>>11) / (1 << 53)
	return sigma * math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
