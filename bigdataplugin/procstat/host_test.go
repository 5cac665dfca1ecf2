package procstat

import (
	"runtime"
	"slices"
	"testing"
)

// TestHost reads this machine's real /proc and /sys: the formats the unit
// tests copy are the ones the kernel writes.
func TestHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux's /proc and /sys")
	}
	cpu, err := CPU("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if cpu.Busy <= 0 || cpu.Total <= cpu.Busy {
		t.Errorf("CPU() = %+v, want 0 < Busy < Total", cpu)
	}
	mem, err := Memory("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if mem.Total == 0 || mem.Available == 0 || mem.Used() == 0 || mem.Used() >= mem.Total {
		t.Errorf("Memory() = %+v (used %d), want all > 0 and used < total", mem, mem.Used())
	}
	online, err := Online("/sys")
	if err != nil {
		t.Fatal(err)
	}
	cores, err := Topology("/sys")
	if err != nil {
		t.Fatal(err)
	}
	var all []int
	for _, c := range cores {
		all = append(all, c...)
	}
	slices.Sort(all)
	if !slices.Equal(all, online) {
		t.Errorf("Topology() = %v covers %v, want the online CPUs %v", cores, all, online)
	}
	t.Logf("cpu %+v, memory %+v, online %s, cores %v", cpu, mem, FormatCPUList(online), cores)
}
