// Package kube gives Weft's tests a real Kubernetes control plane on this
// machine (etcd and kube-apiserver started by up.sh) and the little of
// kubectl they need.
package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running local control plane.
type Cluster struct {
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
}

func scriptDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Connect returns a Cluster for an existing kubeconfig.
func Connect(kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Cluster{Kubeconfig: kubeconfig, Config: cfg, Client: client}, nil
}

// Up starts the control plane unless it runs already.
func Up(ctx context.Context) (*Cluster, error) { return up(ctx) }

// UpNodes starts the kind-style cluster of n nodes (up.sh --nodes n)
// unless it runs already: the control plane and each node in a network
// namespace of their own, each node with its own containerd, kubelet,
// cgroup subtree and address (see net.sh). It shares nothing with Up's
// cluster, and both may run at once.
func UpNodes(ctx context.Context, n int) (*Cluster, error) {
	return up(ctx, "--nodes", strconv.Itoa(n))
}

func up(ctx context.Context, args ...string) (*Cluster, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(scriptDir(), "up.sh"), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kube up %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return Connect(strings.TrimSpace(out.String()))
}

// Down stops the control plane up.sh started.
func Down(ctx context.Context) error { return down(ctx) }

// DownNodes stops the kind-style cluster UpNodes started, and removes its
// network namespaces and links.
func DownNodes(ctx context.Context) error { return down(ctx, "--nodes", "1") }

func down(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, filepath.Join(scriptDir(), "down.sh"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube down %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// Purge stops the control plane up.sh started and removes its state
// (etcd's data, certificates): the next Up starts an empty cluster.
func Purge(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, filepath.Join(scriptDir(), "down.sh"), "--purge").CombinedOutput()
	if err != nil {
		return fmt.Errorf("kube down --purge: %v\n%s", err, out)
	}
	return nil
}

// Apply server-side-applies every object of the YAML files, as
// `kubectl apply --server-side` does, and returns them; on an error, those
// applied before it.
func (c *Cluster) Apply(ctx context.Context, files ...string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		more, err := DecodeObjects(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		objs = append(objs, more...)
	}
	return c.ApplyObjects(ctx, objs)
}

// DecodeObjects reads the objects of a YAML or JSON stream (empty
// documents skipped).
func DecodeObjects(b []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return objs, err
		}
		if u.Object != nil {
			objs = append(objs, u)
		}
	}
}

// ApplyObjects server-side-applies the objects in order and returns them
// as the API server holds them; on an error, those applied before it.
func (c *Cluster) ApplyObjects(ctx context.Context, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	var applied []*unstructured.Unstructured
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return applied, fmt.Errorf("%s %s: %w", gvk, u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		out, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "weft-tests", Force: true})
		if err != nil {
			return applied, fmt.Errorf("apply %s %s: %w", gvk.Kind, u.GetName(), err)
		}
		applied = append(applied, out)
	}
	return applied, nil
}

// Cache is where up.sh keeps built binaries and cluster state.
func Cache() string {
	if c := os.Getenv("WEFT_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "weft")
}

// Kubectl runs the kubectl built with the cluster (at its pinned version)
// against it and returns its standard output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(Cache(), "bin", "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// StateDir is where up.sh keeps the cluster's state and its processes'
// pid files (WEFT_KUBE_STATE, default under Cache).
func StateDir() string {
	if state := os.Getenv("WEFT_KUBE_STATE"); state != "" {
		return state
	}
	return filepath.Join(Cache(), "kube")
}

// ControlPlanePIDs are the running control plane's processes up.sh
// started (etcd, kube-apiserver, kube-controller-manager, and
// kube-scheduler, kubelet, containerd when it started them), by name.
func ControlPlanePIDs() map[string]int {
	pids := map[string]int{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "containerd"} {
		b, err := os.ReadFile(filepath.Join(StateDir(), name+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, 0) == nil {
			pids[name] = pid
		}
	}
	return pids
}

// ContainerdAddress is the socket of the node's containerd.
func ContainerdAddress() string {
	return filepath.Join(StateDir(), "containerd", "containerd.sock")
}

// KillContainers ends every container of pod at once with SIGKILL through
// the node's containerd (kill -9, no grace: the kubelet's stop would
// send SIGTERM first, and a process that catches it shuts down cleanly).
func KillContainers(ctx context.Context, pod *corev1.Pod) error {
	for _, cs := range pod.Status.ContainerStatuses {
		id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
		if !ok {
			return fmt.Errorf("pod %s container %s: id %q is not containerd's", pod.Name, cs.Name, cs.ContainerID)
		}
		out, err := exec.CommandContext(ctx, "ctr", "--address", ContainerdAddress(), "-n", "k8s.io",
			"tasks", "kill", "-s", "SIGKILL", id).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kill -9 pod %s container %s: %v: %s", pod.Name, cs.Name, err, out)
		}
	}
	return nil
}
