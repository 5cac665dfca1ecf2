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
//
// A node that is one of several on the machine (FS.ForNode: its kubelet
// has a --cgroup-root of its own) is measured from its root cgroup
// instead, since /proc counts every node of the machine: its CPU time,
// its working set, and its capacity from the cgroup's limits.
type Meter struct {
	FS       *cgroups.FS
	ProcRoot string
	// NumCPU is the machine's online CPUs.
	NumCPU int

	prevAt   time.Time
	prevBusy time.Duration
	prevPod  map[string]time.Duration // batch pods' cumulative CPU by UID
}

// Measure reads the node and its batch pods at now. The first call only
// primes the CPU counters (a rate needs two readings) and says so with
// ok false. A batch pod whose cgroup vanished mid-read (it ended) is left
// out; any other unreadable file, the node's cgroup among them, is an
// error: the agent is blind.
func (m *Meter) Measure(now time.Time, batch []PodCgroup) (u Usage, perPod map[string]Amount, ok bool, err error) {
	node, err := m.node()
	if err != nil {
		return Usage{}, nil, false, err
	}
	elapsed := now.Sub(m.prevAt)
	prime := m.prevPod == nil || elapsed <= 0
	// The most CPU time the node's pods can have used in the interval:
	// all the node's CPUs.
	most := elapsed * time.Duration(max(1, m.NumCPU))
	if node.capacity.MilliCPU > 0 {
		most = time.Duration(float64(elapsed) * float64(node.capacity.MilliCPU) / 1000)
	}
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
			delta = min(delta, most)
			batchCPU += delta
			perPod[p.UID] = Amount{MilliCPU: rate(delta, elapsed), Memory: int64(ms.WorkingSet)}
		} else {
			perPod[p.UID] = Amount{Memory: int64(ms.WorkingSet)}
		}
		u.Batch.Memory += int64(ms.WorkingSet)
	}
	busy := node.busy - m.prevBusy
	m.prevAt, m.prevBusy, m.prevPod = now, node.busy, cum
	if prime {
		return Usage{}, perPod, false, nil
	}
	u.At = now
	u.Batch.MilliCPU = rate(batchCPU, elapsed)
	u.NodeMemory = node.memory
	u.Capacity = node.capacity
	u.Online.MilliCPU = max(0, rate(busy, elapsed)-u.Batch.MilliCPU)
	u.Online.Memory = max(0, u.NodeMemory-u.Batch.Memory)
	return u, perPod, true, nil
}

// nodeReading is one reading of the node as a whole.
type nodeReading struct {
	// busy is the node's cumulative CPU time.
	busy time.Duration
	// memory is the node's memory in use.
	memory int64
	// capacity is what the node can hold where it is a cgroup of the
	// machine; zero on a whole machine.
	capacity Amount
}

// node reads the whole machine from /proc or, for a node that is a
// cgroup of the machine, that cgroup.
func (m *Meter) node() (nodeReading, error) {
	if m.FS != nil && m.FS.NodePath() != "." {
		return m.nodeCgroup(m.FS.NodePath())
	}
	cpu, err := procstat.CPU(m.ProcRoot)
	if err != nil {
		return nodeReading{}, fmt.Errorf("measure node CPU: %w", err)
	}
	mem, err := procstat.Memory(m.ProcRoot)
	if err != nil {
		return nodeReading{}, fmt.Errorf("measure node memory: %w", err)
	}
	return nodeReading{busy: cpu.Busy, memory: int64(mem.Total - mem.Available)}, nil
}

// nodeCgroup reads the node's root cgroup: its CPU time and working set
// (usage less inactive file pages, as the kubelet counts a cgroup's
// memory), and its capacity — its CFS quota or its CPUs, whichever is
// less, and its memory limit — or, where the cgroup sets none, the
// machine's.
func (m *Meter) nodeCgroup(path string) (nodeReading, error) {
	fail := func(what string, err error) (nodeReading, error) {
		if errors.Is(err, fs.ErrNotExist) {
			return nodeReading{}, fmt.Errorf("measure node %s: the node's cgroup %s is missing: %w", what, path, err)
		}
		return nodeReading{}, fmt.Errorf("measure node %s (cgroup %s): %w", what, path, err)
	}
	busy, err := m.FS.CPUUsage(path)
	if err != nil {
		return fail("CPU", err)
	}
	mem, err := m.FS.Memory(path)
	if err != nil {
		return fail("memory", err)
	}
	n := nodeReading{busy: busy, memory: int64(mem.WorkingSet)}
	n.capacity.MilliCPU = int64(m.NumCPU) * 1000
	bound := func(milli int64) {
		if milli > 0 && (n.capacity.MilliCPU <= 0 || milli < n.capacity.MilliCPU) {
			n.capacity.MilliCPU = milli
		}
	}
	quota, period, err := m.FS.CPUQuota(path)
	if err != nil {
		return fail("CPU quota", err)
	}
	if quota >= 0 && period > 0 {
		bound(max(1, int64(quota*1000/period)))
	}
	cpus, err := m.FS.EffectiveCPUs(path)
	if err != nil && !errors.Is(err, cgroups.ErrUnsupported) {
		return fail("CPUs", err)
	}
	bound(int64(len(cpus)) * 1000)
	if n.capacity.Memory, err = m.FS.MemoryLimit(path); err != nil {
		return fail("memory limit", err)
	}
	if n.capacity.Memory < 0 {
		machine, err := procstat.Memory(m.ProcRoot)
		if err != nil {
			return nodeReading{}, fmt.Errorf("measure the machine's memory: %w", err)
		}
		n.capacity.Memory = int64(machine.Total)
	}
	return n, nil
}

// rate is CPU time used over elapsed, in millicores.
func rate(used, elapsed time.Duration) int64 {
	if elapsed <= 0 || used <= 0 {
		return 0
	}
	return int64(float64(used) / float64(elapsed) * 1000)
}
