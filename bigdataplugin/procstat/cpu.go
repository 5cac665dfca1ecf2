package procstat

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// jiffy is one tick of /proc/stat's counters. The kernel reports them in
// USER_HZ, which is 100 on every Linux architecture regardless of the
// kernel's internal HZ, so no sysconf call is needed.
const jiffy = 10 * time.Millisecond

// CPUTimes is the CPU time all of a node's CPUs have spent since boot.
//
// The durations wrap after 292 CPU-years (e.g. 192 CPUs up for 1.5 years);
// use the difference of two samples (Sub), which is right across a wrap
// because Go's integer arithmetic is modular.
type CPUTimes struct {
	// Busy is time spent running anything: user, nice, system, irq,
	// softirq and steal (time a hypervisor gave to someone else, which
	// this node's work could not use either).
	Busy time.Duration
	// Total is Busy plus idle and iowait.
	Total time.Duration
}

// Sub returns the CPU time spent between prev and c.
func (c CPUTimes) Sub(prev CPUTimes) CPUTimes {
	return CPUTimes{Busy: c.Busy - prev.Busy, Total: c.Total - prev.Total}
}

// CPU reads the node's aggregate CPU times from procRoot/stat's first
// line ("cpu  user nice system idle iowait irq softirq steal guest
// guest_nice"). guest and guest_nice are already counted in user and nice
// by the kernel, so they are not added again.
func CPU(procRoot string) (CPUTimes, error) {
	file := filepath.Join(procRoot, "stat")
	b, err := os.ReadFile(file)
	if err != nil {
		return CPUTimes{}, fmt.Errorf("procstat: read %s: %w", file, err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	fields := strings.Fields(string(line))
	// user..steal are present since Linux 2.6.11; fewer is not a
	// /proc/stat this package knows.
	if len(fields) < 9 || fields[0] != "cpu" {
		return CPUTimes{}, fmt.Errorf("procstat: %s: first line %q is not the aggregate cpu line", file, line)
	}
	return cpuLine(file, string(line), fields)
}

// CPUs reads each CPU's times from procRoot/stat's "cpuN" lines (as CPU
// reads the aggregate), by CPU number: which of a node's CPUs were busy
// when work is pinned to some of them. A CPU offline has no line.
func CPUs(procRoot string) (map[int]CPUTimes, error) {
	file := filepath.Join(procRoot, "stat")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("procstat: read %s: %w", file, err)
	}
	cpus := map[int]CPUTimes{}
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") || fields[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(fields[0], "cpu"))
		if err != nil || len(fields) < 9 {
			return nil, fmt.Errorf("procstat: %s: line %q is not a CPU's line", file, line)
		}
		if cpus[n], err = cpuLine(file, line, fields); err != nil {
			return nil, err
		}
	}
	return cpus, nil
}

// cpuLine reads the times of one of /proc/stat's cpu lines, split into
// fields (the first its name, then at least user..steal).
func cpuLine(file, line string, fields []string) (CPUTimes, error) {
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(fields[1+i], 10, 64)
		if err != nil {
			return CPUTimes{}, fmt.Errorf("procstat: %s: field %d of %q: %w", file, i+1, line, err)
		}
		v[i] = n
	}
	const user, nice, system, idle, iowait, irq, softirq, steal = 0, 1, 2, 3, 4, 5, 6, 7
	busy := v[user] + v[nice] + v[system] + v[irq] + v[softirq] + v[steal]
	total := busy + v[idle] + v[iowait]
	return CPUTimes{Busy: ticks(busy), Total: ticks(total)}, nil
}

// ticks converts jiffies to a Duration, wrapping (see CPUTimes) rather
// than saturating so that differences stay right.
func ticks(j uint64) time.Duration {
	return time.Duration(j * uint64(jiffy))
}
