package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Helm returns the pinned helm that `make helm` builds into Weft's tool
// cache (~/.cache/weft/bin/helm), building it on first use.
func Helm(ctx context.Context) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(home, ".cache", "weft", "bin", "helm")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if out, err := exec.CommandContext(ctx, "make", "-s", "-C", repoRoot(), "helm").CombinedOutput(); err != nil {
		return "", fmt.Errorf("make helm: %v\n%s", err, out)
	}
	return bin, nil
}

// RenderChart renders Weft's Helm chart (deploy/chart/weft, the install
// users run) as `helm template weft deploy/chart/weft --include-crds` with
// the values files and --set pairs given, and returns its objects, the
// CRDs first.
func RenderChart(ctx context.Context, valuesFiles []string, set ...string) ([]*unstructured.Unstructured, error) {
	out, err := RenderChartYAML(ctx, valuesFiles, set...)
	if err != nil {
		return nil, err
	}
	return DecodeObjects(out)
}

// RenderChartYAML is RenderChart's helm output as it prints it: YAML
// documents, for `helm template | kubectl apply`.
func RenderChartYAML(ctx context.Context, valuesFiles []string, set ...string) ([]byte, error) {
	helm, err := Helm(ctx)
	if err != nil {
		return nil, err
	}
	args := []string{"template", "weft", filepath.Join(repoRoot(), "deploy", "chart", "weft"), "--include-crds"}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	for _, kv := range set {
		args = append(args, "--set", kv)
	}
	out, err := exec.CommandContext(ctx, helm, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("helm %v: %v\n%s", args, err, ee.Stderr)
		}
		return nil, fmt.Errorf("helm %v: %w", args, err)
	}
	return out, nil
}

// repoRoot is the repository this package is in (two levels above it).
func repoRoot() string { return filepath.Dir(filepath.Dir(scriptDir())) }

// LocalValues is the chart's values file for this machine's cluster
// (deploy/local.yaml: host networking, the API server on loopback).
func LocalValues() string {
	return filepath.Join(repoRoot(), "deploy", "local.yaml")
}

// Install applies a rendered chart as `helm template | kubectl apply
// --server-side` does, in Helm's order where it matters: the CRDs first,
// then, once the API server serves them, everything else (objects of
// those kinds among it).
func (c *Cluster) Install(ctx context.Context, objs []*unstructured.Unstructured, within time.Duration) ([]*unstructured.Unstructured, error) {
	var crds, rest []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, u)
		} else {
			rest = append(rest, u)
		}
	}
	applied, err := c.ApplyObjects(ctx, crds)
	if err != nil {
		return applied, err
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return applied, err
	}
	crdAPI := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	deadline := time.Now().Add(within)
	for _, u := range applied {
		for !established(u) {
			if time.Now().After(deadline) {
				return applied, fmt.Errorf("CRD %s not established after %s", u.GetName(), within)
			}
			select {
			case <-ctx.Done():
				return applied, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			if u, err = crdAPI.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
				return applied, err
			}
		}
	}
	more, err := c.ApplyObjects(ctx, rest)
	return append(applied, more...), err
}

// established says a CRD's API is served (its Established condition).
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
