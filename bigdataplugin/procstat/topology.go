package procstat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// Core is one physical core: the sorted online CPUs that are its hardware
// threads (one CPU without SMT, two with hyper-threading).
type Core []int

// cpuDir is where sysfs describes CPUs, relative to the sysfs root.
const cpuDir = "devices/system/cpu"

// Online returns the node's online CPUs from sysRoot's
// devices/system/cpu/online, sorted.
func Online(sysRoot string) ([]int, error) {
	file := filepath.Join(sysRoot, cpuDir, "online")
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("procstat: read %s: %w", file, err)
	}
	cpus, err := ParseCPUList(string(b))
	if err != nil {
		return nil, fmt.Errorf("procstat: %s: %w", file, err)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("procstat: %s: no online CPU", file)
	}
	return cpus, nil
}

// NumCPU returns how many CPUs of the node are online.
func NumCPU(sysRoot string) (int, error) {
	cpus, err := Online(sysRoot)
	return len(cpus), err
}

// Topology returns the node's online CPUs grouped by physical core, each
// core once, sorted by its first CPU. A core's threads are read from
// cpuN/topology/core_cpus_list (Linux ≥ 5.6) or, on older kernels, its
// older name thread_siblings_list; a sibling that is offline is left out.
func Topology(sysRoot string) ([]Core, error) {
	online, err := Online(sysRoot)
	if err != nil {
		return nil, err
	}
	seen := make(map[int]bool, len(online)) // CPUs already placed in a core
	var cores []Core
	for _, cpu := range online {
		if seen[cpu] {
			continue
		}
		siblings, err := threadSiblings(sysRoot, cpu)
		if err != nil {
			return nil, err
		}
		var core Core
		for _, s := range siblings {
			if _, ok := slices.BinarySearch(online, s); ok {
				core = append(core, s)
			}
		}
		if !slices.Contains(core, cpu) {
			return nil, fmt.Errorf("procstat: cpu%d's siblings %v do not include it", cpu, siblings)
		}
		for _, s := range core {
			if seen[s] {
				return nil, fmt.Errorf("procstat: cpu%d's siblings %v overlap another core", cpu, siblings)
			}
			seen[s] = true
		}
		cores = append(cores, core)
	}
	slices.SortFunc(cores, func(a, b Core) int { return a[0] - b[0] })
	return cores, nil
}

func threadSiblings(sysRoot string, cpu int) ([]int, error) {
	dir := filepath.Join(sysRoot, cpuDir, "cpu"+strconv.Itoa(cpu), "topology")
	for _, name := range []string{"core_cpus_list", "thread_siblings_list"} {
		file := filepath.Join(dir, name)
		b, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("procstat: read %s: %w", file, err)
		}
		cpus, err := ParseCPUList(string(b))
		if err != nil {
			return nil, fmt.Errorf("procstat: %s: %w", file, err)
		}
		return cpus, nil
	}
	return nil, fmt.Errorf("procstat: %s: neither core_cpus_list nor thread_siblings_list: %w", dir, fs.ErrNotExist)
}

// WholeCores chooses CPUs for milli thousandths of a CPU without splitting
// a core: the fewest cores whose threads × 1000 reach milli. Among choices
// of that many cores it takes the highest-numbered ones, so the core of
// CPU 0 — where the kernel's and the system's own work tends to run — is
// taken last. The result is sorted. When milli is more than all the cores
// hold it returns every CPU (callers that must know compare
// len(result)*1000 with milli); when milli ≤ 0 it returns nil.
func WholeCores(cores []Core, milli int64) []int {
	if milli <= 0 {
		return nil
	}
	// Preference order: highest first CPU first, so CPU 0's core is last.
	order := slices.DeleteFunc(slices.Clone(cores), func(c Core) bool { return len(c) == 0 })
	slices.SortFunc(order, func(a, b Core) int { return b[0] - a[0] })

	// The fewest cores that can reach milli: largest cores first.
	sizes := make([]int64, len(order))
	for i, c := range order {
		sizes[i] = int64(len(c)) * 1000
	}
	bySize := slices.Clone(sizes)
	slices.Sort(bySize)
	slices.Reverse(bySize)
	k, sum := 0, int64(0)
	for k < len(bySize) && sum < milli {
		sum += bySize[k]
		k++
	}
	if sum < milli {
		var all []int
		for _, c := range order {
			all = append(all, c...)
		}
		slices.Sort(all)
		return all
	}

	// Walk the preference order, taking a core when the cores still
	// needed after it can be filled from the ones not yet considered.
	var picked []int
	var have int64
	for i, c := range order {
		slots := k - 1 // cores left to pick after taking c
		if have+sizes[i]+largest(sizes[i+1:], slots) < milli {
			continue
		}
		picked = append(picked, c...)
		have += sizes[i]
		if k = slots; k == 0 || have >= milli {
			break
		}
	}
	slices.Sort(picked)
	return picked
}

// largest sums the n largest of sizes.
func largest(sizes []int64, n int) int64 {
	if n <= 0 {
		return 0
	}
	s := slices.Clone(sizes)
	slices.Sort(s)
	var sum int64
	for i := len(s) - 1; i >= 0 && n > 0; i, n = i-1, n-1 {
		sum += s[i]
	}
	return sum
}

// FilledCores chooses CPUs for milli thousandths of a CPU by whole cores
// the amount fills, rounding down: the cores, highest-numbered first,
// whose threads × 1000 add up to no more than milli — and at least one
// core, so that work bound to them can run. What is left of the amount
// beyond the cores is left on cores no one bound: the big box's quota
// still caps it, and online work keeps those cores to itself, which is
// what keeps its latency (WholeCores, rounding up, would share a core
// with it). The result is sorted; nil when milli ≤ 0.
func FilledCores(cores []Core, milli int64) []int {
	if milli <= 0 {
		return nil
	}
	order := slices.DeleteFunc(slices.Clone(cores), func(c Core) bool { return len(c) == 0 })
	slices.SortFunc(order, func(a, b Core) int { return b[0] - a[0] })
	var picked []int
	var have int64
	for _, c := range order {
		size := int64(len(c)) * 1000
		if len(picked) > 0 && have+size > milli {
			continue
		}
		picked = append(picked, c...)
		have += size
	}
	slices.Sort(picked)
	return picked
}
