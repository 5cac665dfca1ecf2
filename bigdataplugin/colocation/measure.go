package colocation

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

// PodCgroup is a batch pod's cgroup (relative to the hierarchy's root),
// by the pod's UID.
type PodCgroup struct {
	UID, Path string
}

// Meter measures the node: totals from /proc, batch pods from their
// cgroups; online usage is the rest — online pods, system daemons and
// the kubelet alike, all of which batch work must leave room for.
type Meter struct {
	FS       *cgroups.FS
	ProcRoot string
	NumCPU   int

	prevAt   time.Time
	prevBusy time.Duration
	prevPod  map[string]time.Duration // batch pods' cumulative CPU by UID
}

// Measure reads the node and its batch pods at now. The first call only
// primes the CPU counters (a rate needs two readings) and says so with
// ok false. A batch pod whose cgroup vanished mid-read (it ended) is left
// out; any other unreadable file is an error: the agent is blind.
func (m *Meter) Measure(now time.Time, batch []PodCgroup) (u Usage, perPod map[string]Amount, ok bool, err error) {
	cpu, err := procstat.CPU(m.ProcRoot)
	if err != nil {
		return Usage{}, nil, false, fmt.Errorf("measure node CPU: %w", err)
	}
	mem, err := procstat.Memory(m.ProcRoot)
	if err != nil {
		return Usage{}, nil, false, fmt.Errorf("measure node memory: %w", err)
	}
	elapsed := now.Sub(m.prevAt)
	prime := m.prevPod == nil || elapsed <= 0
	perPod = map[string]Amount{}
	cum := map[string]time.Duration{}
	var batchCPU time.Duration
	for _, p := range batch {
		used, err := m.FS.CPUUsage(p.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the pod ended between the list and the read
		}
		if err != nil {
			return Usage{}, nil, false, fmt.Errorf("measure batch pod %s: %w", p.UID, err)
		}
		ms, err := m.FS.Memory(p.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Usage{}, nil, false, fmt.Errorf("measure batch pod %s: %w", p.UID, err)
		}
		cum[p.UID] = used
		// A pod first seen since the last reading used, in that interval,
		// at most its whole life's CPU, and at most every CPU of the node.
		delta := used
		if prev, seen := m.prevPod[p.UID]; seen && prev <= used {
			delta = used - prev
		}
		if !prime {
			delta = min(delta, elapsed*time.Duration(max(1, m.NumCPU)))
			batchCPU += delta
			perPod[p.UID] = Amount{MilliCPU: rate(delta, elapsed), Memory: int64(ms.WorkingSet)}
		} else {
			perPod[p.UID] = Amount{Memory: int64(ms.WorkingSet)}
		}
		u.Batch.Memory += int64(ms.WorkingSet)
	}
	busy := cpu.Busy - m.prevBusy
	m.prevAt, m.prevBusy, m.prevPod = now, cpu.Busy, cum
	if prime {
		return Usage{}, perPod, false, nil
	}
	u.At = now
	u.Batch.MilliCPU = rate(batchCPU, elapsed)
	u.NodeMemory = int64(mem.Total - mem.Available)
	u.Online.MilliCPU = max(0, rate(busy, elapsed)-u.Batch.MilliCPU)
	u.Online.Memory = max(0, u.NodeMemory-u.Batch.Memory)
	return u, perPod, true, nil
}

// rate is CPU time used over elapsed, in millicores.
func rate(used, elapsed time.Duration) int64 {
	if elapsed <= 0 || used <= 0 {
		return 0
	}
	return int64(float64(used) / float64(elapsed) * 1000)
}
