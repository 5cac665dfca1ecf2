package cgroups

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUUsage returns the CPU time the cgroup and all its descendants have
// used since it was made: v1's cpuacct.usage (ns), v2's cpu.stat
// usage_usec. Like every cumulative counter it is meant to be sampled and
// differenced; the Duration wraps after 292 CPU-years, and a difference of
// two samples stays right across that.
func (f *FS) CPUUsage(path string) (time.Duration, error) {
	if f.version == V1 {
		ns, err := f.readUint(cpuacctCtl, path, "cpuacct.usage")
		return time.Duration(ns), err
	}
	us, err := f.readKey(cpuCtl, path, "cpu.stat", "usage_usec")
	return time.Duration(us * uint64(time.Microsecond)), err
}

// Kernel bounds of CFS bandwidth control (kernel/sched/core.c).
const (
	minQuota      = time.Millisecond
	minPeriod     = time.Millisecond
	maxPeriod     = time.Second
	defaultPeriod = 100 * time.Millisecond
)

// CPUQuota returns how much CPU time the cgroup may use in each period:
// quota/period CPUs. quota is Unlimited (negative) when there is no limit.
func (f *FS) CPUQuota(path string) (quota, period time.Duration, err error) {
	if f.version == V1 {
		p, err := f.readUint(cpuCtl, path, "cpu.cfs_period_us")
		if err != nil {
			return 0, 0, err
		}
		q, err := f.readInt(cpuCtl, path, "cpu.cfs_quota_us")
		if err != nil {
			return 0, 0, err
		}
		period = time.Duration(p) * time.Microsecond
		if q < 0 {
			return Unlimited, period, nil
		}
		return time.Duration(q) * time.Microsecond, period, nil
	}
	s, err := f.read(cpuCtl, path, "cpu.max")
	if err != nil {
		return 0, 0, err
	}
	// "max 100000" or "50000 100000"
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return 0, 0, malformed(filepath.Join(f.dirs[cpuCtl], path, "cpu.max"), s)
	}
	p, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0, 0, malformed(filepath.Join(f.dirs[cpuCtl], path, "cpu.max"), s)
	}
	period = time.Duration(p) * time.Microsecond
	if fields[0] == "max" {
		return Unlimited, period, nil
	}
	q, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return 0, 0, malformed(filepath.Join(f.dirs[cpuCtl], path, "cpu.max"), s)
	}
	return time.Duration(q) * time.Microsecond, period, nil
}

// SetCPUQuota limits the cgroup to quota of CPU time per period; a
// negative quota removes the limit. A period of 0 means the kernel's
// default 100ms; others must be within the kernel's 1ms..1s. A quota
// below the kernel's minimum of 1ms is raised to it, so the agent can
// squeeze the big box to almost nothing without the write failing.
//
// On v1 the period is written before the quota, so the quota is checked
// against the new period. The kernel refuses (EINVAL) a period whose ratio
// with the old quota exceeds the parent's limit; then the quota goes
// first and the period is written after it.
func (f *FS) SetCPUQuota(path string, quota, period time.Duration) error {
	if period == 0 {
		period = defaultPeriod
	}
	if period < minPeriod || period > maxPeriod {
		return fmt.Errorf("cgroups: CPU period %v of %s is outside the kernel's %v..%v", period, path, minPeriod, maxPeriod)
	}
	if quota >= 0 && quota < minQuota {
		quota = minQuota
	}
	periodUS := strconv.FormatInt(period.Microseconds(), 10)
	quotaUS := "max"
	if quota >= 0 {
		quotaUS = strconv.FormatInt(quota.Microseconds(), 10)
	}
	if f.version == V2 {
		return f.write(cpuCtl, path, "cpu.max", quotaUS+" "+periodUS)
	}
	if quota < 0 {
		quotaUS = "-1"
	}
	err := f.write(cpuCtl, path, "cpu.cfs_period_us", periodUS)
	if errors.Is(err, syscall.EINVAL) {
		if err := f.write(cpuCtl, path, "cpu.cfs_quota_us", quotaUS); err != nil {
			return err
		}
		return f.write(cpuCtl, path, "cpu.cfs_period_us", periodUS)
	}
	if err != nil {
		return err
	}
	return f.write(cpuCtl, path, "cpu.cfs_quota_us", quotaUS)
}

// Kernel bounds of v1 shares and v2 weights.
const (
	minShares = 2
	maxShares = 262144
	minWeight = 1
	maxWeight = 10000
)

// SharesToWeight converts v1 cpu.shares to a v2 cpu.weight the way runc
// before 1.3.2 does, and with it the kubelets that vendor it, mapping
// 2..262144 linearly onto 1..10000: 1 + (shares−2)×9999/262142. Shares
// outside the range are clamped first.
//
// Newer runtimes (runc ≥ 1.3.2, crun ≥ 1.23) use a nonlinear mapping
// that sends 1024 to 100; weights are only compared among siblings, so
// this matters when the agent's weight competes with one a runtime wrote.
func SharesToWeight(shares uint64) uint64 {
	shares = min(max(shares, minShares), maxShares)
	return min(max(1+((shares-2)*9999)/262142, minWeight), maxWeight)
}

// WeightToShares is SharesToWeight's inverse: the fewest shares that
// SharesToWeight maps to weight (clamped to 1..10000), so that
// SharesToWeight(WeightToShares(w)) == w for every weight.
func WeightToShares(weight uint64) uint64 {
	weight = min(max(weight, minWeight), maxWeight)
	return 2 + ((weight-1)*262142+9998)/9999
}

// CPUShares returns the cgroup's CPU weight among its siblings in v1
// shares: v1's cpu.shares, or v2's cpu.weight converted by WeightToShares.
// While cpu.idle is 1, v1 reports 3, the idle weight.
func (f *FS) CPUShares(path string) (uint64, error) {
	if f.version == V1 {
		return f.readUint(cpuCtl, path, "cpu.shares")
	}
	w, err := f.readUint(cpuCtl, path, "cpu.weight")
	if err != nil {
		return 0, err
	}
	return WeightToShares(w), nil
}

// SetCPUShares sets the cgroup's CPU weight among its siblings, given in
// v1 shares (clamped to the kernel's 2..262144); on v2 it writes the
// weight SharesToWeight gives. The kernel refuses shares (EINVAL) while
// cpu.idle is 1.
func (f *FS) SetCPUShares(path string, shares uint64) error {
	shares = min(max(shares, minShares), maxShares)
	if f.version == V1 {
		return f.write(cpuCtl, path, "cpu.shares", strconv.FormatUint(shares, 10))
	}
	return f.write(cpuCtl, path, "cpu.weight", strconv.FormatUint(SharesToWeight(shares), 10))
}

// SetCPUIdle marks the cgroup SCHED_IDLE (idle true) or not: its tasks
// then run only when no other task wants the CPU, which lets the big box
// soak up idle time without delaying online services' wakeups. cpu.idle
// exists on v2 and on v1 since Linux 5.15; elsewhere the error wraps
// ErrUnsupported.
func (f *FS) SetCPUIdle(path string, idle bool) error {
	v := "0"
	if idle {
		v = "1"
	}
	return f.write(cpuCtl, path, "cpu.idle", v)
}
