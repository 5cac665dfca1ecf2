package colocation

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

// Box is the big box: the kubelet's BestEffort QoS cgroup
// (kubepods/besteffort), which holds every batch pod of the node, since a
// pod requesting only extended resources is BestEffort. Its limits bound
// all batch work together, whatever each pod asked for.
type Box struct {
	FS *cgroups.FS
	// Cgroup is the box's path in the hierarchy; default the kubelet's
	// BestEffort QoS cgroup as FS names it: under FS's driver, in the
	// node's root cgroup (FS.ForNode).
	Cgroup string
	// Period is the CFS period of the box's quota (default 100ms).
	Period time.Duration
	// Cores is the machine's CPU topology, for a cpuset of whole cores.
	// A node that is one of several on the machine binds its box only to
	// the cores wholly within its root cgroup's CPUs (cores).
	Cores []procstat.Core
	// Idle puts the box in the kernel's idle scheduling class (cpu.idle)
	// instead of giving it the least weight: its tasks then run only
	// where no other task wants the CPU. Off by default: the kernel
	// refuses a weight on an idle group, and the kubelet rewrites the
	// BestEffort cgroup's weight every minute — that update would fail,
	// and with it the kubelet's update of the Burstable cgroup's weight
	// that online pods rely on.
	Idle bool
}

// Limits is what the box was set to.
type Limits struct {
	// CPUQuota is the CFS quota per Period.
	CPUQuota, Period time.Duration
	// Memory is the box's memory limit; it is never set below what the
	// box holds nor below what its running pods were granted: memory
	// granted to running work comes back by eviction, not by the
	// kernel's OOM killer (see setMemory).
	Memory int64
	// CPUs is the box's cpuset, empty when not bound.
	CPUs string
}

// MinShares is the kubelet's and the kernel's least CPU weight: batch
// work gets CPU only where online work leaves it idle.
const MinShares = 2

// Path is the box's cgroup path.
func (b *Box) Path() string {
	if b.Cgroup != "" {
		return b.Cgroup
	}
	return b.FS.QOSPath(corev1.PodQOSBestEffort)
}

// Enforce sets the box to the amount batch work may use: its CFS quota to
// a.MilliCPU (shrinking it gives CPU back to online work within a
// period: batch only slows down), the least CPU weight (or the idle
// scheduling class, with Idle), its memory limit to a.Memory — or, if
// more, what the box holds or what its running pods were granted
// (granted, the sum of their requests) — and with cpuset the whole cores
// its quota fills.
func (b *Box) Enforce(a Amount, granted int64, cpuset bool) (Limits, error) {
	path := b.Path()
	period := b.Period
	if period <= 0 {
		period = 100 * time.Millisecond
	}
	l := Limits{Period: period, CPUQuota: max(time.Millisecond, time.Duration(a.MilliCPU)*period/1000)}
	var errs []error
	if err := b.FS.SetCPUQuota(path, l.CPUQuota, period); err != nil {
		errs = append(errs, fmt.Errorf("box CPU quota: %w", err))
	}
	// The kernel refuses a CPU weight on an idle group, so it is one or
	// the other: idle, where asked for, else the least weight.
	if err := b.FS.SetCPUIdle(path, b.Idle); err != nil && !errors.Is(err, cgroups.ErrUnsupported) {
		errs = append(errs, fmt.Errorf("box CPU idle: %w", err))
	}
	if !b.Idle {
		if err := b.FS.SetCPUShares(path, MinShares); err != nil {
			errs = append(errs, fmt.Errorf("box CPU weight: %w", err))
		}
	}
	mem, err := b.setMemory(path, a.Memory, granted)
	if err != nil {
		errs = append(errs, fmt.Errorf("box memory limit: %w", err))
	}
	l.Memory = mem
	if cpuset && len(b.Cores) > 0 {
		cores, err := b.cores()
		if err != nil {
			errs = append(errs, fmt.Errorf("box cpuset: %w", err))
		}
		if len(cores) > 0 {
			// The whole cores the quota fills, rounded down (at least
			// one): online work keeps the others to itself. Rounding up
			// would share a core between both sides, which is what costs
			// online latency when batch runs on every CPU
			// (test/bench/colocation measured it).
			l.CPUs = procstat.FormatCPUList(procstat.FilledCores(cores, max(1, a.MilliCPU)))
			if err := b.FS.SetCPUSetTree(path, l.CPUs); err != nil {
				errs = append(errs, fmt.Errorf("box cpuset: %w", err))
			}
		}
	}
	return l, errors.Join(errs...)
}

