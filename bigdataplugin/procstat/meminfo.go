package procstat

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MemInfo is a node's memory in bytes.
type MemInfo struct {
	Total uint64
	// Available is the kernel's estimate of memory that can be given to
	// new work without swapping (free memory plus reclaimable page cache
	// and slab), the figure the kubelet's eviction uses as well.
	Available uint64
}

// Used is the memory the node cannot give to new work.
func (m MemInfo) Used() uint64 {
	if m.Available > m.Total {
		return 0
	}
	return m.Total - m.Available
}

// Memory reads MemTotal and MemAvailable (Linux ≥ 3.14) from
// procRoot/meminfo, whose values are in kB.
func Memory(procRoot string) (MemInfo, error) {
	file := filepath.Join(procRoot, "meminfo")
	f, err := os.Open(file)
	if err != nil {
		return MemInfo{}, fmt.Errorf("procstat: read %s: %w", file, err)
	}
	defer f.Close()
	var m MemInfo
	var haveTotal, haveAvailable bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		var dst *uint64
		switch key {
		case "MemTotal":
			dst, haveTotal = &m.Total, true
		case "MemAvailable":
			dst, haveAvailable = &m.Available, true
		default:
			continue
		}
		fields := strings.Fields(rest)
		if !ok || len(fields) != 2 || fields[1] != "kB" {
			return MemInfo{}, fmt.Errorf("procstat: %s: unexpected line %q", file, sc.Text())
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return MemInfo{}, fmt.Errorf("procstat: %s: line %q: %w", file, sc.Text(), err)
		}
		*dst = kb * 1024
	}
	if err := sc.Err(); err != nil {
		return MemInfo{}, fmt.Errorf("procstat: read %s: %w", file, err)
	}
	if !haveTotal || !haveAvailable {
		return MemInfo{}, fmt.Errorf("procstat: %s: lacks MemTotal or MemAvailable (Linux < 3.14?)", file)
	}
	return m, nil
}
