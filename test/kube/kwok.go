package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// KwokVersion is the kwok release the benchmarks' fake nodes run on.
const KwokVersion = "v0.7.0"

// KwokNodeAnnotation marks the nodes kwok manages.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// Kwok returns the path of the kwok controller binary, built once from
// the Go module proxy into the cache (about a minute and a half).
func Kwok(ctx context.Context) (string, error) {
	dir := filepath.Join(Cache(), "kwok", KwokVersion)
	bin := filepath.Join(dir, "kwok")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // built while we waited
	}
	cmd := exec.CommandContext(ctx, "go", "install", "-trimpath", "-ldflags=-s -w", "sigs.k8s.io/kwok/cmd/kwok@"+KwokVersion)
	cmd.Dir = dir // outside any module: go install builds kwok's own
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build kwok %s: %v\n%s", KwokVersion, err, out)
	}
	return bin, nil
}

// KwokArgs are kwok's arguments for a kubeconfig: it manages only nodes
// annotated KwokNodeAnnotation=fake, keeps their leases (without a lease
// duration v0.7.0 heartbeats only every ten minutes, and the node
// lifecycle controller marks them NotReady), and gives pods addresses
// from a /16 (the default /24 runs out at 254 pods).
func KwokArgs(kubeconfig string) []string {
	return []string{"--kubeconfig=" + kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--node-lease-duration-seconds=40", "--cidr=10.0.0.1/16"}
}

// Binary is one of the cluster's Kubernetes binaries up.sh links into
// the cache (kubectl, kube-scheduler).
func Binary(name string) (string, error) {
	p, err := filepath.EvalSymlinks(filepath.Join(Cache(), "bin", name))
	if err != nil {
		return "", fmt.Errorf("%s (run test/kube/up.sh first): %w", name, err)
	}
	return p, nil
}
