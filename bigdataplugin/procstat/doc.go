// Package procstat reads a node's totals from /proc and its CPU topology
// from /sys for Weft's colocation agent.
//
// The agent bounds every batch pod of a node in one cgroup, the "big box"
// (kubelet's besteffort QoS cgroup), and resizes the box's CPU quota as the
// online services' usage moves: what the node has minus what online work
// uses is what batch work may take. This package gives the node side of
// that sum — CPU time and memory of the whole node, and which CPUs are
// siblings of one core so a cpuset for the box never splits a core between
// online and batch work.
//
// Every function takes its root (/proc or /sys) as an argument so tests run
// over temporary trees written in the kernel's formats.
package procstat
