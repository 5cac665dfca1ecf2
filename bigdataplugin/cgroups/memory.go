package cgroups

import (
	"path/filepath"
	"strconv"
	"strings"
)

// MemoryStat is a cgroup's memory in bytes, its descendants included.
type MemoryStat struct {
	// Usage is all memory charged to the cgroup, page cache included.
	Usage uint64
	// InactiveFile is page cache the kernel would reclaim first.
	InactiveFile uint64
	// WorkingSet is Usage less InactiveFile (never below 0): the figure
	// cAdvisor reports and the kubelet evicts on, so the agent reasons
	// about memory the way the kubelet will.
	WorkingSet uint64
}

// Memory returns the cgroup's memory use: v1's memory.usage_in_bytes and
// memory.stat total_inactive_file (the hierarchical line, not the
// cgroup's own inactive_file), or v2's memory.current and memory.stat
// inactive_file (hierarchical on v2).
func (f *FS) Memory(path string) (MemoryStat, error) {
	usageFile, inactiveKey := "memory.current", "inactive_file"
	if f.version == V1 {
		usageFile, inactiveKey = "memory.usage_in_bytes", "total_inactive_file"
	}
	usage, err := f.readUint(memoryCtl, path, usageFile)
	if err != nil {
		return MemoryStat{}, err
	}
	inactive, err := f.readKey(memoryCtl, path, "memory.stat", inactiveKey)
	if err != nil {
		return MemoryStat{}, err
	}
	m := MemoryStat{Usage: usage, InactiveFile: inactive}
	if inactive < usage {
		m.WorkingSet = usage - inactive
	}
	return m, nil
}

// v1Unlimited is where v1 memory limits start to mean "none": the kernel
// prints its unlimited value as PAGE_COUNTER_MAX pages in bytes
// (9223372036854771712 with 4 KiB pages), which differs with the page
// size, and no real limit comes near 2^62 bytes.
const v1Unlimited = 1 << 62

// MemoryLimit returns the cgroup's memory limit in bytes, or Unlimited
// (negative) when it has none: v1's memory.limit_in_bytes, v2's
// memory.max.
func (f *FS) MemoryLimit(path string) (int64, error) {
	if f.version == V1 {
		s, err := f.read(memoryCtl, path, "memory.limit_in_bytes")
		if err != nil {
			return 0, err
		}
		v := strings.TrimSpace(s)
		if v == "-1" { // what SetMemoryLimit writes; a fake tree keeps it
			return Unlimited, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, malformed(filepath.Join(f.dirs[memoryCtl], path, "memory.limit_in_bytes"), s)
		}
		if n >= v1Unlimited {
			return Unlimited, nil
		}
		return int64(n), nil
	}
	s, err := f.read(memoryCtl, path, "memory.max")
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(s)
	if v == "max" {
		return Unlimited, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, malformed(filepath.Join(f.dirs[memoryCtl], path, "memory.max"), s)
	}
	return n, nil
}

// SetMemoryLimit limits the cgroup's memory to bytes; a negative value
// removes the limit. The kernel rounds the limit down to whole pages.
//
// On v1 a limit below what the kernel can reclaim the cgroup to is
// refused: the error then wraps ErrBusy, and the cgroup keeps its old
// limit. On v2 the kernel takes any limit and reclaims, then OOM-kills,
// down to it.
func (f *FS) SetMemoryLimit(path string, bytes int64) error {
	if f.version == V1 {
		v := "-1"
		if bytes >= 0 {
			v = strconv.FormatInt(bytes, 10)
		}
		return f.write(memoryCtl, path, "memory.limit_in_bytes", v)
	}
	v := "max"
	if bytes >= 0 {
		v = strconv.FormatInt(bytes, 10)
	}
	return f.write(memoryCtl, path, "memory.max", v)
}
