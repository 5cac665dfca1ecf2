package colocation

import (
	"fmt"
	"time"
)

// Amount is CPU in millicores and memory in bytes.
type Amount struct {
	MilliCPU int64
	Memory   int64
}

// Published is what a node shows of offer while its batch pods request
// held: offer, but per resource never less than held (Agent.publish says
// why). Room for new work, Published less held, is offer less held or
// nothing, as with offer itself.
func Published(offer, held Amount) Amount {
	return Amount{MilliCPU: max(offer.MilliCPU, held.MilliCPU), Memory: max(offer.Memory, held.Memory)}
}

// Usage is one measurement of the node: what online work (every process
// that is not a batch pod's: online pods, system daemons, the kubelet)
// and batch work use.
type Usage struct {
	At time.Time
	// Online and Batch: CPU is the rate since the previous measurement,
	// memory the working set (usage less inactive file pages, which the
	// kernel gives back under pressure).
	Online, Batch Amount
	// NodeMemory is the node's memory in use: MemTotal − MemAvailable,
	// or the working set of the node's cgroup where the node is one of
	// several on the machine.
	NodeMemory int64
	// Capacity is, where the node is one of several on the machine, what
	// its cgroup can hold (Meter.nodeCgroup); zero on a whole machine,
	// which the Node's allocatable describes.
	Capacity Amount
}

// within is a bounded by c, per resource where c has a bound.
func (a Amount) within(c Amount) Amount {
	if c.MilliCPU > 0 {
		a.MilliCPU = min(a.MilliCPU, c.MilliCPU)
	}
	if c.Memory > 0 {
		a.Memory = min(a.Memory, c.Memory)
	}
	return a
}

// Peaks remembers recent measurements and tells online usage at its peak
// over a window: the reclaimable amount shrinks the moment online usage
// rises and grows back only once the rise has passed the whole window.
type Peaks struct {
	samples []Usage // oldest first
}

// Observe records a measurement and forgets those older than window.
func (p *Peaks) Observe(u Usage, window time.Duration) {
	p.samples = append(p.samples, u)
	cut := 0
	for cut < len(p.samples)-1 && u.At.Sub(p.samples[cut].At) > window {
		cut++
	}
	p.samples = p.samples[cut:]
}

// Last is the newest measurement.
func (p *Peaks) Last() (Usage, bool) {
	if len(p.samples) == 0 {
		return Usage{}, false
	}
	return p.samples[len(p.samples)-1], true
}

// Online is online usage at its peak over the remembered window.
func (p *Peaks) Online() Amount {
	var peak Amount
	for _, s := range p.samples {
		peak.MilliCPU = max(peak.MilliCPU, s.Online.MilliCPU)
		peak.Memory = max(peak.Memory, s.Online.Memory)
	}
	return peak
}

// Decision is what the agent does with one measurement.
type Decision struct {
	// Box is what all batch work of the node may use now: the big box's
	// CPU quota and memory limit.
	Box Amount
	// Offer is what is offered to new batch work (published on the Node,
	// before hysteresis): Box, or less inside a window's grace or a
	// cooldown.
	Offer Amount
	// Why says why Offer is below Box, empty when it is not.
	Why string
	// EvictMemory is how many bytes of batch work's memory must go now;
	// EvictWhy says why, EvictKind in a word ("memory", "window").
	EvictMemory         int64
	EvictWhy, EvictKind string
}

// Decide computes the reclaimable capacity of a node from its allocatable
// and recent usage:
//
//	reclaimable = watermark × allocatable − online usage at its peak
//
// per resource (Koordinator's and Katalyst's formula), scaled by the time
// window in effect; and how much memory must be evicted: whatever takes
// the node above its eviction watermark, and inside a window whatever
// batch work holds beyond the window's share.
func Decide(cfg Config, now time.Time, alloc Amount, peaks *Peaks, cooldownUntil time.Time) Decision {
	last, ok := peaks.Last()
	if !ok {
		return Decision{Why: "no measurement yet"}
	}
	online := peaks.Online()
	reclaim := Amount{
		MilliCPU: max(0, int64(float64(alloc.MilliCPU)*cfg.CPUWatermark/100)-online.MilliCPU),
		Memory:   max(0, int64(float64(alloc.Memory)*cfg.MemoryWatermark/100)-online.Memory),
	}
	share, inGrace := cfg.windowAt(now)
	d := Decision{Box: Amount{MilliCPU: int64(float64(reclaim.MilliCPU) * share), Memory: int64(float64(reclaim.Memory) * share)}}
	d.Offer = d.Box
	switch {
	case now.Before(cooldownUntil):
		d.Offer, d.Why = Amount{}, "cooling down after an eviction until "+cooldownUntil.UTC().Format(time.RFC3339)
	case inGrace:
		d.Offer, d.Why = Amount{}, "a colocation window starts within "+cfg.WindowGrace.Duration.String()+": running work drains, no new work"
	case share < 1:
		d.Why = fmt.Sprintf("colocation window: batch keeps %g%% of the reclaimable capacity", share*100)
	}
	// Memory the node must get back: above the eviction watermark, down
	// to it; inside a window, what batch work holds beyond its share.
	if limit := int64(float64(alloc.Memory) * cfg.MemoryEvictionWatermark / 100); last.NodeMemory > limit {
		d.EvictMemory, d.EvictKind = last.NodeMemory-limit, "memory"
		d.EvictWhy = fmt.Sprintf("memory pressure: the node uses %d MiB, above the eviction watermark %g%% of its allocatable %d MiB",
			last.NodeMemory>>20, cfg.MemoryEvictionWatermark, alloc.Memory>>20)
	}
	if over := last.Batch.Memory - d.Box.Memory; share < 1 && over > d.EvictMemory {
		d.EvictMemory, d.EvictKind = over, "window"
		d.EvictWhy = fmt.Sprintf("colocation window: batch work holds %d MiB, above the window's %d MiB", last.Batch.Memory>>20, d.Box.Memory>>20)
	}
	return d
}

// Hysteresis publishes a new offer only when it moved by more than a
// band, so that the scheduler and the kubelet do not chase every sample.
// Falling to nothing, or rising from nothing, is always published: a
// node that must take no new work says so at once.
type Hysteresis struct {
	last      Amount
	published bool
}

// Next is the amount to publish for offer, and whether it changed.
func (h *Hysteresis) Next(offer, alloc Amount, bandPercent float64) (Amount, bool) {
	moved := func(now, was, of int64) bool {
		if (now == 0) != (was == 0) {
			return true
		}
		d := now - was
		if d < 0 {
			d = -d
		}
		return float64(d) > float64(of)*bandPercent/100
	}
	if h.published && !moved(offer.MilliCPU, h.last.MilliCPU, alloc.MilliCPU) && !moved(offer.Memory, h.last.Memory, alloc.Memory) {
		return h.last, false
	}
	changed := !h.published || offer != h.last
	h.last, h.published = offer, true
	return offer, changed
}

// Reset makes the next offer publish whatever it is (after a failed
// write, or once the Node shows another number than the last written).
func (h *Hysteresis) Reset() { h.published = false }
