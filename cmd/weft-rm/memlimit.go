package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/bytedance/gopkg/util/gctuner"
	"k8s.io/apimachinery/pkg/api/resource"
)

// cgroupMemoryMax is cgroup v2's memory limit of the process's cgroup: in
// a container, the container's (resources.limits.memory).
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memoryLimit returns the soft memory limit --memory-limit asks for, in
// bytes: a quantity ("400Mi", "1073741824"), or a percentage ("90%") of the
// container's memory limit as readLimit reads it. Zero, with no error,
// sets none: an empty flag (the Go runtime's own GOMEMLIMIT, if set, then
// applies), or a percentage of no limit.
//
// A soft limit makes the Go runtime collect more often as the heap nears
// it instead of letting it grow to twice what is live (GOGC=100): the
// resident memory of a large cluster's RM is then bounded by the limit
// and what is live, at the cost of CPU spent collecting. It is
// not a hard limit: past it the heap grows, and the kernel's OOM killer
// at the container's limit is what stops it.
func memoryLimit(flag string, readLimit func() (int64, error)) (int64, error) {
	switch {
	case flag == "":
		return 0, nil
	case strings.HasSuffix(flag, "%"):
		pct, err := strconv.ParseFloat(strings.TrimSuffix(flag, "%"), 64)
		if err != nil || pct <= 0 || pct > 100 {
			return 0, fmt.Errorf("--memory-limit %q: want a percentage in (0, 100]", flag)
		}
		limit, err := readLimit()
		if err != nil || limit <= 0 {
			return 0, err
		}
		return int64(float64(limit) * pct / 100), nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--memory-limit %q: want a positive quantity such as 400Mi, or a percentage such as 90%%", flag)
	}
	return q.Value(), nil
}

// cgroupLimit reads cgroup v2's memory.max: 0 for "max" (no limit) or
// when there is no cgroup v2 file to read.
func cgroupLimit() (int64, error) {
	b, err := os.ReadFile(cgroupMemoryMax)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("container memory limit: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("container memory limit %s: %q: %w", cgroupMemoryMax, s, err)
	}
	return n, nil
}

// setMemoryLimit applies --memory-limit and returns the limit set, 0 for
// none.
func setMemoryLimit(flag string) (int64, error) {
	limit, err := memoryLimit(flag, cgroupLimit)
	if err != nil || limit == 0 {
		return 0, err
	}
	debug.SetMemoryLimit(limit)
	return limit, nil
}

// defaultGCPercent is weft-rm's GOGC unless told otherwise. Most of the
// RM's heap is long-lived — the cluster's containers, applications and
// nodes — and it allocates little once they are placed, so collecting when
// the heap has grown by half what is live, not by all of it (Go's default
// GOGC=100), costs little CPU and keeps a quarter off the resident memory
// of a 10,000-node cluster's RM (test/bench/scale): about 5% more CPU
// while AMs heartbeat, and allocate's p99 within a millisecond of GOGC=100.
// Prometheus lowers its default GOGC (to 75) for the same reason.
const defaultGCPercent = 50

// gcPercent returns the GOGC weft-rm sets, and whether it sets one: the
// --gc-percent flag when given, else the GOGC environment variable's own
// (the runtime has applied it: nothing to set), else defaultGCPercent.
func gcPercent(flag int, flagGiven bool, env string) (int, bool) {
	switch {
	case flagGiven:
		return flag, true
	case env != "":
		return 0, false
	default:
		return defaultGCPercent, true
	}
}

// defaultHeapFloor is --gc-heap-floor's default: the heap weft-rm lets
// grow to before collecting at its GOGC. A small cluster's RM has little
// live heap (~60 MB at 1,000 nodes and 5,000 pods) and, while it binds
// thousands of pods, allocates fast (watch events, bindings, cycles): at
// GOGC 50 it then collects every ~30 MB, and the collector is a fifth to
// a quarter of its CPU (test/bench/binding) — CPU the API server, on the
// same small control-plane machine, is short of. Under the floor GOGC is
// raised so the next collection comes at the floor (at most 5x what is
// live); above it the heap is a large cluster's, and --gc-percent holds.
const defaultHeapFloor = "256Mi"

// maxTunedGCPercent bounds GOGC under the floor: a nearly empty heap is
// not let grow a hundredfold before its first collection.
const maxTunedGCPercent = 500

// heapFloor parses --gc-heap-floor: bytes, 0 for none.
func heapFloor(flag string) (uint64, error) {
	if flag == "" || flag == "0" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("--gc-heap-floor %q: want a quantity such as 256Mi, or 0 for none", flag)
	}
	return uint64(q.Value()), nil
}

// floorUnder caps the heap floor at half the soft memory limit, when one
// is set: a heap let grow to the limit would make the runtime collect at
// every step near it, which is what the floor is to spare.
func floorUnder(floor uint64, limit int64) uint64 {
	if limit > 0 {
		return min(floor, uint64(limit)/2)
	}
	return floor
}

// setGC applies --gc-percent (gcPercent) and, when weft-rm sets a positive
// GOGC, the heap floor: ByteDance's gctuner (github.com/bytedance/gopkg)
// retunes GOGC after each collection so that the next comes when the heap
// reaches the floor, never at less than pct nor more than
// maxTunedGCPercent. With the GOGC environment variable or a negative
// percentage the runtime is left as told.
func setGC(flag int, flagGiven bool, floor uint64) {
	pct, set := gcPercent(flag, flagGiven, os.Getenv("GOGC"))
	if !set {
		return
	}
	debug.SetGCPercent(pct)
	if pct <= 0 || floor == 0 {
		return
	}
	gctuner.SetMinGCPercent(uint32(pct))
	gctuner.SetMaxGCPercent(uint32(max(pct, maxTunedGCPercent)))
	gctuner.Tuning(floor)
}
