// Package cgroups reads and writes the kernel's cgroup files of the pod and
// QoS cgroups the kubelet makes, for Weft's colocation agent.
//
// Weft runs batch pods (Hadoop and Spark containers) beside online
// services. All batch pods of a node are BestEffort, so the kubelet puts
// them under one cgroup, kubepods/besteffort: the "big box". The agent
// measures what online pods use and resizes the box's CPU quota (and
// memory limit) as that usage moves, so batch work only ever takes what is
// left. This package is the agent's hands on the kernel: it reads usage and
// limits of any pod or QoS cgroup, and writes the box's limits, its cpuset,
// and kills a batch pod's processes when the agent evicts it.
//
// Both cgroup v1 (one hierarchy per controller) and v2 (one unified tree)
// are supported, with kubelet's cgroupfs and systemd drivers. Where a
// machine holds several nodes, each kubelet with a --cgroup-root of its
// own, an FS for one node (FS.ForNode) names that node's cgroups under
// its root and never writes the root itself. An FS is
// made for a root (normally /sys/fs/cgroup) so tests run over temporary
// trees laid out in the kernel's formats; package cgroupstest builds such
// trees.
//
// A cgroup that vanished (its pod ended while it was being read) yields an
// error for which errors.Is(err, fs.ErrNotExist) holds; a value the kernel
// refused as busy yields ErrBusy; a file this kernel does not have yields
// ErrUnsupported.
package cgroups
