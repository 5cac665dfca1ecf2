package kube

import (
	"fmt"
	"os/exec"
	"path/filepath"
)

// The kind-style cluster's network (UpNodes), as net.sh lays it out: what
// a harness needs to run a peer of the cluster (MiniDFS, weft-rm, a node
// plugin) in the control plane's or a node's network namespace.
const (
	// HostIP is this machine's address on the cluster's bridge.
	HostIP = "10.77.0.1"
	// ControlPlaneIP is the control plane's address; the API server, and
	// what a harness runs beside it, serve there.
	ControlPlaneIP = "10.77.0.2"
	// ControlPlaneNetns is the control plane's network namespace.
	ControlPlaneNetns = "weft-cp"
)

// NodeName is node i's (from 1): its Kubernetes name, network namespace,
// cgroup root (/weft-node-i) and host name.
func NodeName(i int) string { return fmt.Sprintf("weft-node-%d", i) }

// NodeIP is node i's address.
func NodeIP(i int) string { return fmt.Sprintf("10.77.0.%d", 10+i) }

// InNetns makes cmd, not yet started, run in the network namespace ns
// (one of the cluster's) and in nothing else of it: nsenter enters the
// namespace and executes cmd's program, so the PID the caller holds is the
// program's own and its signals reach it.
func InNetns(cmd *exec.Cmd, ns string) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		nsenter = "/usr/bin/nsenter"
	}
	cmd.Args = append([]string{"nsenter", "--net=/run/netns/" + ns, "--", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = nsenter
}

// NodesStateDir is where up.sh --nodes keeps the kind-style cluster's
// state: the control plane's, and each node's under nodes/<name>.
func NodesStateDir() string { return filepath.Join(Cache(), "kube-nodes") }

// NodeContainerdAddress is the socket of node i's containerd.
func NodeContainerdAddress(i int) string {
	return filepath.Join(NodesStateDir(), "nodes", NodeName(i), "containerd", "containerd.sock")
}
