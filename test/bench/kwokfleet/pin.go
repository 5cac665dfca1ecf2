package kwokfleet

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
	"k8s.io/utils/cpuset"
)

// controlPlaneProcesses are the processes Options.ControlPlaneCPUs gives
// CPUs of their own: the API server and what serves it. kwok stands for
// the nodes' kubelets, which run on the nodes, and stays with the
// benchmark's clients.
var controlPlaneProcesses = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// cpuSplit is the machine's CPUs cut in two: the control plane's and
// everything else's (kwok, the benchmark, the schedulers it starts).
type cpuSplit struct {
	controlPlane, rest cpuset.CPUSet
}

// splitCPUs parses list (a Linux CPU list, "0" or "0-3,6") as the control
// plane's CPUs out of allowed (the CPUs this process may run on): each
// must be allowed, and at least one allowed CPU must be left for the rest.
func splitCPUs(list string, allowed cpuset.CPUSet) (cpuSplit, error) {
	cp, err := cpuset.Parse(list)
	if err != nil {
		return cpuSplit{}, fmt.Errorf("control-plane CPUs %q: %w", list, err)
	}
	if cp.IsEmpty() {
		return cpuSplit{}, fmt.Errorf("control-plane CPUs %q: none", list)
	}
	if !cp.IsSubsetOf(allowed) {
		return cpuSplit{}, fmt.Errorf("control-plane CPUs %s: not all of them are this process's to give (it may run on %s)", cp, allowed)
	}
	rest := allowed.Difference(cp)
	if rest.IsEmpty() {
		return cpuSplit{}, fmt.Errorf("control-plane CPUs %s: leave none of %s for kwok and the benchmark", cp, allowed)
	}
	return cpuSplit{controlPlane: cp, rest: rest}, nil
}

// allowedCPUs are the CPUs this process may run on.
func allowedCPUs() (cpuset.CPUSet, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return cpuset.New(), fmt.Errorf("CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpuset.New(cpus...), nil
}

// pinProcess runs every thread of pid on cpus only. Threads a process
// starts later inherit the affinity of the thread that starts them, so
// once every thread is pinned the whole process stays pinned; the threads
// are read again until a pass finds none left to pin, for a thread
// started, by one not yet pinned, while the first pass ran.
func pinProcess(pid int, cpus cpuset.CPUSet) error {
	var want unix.CPUSet
	for _, c := range cpus.List() {
		want.Set(c)
	}
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return fmt.Errorf("pin process %d: %w", pid, err)
		}
		pinned := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			var got unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &got); err == nil && got == want {
				continue
			}
			// A thread may end between the listing and here (ESRCH).
			if err := unix.SchedSetaffinity(tid, &want); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pin process %d thread %d to CPUs %s: %w", pid, tid, cpus, err)
			}
			pinned++
		}
		if pinned == 0 {
			return nil
		}
	}
	return fmt.Errorf("pin process %d to CPUs %s: it kept starting threads", pid, cpus)
}

// pinControlPlane gives the running control plane's processes (pids, by
// name, as kube.ControlPlanePIDs) the split's control-plane CPUs, and
// this process — and so kwok and every process it starts after — the
// rest.
func pinControlPlane(split cpuSplit, pids map[string]int) error {
	for _, name := range controlPlaneProcesses {
		pid, ok := pids[name]
		if !ok {
			return fmt.Errorf("pin the control plane: %s is not running", name)
		}
		if err := pinProcess(pid, split.controlPlane); err != nil {
			return fmt.Errorf("pin %s: %w", name, err)
		}
	}
	return pinProcess(os.Getpid(), split.rest)
}
