package procstat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ParseCPUList parses the kernel's CPU list format ("0-3,8-11", "2", or
// empty for none), as found in sysfs and in cpuset.cpus. It returns the
// CPUs sorted and without duplicates. The stride form ("0-7:2/4") that the
// kernel accepts on input but never prints is refused.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parseCPU(lo)
		if err != nil {
			return nil, fmt.Errorf("procstat: cpu list %q: %w", s, err)
		}
		last := first
		if isRange {
			if last, err = parseCPU(hi); err != nil {
				return nil, fmt.Errorf("procstat: cpu list %q: %w", s, err)
			}
			if last < first {
				return nil, fmt.Errorf("procstat: cpu list %q: range %q runs backwards", s, part)
			}
		}
		for c := first; c <= last; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

// maxCPU bounds a parsed CPU number so a hostile or corrupt list cannot
// make ParseCPUList allocate without end; the kernel's NR_CPUS is at most
// 8192.
const maxCPU = 1 << 16

func parseCPU(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= maxCPU || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	return n, nil
}

// FormatCPUList writes cpus in the kernel's list format, the form
// cpuset.cpus takes and prints: runs of two or more as "first-last",
// joined by commas ("2-3,6"). Order and duplicates in cpus do not matter.
func FormatCPUList(cpus []int) string {
	sorted := slices.Clone(cpus)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sorted[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sorted[j]))
		}
		i = j + 1
	}
	return b.String()
}
