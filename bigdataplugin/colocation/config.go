package colocation

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
)

// Config is how much of a node batch work may have, and when. Flags set
// it for every node; the ConfigMap's ConfigKey (YAML of the same fields)
// overrides what it names, cluster-wide, while the agent runs.
type Config struct {
	// Interval is how often the node is measured and the box reconciled
	// (default 1s).
	Interval metav1.Duration `json:"interval,omitempty"`
	// CPUWatermark and MemoryWatermark are the safe share of the node's
	// allocatable, in percent, that online and batch work may use
	// together: reclaimable = watermark × allocatable − online usage
	// (defaults 80 and 85, as Koordinator's and Katalyst's agents
	// default).
	CPUWatermark    float64 `json:"cpuWatermarkPercent,omitempty"`
	MemoryWatermark float64 `json:"memoryWatermarkPercent,omitempty"`
	// MemoryEvictionWatermark is the node memory use, in percent of
	// allocatable, above which batch pods are evicted, lowest tier and
	// newest first, until the node is back under it (default 90). CPU is
	// never a reason to evict: shrinking the box gives it back at once.
	MemoryEvictionWatermark float64 `json:"memoryEvictionWatermarkPercent,omitempty"`
	// PeakWindow is how far back online usage is taken at its peak, not
	// its last sample, so that a bursty service is not starved (default
	// 2m). A rise counts at once; a fall only once it has lasted the
	// window.
	PeakWindow metav1.Duration `json:"peakWindow,omitempty"`
	// Hysteresis is how far, in percent of the node's allocatable, the
	// reclaimable amount must move before a new number is published to
	// the Node (default 5): the scheduler and the kubelet do not chase
	// every sample. The box itself follows every sample.
	Hysteresis float64 `json:"hysteresisPercent,omitempty"`
	// LowerAfter is how long the Node's allocatable keeps a number that
	// has fallen, while Weft's RM is told the new one at once
	// (wellknown.AnnotationReclaimedLowering) (default 10s): the containers it
	// granted by the old number become pods within an AM's heartbeat
	// (MapReduce's 1 s, Spark's 3 s) and the node plugin's start, and the
	// kubelet admits them by the allocatable as it is when they arrive.
	// The box follows the fall at once. 0 lowers both together.
	LowerAfter metav1.Duration `json:"lowerAfter,omitempty"`
	// Windows are the hours in which colocation is off or smaller on the
	// node (分时).
	Windows []Window `json:"windows,omitempty"`
	// WindowGrace is how long before a window starts no new batch work is
	// offered, so that running tasks can drain (default 10m).
	WindowGrace metav1.Duration `json:"windowGrace,omitempty"`
	// Cooldown is how long a node offers no new batch work after the
	// agent evicted some (default 5m), so it does not evict again and
	// again.
	Cooldown metav1.Duration `json:"cooldown,omitempty"`
	// CPUSet binds the box to whole physical cores (hyper-thread siblings
	// together): those its quota fills, rounded down, at least one. Online
	// work then has the other cores to itself: batch never shares a core
	// with an online thread there. Default on: with batch on every CPU,
	// the quota and the least weight alone cost an online service 1.4–1.7×
	// its solo p99, the cpuset 1.04–1.22× on two cores, where online work
	// keeps one (test/bench/colocation). Turn it off
	// where the kubelet's static CPU manager owns the cpusets.
	CPUSet bool `json:"cpuset,omitempty"`
	// CPUIdle puts the box in the kernel's idle scheduling class instead
	// of giving it the least CPU weight (default off: see Box.Idle for
	// why it conflicts with the kubelet).
	CPUIdle bool `json:"cpuIdle,omitempty"`
	// NodeCgroup is, where the node is one of several kubelets on one
	// machine (kind-style) each in a cgroup subtree of its own, that
	// kubelet's --cgroup-root (e.g. /weft-node-1): the node's root
	// cgroup, relative to the hierarchies' root. The node's usage is then
	// read from that cgroup (CPU time, working set), not from /proc, which
	// counts every node of the machine; its capacity from the cgroup's
	// CPU quota, CPUs and memory limit where it sets them, else the
	// machine's; and the big box is the BestEffort QoS cgroup under it
	// (<NodeCgroup>/kubepods/besteffort with the cgroupfs driver, named
	// as the kubelet names it with systemd). Default "" (or "/"): the
	// node is the whole machine. Flags only: it differs from node to
	// node, so the cluster-wide ConfigMap cannot name it.
	NodeCgroup string `json:"-"`
}

// Window is a time of day in which the node keeps a smaller share of its
// reclaimable capacity for batch work, or none.
type Window struct {
	// Days are the weekdays it applies on ("Mon", "Tue", …); none: every
	// day. A window that wraps midnight belongs to the day it starts.
	Days []string `json:"days,omitempty"`
	// Start and End are local times "HH:MM"; End before Start wraps past
	// midnight.
	Start string `json:"start"`
	End   string `json:"end"`
	// Percent is the share of the reclaimable capacity batch work keeps
	// during the window (0: colocation off).
	Percent float64 `json:"percent"`
}

// DefaultConfig is the configuration without flags or ConfigMap.
func DefaultConfig() Config {
	return Config{
		Interval: metav1.Duration{Duration: time.Second}, CPUWatermark: 80, MemoryWatermark: 85, MemoryEvictionWatermark: 90,
		PeakWindow: metav1.Duration{Duration: 2 * time.Minute}, Hysteresis: 5, LowerAfter: metav1.Duration{Duration: 10 * time.Second},
		WindowGrace: metav1.Duration{Duration: 10 * time.Minute}, Cooldown: metav1.Duration{Duration: 5 * time.Minute},
		CPUSet: true,
	}
}