// cores are the cores the box may be bound to: Cores, or for a node that
// is one of several on the machine, those wholly within the CPUs of its
// root cgroup — the kernel refuses (v1) or ignores (v2) a cpuset beyond
// a parent's, and another node's CPUs are not this node's to lend. None
// when the node's CPUs split every core: the box is then not bound.
func (b *Box) cores() ([]procstat.Core, error) {
	node := b.FS.NodePath()
	if node == "." {
		return b.Cores, nil
	}
	cpus, err := b.FS.EffectiveCPUs(node)
	if errors.Is(err, cgroups.ErrUnsupported) {
		return b.Cores, nil
	}
	if err != nil {
		return nil, err
	}
	var in []procstat.Core
	for _, c := range b.Cores {
		if !slices.ContainsFunc(c, func(cpu int) bool { return !slices.Contains(cpus, cpu) }) {
			in = append(in, c)
		}
	}
	return in, nil
}

// setMemory sets the box's memory limit to limit, but never below what
// the box holds now nor below granted, what its running pods were
// granted.
//
// Not below what it holds: a limit under its usage makes the kernel
// reclaim and, failing that, OOM-kill inside the box at once (cgroup v2;
// v1 refuses with EBUSY).
//
// Not below what was granted: each batch pod is already held to its own
// grant (ConfinePod), as YARN holds a container to its allocation, and
// memory a running container was granted comes back the way YARN takes
// it back — preemption, here eviction: lowest tier first, told to the AM
// (Victims). A box limit between what the pods hold and what they were
// granted takes it back instead through the kernel's OOM killer, which
// picks the largest process, whatever its tier, and kills it untold; and
// were the limit to follow what the box holds, each kill would leave the
// survivors no room and the next allocation kill again: a job's other
// map, then a second later its ApplicationMaster, the last process left
// in the box (test/e2e's eviction spec checks neither happens). Online
// work keeps its safety in the eviction watermark, and in OOMScoreAdj
// should the node run out before the agent acts.
func (b *Box) setMemory(path string, limit, granted int64) (int64, error) {
	st, err := b.FS.Memory(path)
	if err != nil {
		return 0, err
	}
	const mib = 1 << 20
	limit = max(limit, granted, (int64(st.Usage)+mib-1)/mib*mib)
	return limit, b.FS.SetMemoryLimit(path, limit)
}

// Release lifts the box's limits (quota and memory unlimited, every CPU
// of the node):
// batch work is then bounded only by its weight.
func (b *Box) Release() error {
	path := b.Path()
	errs := []error{b.FS.SetCPUQuota(path, -1, 100*time.Millisecond), b.FS.SetMemoryLimit(path, -1)}
	if len(b.Cores) > 0 {
		cores, err := b.cores()
		var all []int
		for _, c := range cores {
			all = append(all, c...)
		}
		errs = append(errs, err)
		if len(all) > 0 {
			errs = append(errs, b.FS.SetCPUSetTree(path, procstat.FormatCPUList(all)))
		}
	}
	return errors.Join(errs...)
}

// OOMScoreAdj is what every batch process gets: first in line for the
// kernel's OOM killer, before any online process.
const OOMScoreAdj = 1000

// ConfinePod limits one batch pod's own cgroup to what it requested: its
// memory as a hard limit, as YARN enforces a container's memory, and a
// CPU weight in proportion to its CPU inside the box; its processes get
// OOMScoreAdj.
func (b *Box) ConfinePod(path string, requested Amount) error {
	var errs []error
	if requested.Memory > 0 {
		if cur, err := b.FS.MemoryLimit(path); err != nil || cur != requested.Memory {
			if err := b.FS.SetMemoryLimit(path, requested.Memory); err != nil && !errors.Is(err, cgroups.ErrBusy) {
				errs = append(errs, fmt.Errorf("pod memory limit: %w", err))
			}
		}
	}
	if requested.MilliCPU > 0 {
		if err := b.FS.SetCPUShares(path, uint64(max(MinShares, requested.MilliCPU*1024/1000))); err != nil {
			errs = append(errs, fmt.Errorf("pod CPU weight: %w", err))
		}
	}
	pids, err := b.FS.Procs(path)
	if err != nil {
		errs = append(errs, fmt.Errorf("pod processes: %w", err))
	}
	for _, pid := range pids {
		if err := b.FS.SetOOMScoreAdj(pid, OOMScoreAdj); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
