package kube

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// The kind-style cluster's network (UpNodes), as net.sh lays it out: what
// a harness needs to run a peer of the cluster (MiniDFS, weft-rm, a node
// plugin) in the control plane's or a node's network namespace.
const (
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

// InControlPlane makes cmd, not yet started, run in the control plane's
// network namespace, as InNetns does: a peer the nodes reach at
// ControlPlaneIP (MiniDFS, weft-rm).
func InControlPlane(cmd *exec.Cmd) { InNetns(cmd, ControlPlaneNetns) }

// NodesStateDir is where up.sh --nodes keeps the kind-style cluster's
// state: the control plane's, and each node's under nodes/<name>.
func NodesStateDir() string { return filepath.Join(Cache(), "kube-nodes") }

// NodeContainerdAddress is the socket of node i's containerd.
func NodeContainerdAddress(i int) string {
	return filepath.Join(NodesStateDir(), "nodes", NodeName(i), "containerd", "containerd.sock")
}

// nodeLink is node i's link on this machine's side of the bridge.
func nodeLink(i int) string { return fmt.Sprintf("weft-n%d-h", i) }

// CutNode takes node i off the cluster's network, as a failed switch port
// or a dead machine does: its kubelet, node plugin and containers keep
// running but reach nothing and nothing reaches them.
func CutNode(ctx context.Context, i int) error { return setLink(ctx, i, "down") }

// RestoreNode puts node i back on the network CutNode took it off.
func RestoreNode(ctx context.Context, i int) error { return setLink(ctx, i, "up") }

func setLink(ctx context.Context, i int, state string) error {
	if out, err := exec.CommandContext(ctx, "ip", "link", "set", nodeLink(i), state).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link set %s %s: %v: %s", nodeLink(i), state, err, out)
	}
	return nil
}