// LentWhole is c for a node the tidal controller lent whole to batch
// work (Offline): no online work is left to keep room for but the node's
// own daemons, so batch work may fill the CPU and the memory up to the
// eviction watermark. The agent and weft-sim both apply it.
func (c Config) LentWhole() Config {
	c.CPUWatermark, c.MemoryWatermark = 100, c.MemoryEvictionWatermark
	return c
}

// ConfigKey is the key of the ConfigMap's data that holds a Config.
const ConfigKey = "colocation.yaml"

// Merge reads a ConfigMap's YAML over c: the fields it names replace
// c's, the rest stay. Unknown fields are an error, so a misspelt
// watermark is not silently ignored.
func (c Config) Merge(data string) (Config, error) {
	if strings.TrimSpace(data) == "" {
		return c, nil
	}
	out := c
	if err := yaml.UnmarshalStrict([]byte(data), &out); err != nil {
		return c, fmt.Errorf("colocation config: %w", err)
	}
	return out, out.Validate()
}

// Validate tells what is wrong with c, all at once.
func (c Config) Validate() error {
	var errs []error
	pct := func(name string, v float64) {
		if v <= 0 || v > 100 {
			errs = append(errs, fmt.Errorf("%s %g%% is not in (0, 100]", name, v))
		}
	}
	pct("cpuWatermarkPercent", c.CPUWatermark)
	pct("memoryWatermarkPercent", c.MemoryWatermark)
	pct("memoryEvictionWatermarkPercent", c.MemoryEvictionWatermark)
	if c.MemoryEvictionWatermark < c.MemoryWatermark {
		errs = append(errs, fmt.Errorf("memoryEvictionWatermarkPercent %g%% is below memoryWatermarkPercent %g%%: batch work would be evicted from capacity it was offered",
			c.MemoryEvictionWatermark, c.MemoryWatermark))
	}
	if c.Hysteresis < 0 || c.Hysteresis >= 100 {
		errs = append(errs, fmt.Errorf("hysteresisPercent %g%% is not in [0, 100)", c.Hysteresis))
	}
	if c.Interval.Duration < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("interval %s is below 100ms", c.Interval.Duration))
	}
	for name, d := range map[string]time.Duration{"peakWindow": c.PeakWindow.Duration, "windowGrace": c.WindowGrace.Duration, "cooldown": c.Cooldown.Duration, "lowerAfter": c.LowerAfter.Duration} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s %s is negative", name, d))
		}
	}
	if _, err := cgroups.ParseCgroupRoot(c.NodeCgroup); err != nil {
		errs = append(errs, fmt.Errorf("node cgroup: %w", err))
	}
	for i, w := range c.Windows {
		if _, _, err := w.clock(); err != nil {
			errs = append(errs, fmt.Errorf("windows[%d]: %w", i, err))
		}
		if _, err := w.days(); err != nil {
			errs = append(errs, fmt.Errorf("windows[%d]: %w", i, err))
		}
		if w.Percent < 0 || w.Percent > 100 {
			errs = append(errs, fmt.Errorf("windows[%d]: percent %g is not in [0, 100]", i, w.Percent))
		}
	}
	return errors.Join(errs...)
}

// clock is the window's start and end in minutes after midnight.
func (w Window) clock() (start, end int, err error) {
	parse := func(s string) (int, error) {
		t, err := time.Parse("15:04", s)
		if err != nil {
			return 0, fmt.Errorf("time %q is not HH:MM", s)
		}
		return t.Hour()*60 + t.Minute(), nil
	}
	if start, err = parse(w.Start); err != nil {
		return
	}
	if end, err = parse(w.End); err == nil && end == start {
		err = fmt.Errorf("window %s-%s is empty", w.Start, w.End)
	}
	return
}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

func (w Window) days() (map[time.Weekday]bool, error) {
	if len(w.Days) == 0 {
		return nil, nil
	}
	out := map[time.Weekday]bool{}
	for _, d := range w.Days {
		key := strings.ToLower(strings.TrimSpace(d))
		if len(key) > 3 {
			key = key[:3]
		}
		wd, ok := weekdays[key]
		if !ok {
			return nil, fmt.Errorf("day %q is not a weekday", d)
		}
		out[wd] = true
	}
	return out, nil
}

// windowAt tells what share of the reclaimable capacity batch work keeps
// at t (1 outside every window), and whether a window starts within
// grace — when no new work is offered.
func (c Config) windowAt(t time.Time) (share float64, inGrace bool) {
	share = 1
	for _, w := range c.Windows {
		start, end, err := w.clock()
		days, derr := w.days()
		if err != nil || derr != nil {
			continue
		}
		// The window's occurrences around t: one that started yesterday,
		// today's, tomorrow's.
		midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
		for d := -1; d <= 1; d++ {
			day := midnight.AddDate(0, 0, d)
			if days != nil && !days[day.Weekday()] {
				continue
			}
			from := day.Add(time.Duration(start) * time.Minute)
			to := day.Add(time.Duration(end) * time.Minute)
			if end < start {
				to = to.AddDate(0, 0, 1)
			}
			switch {
			case !t.Before(from) && t.Before(to):
				share = min(share, w.Percent/100)
			case t.Before(from) && from.Sub(t) <= c.WindowGrace.Duration:
				inGrace = true
			}
		}
	}
	return share, inGrace
}
