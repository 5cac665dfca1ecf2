package deploy

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/quota/crd"
	"github.com/weft-sh/weft/rmfacade/rmconfig"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The Helm chart (chart/weft) is the user-facing install; deploy/base,
// deploy/crds, deploy/profiles and deploy/monitoring stay the reference
// the other tests check against the code. These tests render the chart
// with helm and hold it to them.

const chartDir = "chart/weft"

var profiles = []string{"weft", "plain", "katalyst", "koordinator"}

// helmBinary is the helm `make helm-check` builds into the tool cache, or
// one on PATH; without either the chart's tests skip.
func helmBinary(t *testing.T) string {
	t.Helper()
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "weft", "bin", "helm")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	t.Skip("no helm in ~/.cache/weft/bin nor on PATH: `make helm-check` builds the pinned one there; the Helm chart is not checked")
	return ""
}

// rendered is the chart's output, every object decoded.
type rendered []*unstructured.Unstructured

func (r rendered) find(kind, namespace, name string) *unstructured.Unstructured {
	for _, u := range r {
		if u.GetKind() == kind && u.GetNamespace() == namespace && u.GetName() == name {
			return u
		}
	}
	return nil
}

func (r rendered) ofKind(kind string) rendered {
	var out rendered
	for _, u := range r {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// renders keeps each rendering by its arguments: several tests render
// the chart with each profile. Callers convert objects, never change them.
var renders sync.Map

// render runs `helm template` on the chart with args (--set, --values)
// and decodes what it prints; helm's error output when it fails.
func render(t *testing.T, args ...string) (rendered, error) {
	t.Helper()
	key := strings.Join(args, "\x00")
	if r, ok := renders.Load(key); ok {
		return r.(rendered), nil
	}
	out, err := helmTemplate(t, chartDir, args...)
	if err != nil {
		return nil, err
	}
	r := rendered(decodeAll(t, "helm template", bytes.NewReader(out)))
	renders.Store(key, r)
	return r, nil
}

func helmTemplate(t *testing.T, chart string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), append([]string{"template", "weft", chart, "--namespace", "default"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func mustRender(t *testing.T, args ...string) rendered {
	t.Helper()
	r, err := render(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// decodeAll decodes every YAML document of r, as objects does for files.
func decodeAll(t *testing.T, name string, r io.Reader) []*unstructured.Unstructured {
	t.Helper()
	dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if u.Object == nil {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("%s: object without apiVersion, kind or name: %v", name, u.Object)
		}
		out = append(out, u)
	}
}

// The chart ships copies of what it cannot reach outside its directory:
// the CRDs (Helm installs its crds/ first) and the Grafana dashboard. They
// stay byte for byte those of deploy/ (make generate writes deploy/crds:
// copy them over after it).
func TestChartCopiesAreDeploys(t *testing.T) {
	for _, c := range []struct{ from, to, glob string }{
		{"crds", filepath.Join(chartDir, "crds"), "*.yaml"},
		{"monitoring", filepath.Join(chartDir, "dashboards"), "*.json"},
	} {
		t.Run(c.to, func(t *testing.T) {
			want, _ := filepath.Glob(filepath.Join(c.from, c.glob))
			got, _ := filepath.Glob(filepath.Join(c.to, c.glob))
			if len(want) == 0 {
				t.Fatalf("nothing matches %s", filepath.Join(c.from, c.glob))
			}
			base := func(fs []string) []string {
				var out []string
				for _, f := range fs {
					out = append(out, filepath.Base(f))
				}
				return out
			}
			if !slices.Equal(base(want), base(got)) {
				t.Fatalf("%s has %v, %s has %v: cp %s %s/", c.to, base(got), c.from, base(want), filepath.Join(c.from, c.glob), c.to)
			}
			for _, f := range want {
				a, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(c.to, filepath.Base(f)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs from %s: cp %s %s/", filepath.Join(c.to, filepath.Base(f)), f, f, c.to)
				}
			}
		})
	}
}

// Each profile's PriorityClasses are deploy/profiles/<profile>'s, which
// TestPriorityClassesMatchTranslator holds to the translator.
func TestChartPriorityClasses(t *testing.T) {
	helmBinary(t)
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			want := map[string]*schedulingv1.PriorityClass{}
			for _, u := range objects(t, filepath.Join("profiles", profile, "*.yaml")) {
				if u.GetKind() == "PriorityClass" {
					want[u.GetName()] = as[schedulingv1.PriorityClass](t, u)
				}
			}
			got := mustRender(t, "--set", "profile="+profile).ofKind("PriorityClass")
			if len(got) != len(want) {
				t.Errorf("%d PriorityClasses, the profile has %d", len(got), len(want))
			}
			for _, u := range got {
				pc, w := as[schedulingv1.PriorityClass](t, u), want[u.GetName()]
				if w == nil {
					t.Errorf("%s is not one of the profile's", pc.Name)
					continue
				}
				if pc.Value != w.Value || !reflect.DeepEqual(pc.PreemptionPolicy, w.PreemptionPolicy) ||
					pc.GlobalDefault != w.GlobalDefault || pc.Description != w.Description {
					t.Errorf("%s: value %d, preemption %v, default %v, %q; profiles/%s says %d, %v, %v, %q", pc.Name,
						pc.Value, deref(pc.PreemptionPolicy), pc.GlobalDefault, pc.Description,
						profile, w.Value, deref(w.PreemptionPolicy), w.GlobalDefault, w.Description)
				}
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// colocationOnly are the base's parts that serve the node plugin's
// colocation agent, which runs in the weft profile alone: the chart
// leaves them out elsewhere.
var (
	colocationArgs    = []string{"--cgroup-root=/host/cgroup", "--sys-root=/host/sys"}
	colocationVolumes = []string{"cgroup", "cpu-topology"}
)

// withoutColocation is the base's node plugin as the chart runs it
// without the colocation agent: unprivileged, in its own PID namespace,
// without the node's cgroups and CPU topology.
func withoutColocation(spec *corev1.PodSpec) {
	spec.HostPID = false
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return slices.Contains(colocationVolumes, v.Name) })
	c := &spec.Containers[0]
	c.SecurityContext = nil
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return slices.Contains(colocationArgs, a) })
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return slices.Contains(colocationVolumes, m.Name) })
}

// withoutStaticQueues is the base's weft-rm as the chart runs it: without
// --queues and the ConfigMap it names, so that it reads the Queue objects.
func withoutStaticQueues(spec *corev1.PodSpec) {
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == "weft-rm" })
	c := &spec.Containers[0]
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--queues") })
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "config" })
}

// podSpecParts name what TestChartCarriesTheBase compares, for messages
// that say which part differs.
var podSpecParts = []struct {
	name string
	of   func(*corev1.PodSpec) any
}{
	{"serviceAccountName", func(s *corev1.PodSpec) any { return s.ServiceAccountName }},
	{"hostNetwork", func(s *corev1.PodSpec) any { return s.HostNetwork }},
	{"hostPID", func(s *corev1.PodSpec) any { return s.HostPID }},
	{"dnsPolicy", func(s *corev1.PodSpec) any { return s.DNSPolicy }},
	{"tolerations", func(s *corev1.PodSpec) any { return s.Tolerations }},
	{"volumes", func(s *corev1.PodSpec) any { return s.Volumes }},
	{"containers", func(s *corev1.PodSpec) any { return len(s.Containers) }},
	{"name", func(s *corev1.PodSpec) any { return s.Containers[0].Name }},
	{"image", func(s *corev1.PodSpec) any {
		return s.Containers[0].Image + " " + string(s.Containers[0].ImagePullPolicy)
	}},
	{"command", func(s *corev1.PodSpec) any { return s.Containers[0].Command }},
	{"args", func(s *corev1.PodSpec) any { return s.Containers[0].Args }},
	{"env", func(s *corev1.PodSpec) any { return s.Containers[0].Env }},
	{"ports", func(s *corev1.PodSpec) any { return s.Containers[0].Ports }},
	{"readinessProbe", func(s *corev1.PodSpec) any { return s.Containers[0].ReadinessProbe }},
	{"livenessProbe", func(s *corev1.PodSpec) any { return s.Containers[0].LivenessProbe }},
	{"securityContext", func(s *corev1.PodSpec) any { return s.Containers[0].SecurityContext }},
	{"volumeMounts", func(s *corev1.PodSpec) any { return s.Containers[0].VolumeMounts }},
	{"resources", func(s *corev1.PodSpec) any { return s.Containers[0].Resources }},
}

// Everything deploy/base has, the chart renders with its defaults, for
// every profile: the same namespaces, service accounts and RBAC rules, the
// weft-rm Service selecting the active replica, and the same workloads —
// arguments, environment, ports, probes, security context, host paths,
// resources — but for what the chart changes on purpose: weft-rm reads
// Queue objects instead of a --queues file, weft-rm and the node plugin
// are told the profile (--profile), and outside the weft profile the node
// plugin runs without the colocation agent and what it needs.
func TestChartCarriesTheBase(t *testing.T) {
	helmBinary(t)
	base := objects(t, filepath.Join("base", "*.yaml"))
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			chart := mustRender(t, "--set", "profile="+profile)
			for _, b := range base {
				what := b.GetKind() + " " + b.GetNamespace() + "/" + b.GetName()
				c := chart.find(b.GetKind(), b.GetNamespace(), b.GetName())
				switch {
				case b.GetKind() == "ConfigMap" && b.GetName() == "weft-rm":
					if c != nil {
						t.Errorf("%s: the static queue tree is rendered, but weft-rm reads Queue objects", what)
					}
					continue
				case profile != "weft" && strings.Contains(b.GetName(), "colocation"):
					if c != nil {
						t.Errorf("%s: rendered for the %s profile, where no colocation agent runs", what, profile)
					}
					continue
				case c == nil:
					t.Errorf("%s: not in the chart", what)
					continue
				}
				for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/part-of",
					"app.kubernetes.io/managed-by", "helm.sh/chart"} {
					if c.GetLabels()[l] == "" {
						t.Errorf("%s: no label %s: %v", what, l, c.GetLabels())
					}
				}
				for k, v := range b.GetLabels() {
					if c.GetLabels()[k] != v {
						t.Errorf("%s: label %s=%q, the base's %q", what, k, c.GetLabels()[k], v)
					}
				}
				switch b.GetKind() {
				case "Role", "ClusterRole":
					sameField(t, what, b, c, "rules")
				case "RoleBinding", "ClusterRoleBinding":
					sameField(t, what, b, c, "roleRef")
					sameField(t, what, b, c, "subjects")
				case "Service":
					sameField(t, what, b, c, "spec", "selector")
					sameField(t, what, b, c, "spec", "ports")
					if sel := as[corev1.Service](t, c).Spec.Selector; sel[wellknown.LabelRMActive] != "true" {
						t.Errorf("%s selects %v: not the active replica alone (%s=true)", what, sel, wellknown.LabelRMActive)
					}
				case "Deployment":
					want, got := as[appsv1.Deployment](t, b), as[appsv1.Deployment](t, c)
					if *want.Spec.Replicas != *got.Spec.Replicas {
						t.Errorf("%s: %d replicas, the base %d", what, *got.Spec.Replicas, *want.Spec.Replicas)
					}
					if b.GetName() == "weft-rm" {
						withoutStaticQueues(&want.Spec.Template.Spec)
						takeProfile(t, what, profile, &got.Spec.Template.Spec)
					}
					samePods(t, what, want.Spec.Selector.MatchLabels, got.Spec.Selector.MatchLabels, &want.Spec.Template, &got.Spec.Template)
				case "DaemonSet":
					want, got := as[appsv1.DaemonSet](t, b), as[appsv1.DaemonSet](t, c)
					if profile != "weft" {
						withoutColocation(&want.Spec.Template.Spec)
					}
					takeProfile(t, what, profile, &got.Spec.Template.Spec)
					samePods(t, what, want.Spec.Selector.MatchLabels, got.Spec.Selector.MatchLabels, &want.Spec.Template, &got.Spec.Template)
				}
			}
		})
	}
}

func sameField(t *testing.T, what string, b, c *unstructured.Unstructured, path ...string) {
	t.Helper()
	want, _, _ := unstructured.NestedFieldNoCopy(b.Object, path...)
	got, _, _ := unstructured.NestedFieldNoCopy(c.Object, path...)
	if !equality.Semantic.DeepEqual(want, got) {
		t.Errorf("%s: %s\n  chart: %s\n  base:  %s", what, strings.Join(path, "."), js(got), js(want))
	}
}

// takeProfile removes the chart's --profile argument, which must name the
// profile rendered (the base runs the flag's default, weft).
func takeProfile(t *testing.T, what, profile string, spec *corev1.PodSpec) {
	t.Helper()
	c := &spec.Containers[0]
	i := slices.Index(c.Args, "--profile="+profile)
	if i < 0 {
		t.Errorf("%s: no --profile=%s in %v", what, profile, c.Args)
		return
	}
	c.Args = slices.Delete(c.Args, i, i+1)
}

func samePods(t *testing.T, what string, wantSel, gotSel map[string]string, want, got *corev1.PodTemplateSpec) {
	t.Helper()
	if !reflect.DeepEqual(wantSel, gotSel) {
		t.Errorf("%s: selector %v, the base's %v", what, gotSel, wantSel)
	}
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			t.Errorf("%s: pod label %s=%q, the base's %q", what, k, got.Labels[k], v)
		}
	}
	differ := false
	for _, p := range podSpecParts {
		if w, g := p.of(&want.Spec), p.of(&got.Spec); !equality.Semantic.DeepEqual(w, g) {
			t.Errorf("%s: %s\n  chart: %s\n  base:  %s", what, p.name, js(g), js(w))
			differ = true
		}
	}
	// Whatever the parts above miss.
	if !differ && !equality.Semantic.DeepEqual(want.Spec, got.Spec) {
		t.Errorf("%s: pod spec\n  chart: %s\n  base:  %s", what, js(got.Spec), js(want.Spec))
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The chart's queues are Queue objects weft-rm accepts: they decode into
// the API type without unknown fields, pass the CRD's schema, form one
// tree (crd.ConfigsFromQueues, quota.NewTree, as weft-rm reads them) and
// give the scheduler its quotas (crd.QuotasFromCRDs) at every hour. The
// defaults are YARN's root.default; deploy/examples/queues.yaml's tree,
// given as values, renders as itself. weft-rm runs without --queues, so
// that it reads them.
func TestChartQueues(t *testing.T) {
	helmBinary(t)
	examples := objects(t, filepath.Join("examples", "queues.yaml"))
	var items []map[string]any
	for _, u := range examples {
		items = append(items, map[string]any{"name": u.GetName(), "spec": u.Object["spec"]})
	}
	values, err := json.Marshal(map[string]any{"queues": items})
	if err != nil {
		t.Fatal(err)
	}
	exampleValues := filepath.Join(t.TempDir(), "queues.json")
	if err := os.WriteFile(exampleValues, values, 0o644); err != nil {
		t.Fatal(err)
	}
	schema := queueSchema(t)
	for _, c := range []struct {
		name  string
		args  []string
		want  []*unstructured.Unstructured // nil: the default tree
		paths []string
	}{
		{name: "default", paths: []string{"root", "root.default"}},
		{name: "examples", args: []string{"--values", exampleValues}, want: examples, paths: []string{"root", "root.default", "root.etl"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			chart := mustRender(t, c.args...)
			var queues []v1alpha1.Queue
			for _, u := range chart.ofKind("Queue") {
				if u.GetAPIVersion() != v1alpha1.GroupVersion.String() {
					t.Errorf("queue %s: apiVersion %s, the CRD's is %s", u.GetName(), u.GetAPIVersion(), v1alpha1.GroupVersion)
				}
				if err := validate(schema, u.Object["spec"], "spec"); err != nil {
					t.Errorf("queue %s: %v", u.GetName(), err)
				}
				b, _ := json.Marshal(u.Object)
				dec := json.NewDecoder(bytes.NewReader(b))
				dec.DisallowUnknownFields()
				var q v1alpha1.Queue
				if err := dec.Decode(&q); err != nil {
					t.Errorf("queue %s: %v", u.GetName(), err)
				}
				queues = append(queues, q)
			}
			for _, w := range c.want {
				i := slices.IndexFunc(queues, func(q v1alpha1.Queue) bool { return q.Name == w.GetName() })
				if i < 0 {
					t.Errorf("queue %s not rendered", w.GetName())
					continue
				}
				if spec := as[v1alpha1.Queue](t, w).Spec; !equality.Semantic.DeepEqual(spec, queues[i].Spec) {
					t.Errorf("queue %s: %s, the values gave %s", w.GetName(), js(queues[i].Spec), js(spec))
				}
			}
			configs, err := crd.ConfigsFromQueues(queues)
			if err != nil {
				t.Fatalf("weft-rm would refuse the tree: %v", err)
			}
			var paths []string
			for _, q := range configs {
				paths = append(paths, q.Path)
			}
			if !slices.Equal(paths, c.paths) {
				t.Errorf("queue paths %v, want %v", paths, c.paths)
			}
			if _, err := quota.NewTree(configs); err != nil {
				t.Fatalf("weft-rm would refuse the tree: %v", err)
			}
			day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for h := 0; h < 24; h++ {
				if _, err := crd.QuotasFromCRDs(queues, day.Add(time.Duration(h)*time.Hour), 1000); err != nil {
					t.Fatalf("quotas at %02d:00: %v", h, err)
				}
			}
			rm := chart.find("Deployment", "weft-system", "weft-rm")
			if rm == nil {
				t.Fatal("no weft-rm Deployment")
			}
			spec := as[appsv1.Deployment](t, rm).Spec.Template.Spec
			for _, a := range spec.Containers[0].Args {
				if strings.HasPrefix(a, "--queues") {
					t.Errorf("weft-rm runs with %s: it would not read the Queue objects", a)
				}
			}
		})
	}
}

// queueSchema is the Queue CRD's schema of spec.
func queueSchema(t *testing.T) map[string]any {
	t.Helper()
	for _, u := range objects(t, filepath.Join("crds", "weft.io_queues.yaml")) {
		versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range versions {
			if v, ok := v.(map[string]any); ok && v["name"] == v1alpha1.GroupVersion.Version {
				s, ok, _ := unstructured.NestedMap(v, "schema", "openAPIV3Schema", "properties", "spec")
				if ok {
					return s
				}
			}
		}
	}
	t.Fatal("no spec schema in crds/weft.io_queues.yaml")
	return nil
}

// validate checks v against the parts of OpenAPI v3 the CRDs use: types,
// properties (unknown fields are errors: the API server would drop them
// silently), required, enum, pattern, minimum and maximum, items,
// additionalProperties, int-or-string.
func validate(schema map[string]any, v any, path string) error {
	var errs []error
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		errs = append(errs, fmt.Errorf("%s: %v is not one of %v", path, v, enum))
	}
	number := func() (float64, bool) {
		switch n := v.(type) {
		case int64:
			return float64(n), true
		case float64:
			return n, true
		}
		return 0, false
	}
	if schema["x-kubernetes-int-or-string"] == true {
		if _, ok := number(); ok {
			return nil
		}
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %v is neither an integer nor a string", path, v)
		}
		if p, ok := schema["anyOf"].([]any); ok {
			for _, alt := range p {
				if alt, ok := alt.(map[string]any); ok && alt["type"] == "string" {
					errs = append(errs, validate(alt, v, path))
				}
			}
		}
		return errors.Join(append(errs, validate(map[string]any{"pattern": schema["pattern"]}, v, path))...)
	}
	switch schema["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an object", path, v)
		}
		props, _ := schema["properties"].(map[string]any)
		for k, val := range m {
			sub, ok := props[k].(map[string]any)
			if !ok {
				sub, ok = schema["additionalProperties"].(map[string]any)
			}
			if !ok {
				errs = append(errs, fmt.Errorf("%s.%s: no such field", path, k))
				continue
			}
			errs = append(errs, validate(sub, val, path+"."+k))
		}
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				errs = append(errs, fmt.Errorf("%s.%s: required", path, r))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: %v is not a list", path, v)
		}
		items, _ := schema["items"].(map[string]any)
		for i, e := range a {
			errs = append(errs, validate(items, e, fmt.Sprintf("%s[%d]", path, i)))
		}
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s: %v is not a string", path, v)
		}
	case "integer", "number":
		n, ok := number()
		if !ok {
			return fmt.Errorf("%s: %v is not a number", path, v)
		}
		if m, ok := schema["minimum"]; ok && n < toFloat(m) {
			errs = append(errs, fmt.Errorf("%s: %v is below the minimum %v", path, v, m))
		}
		if m, ok := schema["maximum"]; ok && n > toFloat(m) {
			errs = append(errs, fmt.Errorf("%s: %v is above the maximum %v", path, v, m))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %v is not a boolean", path, v)
		}
	}
	if p, ok := schema["pattern"].(string); ok {
		if s, ok := v.(string); ok && !regexp.MustCompile(p).MatchString(s) {
			errs = append(errs, fmt.Errorf("%s: %q does not match %s", path, s, p))
		}
	}
	return errors.Join(errs...)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// TestQueueSchemaValidates keeps validate able to fail: specs the Queue
// CRD refuses.
func TestQueueSchemaValidates(t *testing.T) {
	schema := queueSchema(t)
	for name, spec := range map[string]map[string]any{
		"unknown field":   {"parnet": "root"},
		"weight below 0":  {"weight": int64(-1)},
		"user limit 0":    {"userLimitPercent": int64(0)},
		"state":           {"state": "Paused"},
		"window start":    {"timeWindows": []any{map[string]any{"name": "n", "start": "25:00", "end": "06:00"}}},
		"window no name":  {"timeWindows": []any{map[string]any{"start": "22:00", "end": "06:00"}}},
		"quantity":        {"guaranteed": map[string]any{"cpu": "lots"}},
		"guaranteed list": {"guaranteed": []any{"cpu"}},
	} {
		if err := validate(schema, spec, "spec"); err == nil {
			t.Errorf("%s: %v passes", name, spec)
		}
	}
	if err := validate(schema, map[string]any{"parent": "root", "weight": int64(2), "guaranteed": map[string]any{"cpu": "500m", "memory": int64(1 << 30)},
		"timeWindows": []any{map[string]any{"name": "night", "start": "22:00", "end": "06:00", "timeZone": "Asia/Shanghai"}}}, "spec"); err != nil {
		t.Errorf("a valid spec fails: %v", err)
	}
}

// The chart's values do what values.yaml says, and values it cannot
// honour fail the install rather than render something that breaks.
func TestChartValues(t *testing.T) {
	helmBinary(t)
	dashboard, err := os.ReadFile(filepath.Join("monitoring", "weft-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	monitors := objects(t, filepath.Join("monitoring", "monitors.yaml"))
	args := func(t *testing.T, r rendered, kind, name string) []string {
		t.Helper()
		u := r.find(kind, "weft-system", name)
		if u == nil {
			t.Fatalf("no %s weft-system/%s", kind, name)
		}
		var c []corev1.Container
		if kind == "DaemonSet" {
			c = as[appsv1.DaemonSet](t, u).Spec.Template.Spec.Containers
		} else {
			c = as[appsv1.Deployment](t, u).Spec.Template.Spec.Containers
		}
		return c[0].Args
	}
	hasAll := func(t *testing.T, got []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("no %s in %v", w, got)
			}
		}
	}
	for _, c := range []struct {
		name    string
		set     []string
		wantErr string
		check   func(t *testing.T, r rendered)
	}{
		{name: "defaults: no monitors, no dashboard, tide on", check: func(t *testing.T, r rendered) {
			for _, u := range r {
				if strings.HasPrefix(u.GetAPIVersion(), "monitoring.coreos.com/") || u.GetName() == "weft-grafana-dashboard" {
					t.Errorf("%s %s rendered by default", u.GetKind(), u.GetName())
				}
			}
			if r.find("Deployment", "weft-system", "weft-tide") == nil {
				t.Error("no weft-tide")
			}
		}},
		{name: "monitors are deploy/monitoring's", set: []string{"monitoring.serviceMonitor.enabled=true", "monitoring.serviceMonitor.labels.release=prometheus"},
			check: func(t *testing.T, r rendered) {
				for _, m := range monitors {
					got := r.find(m.GetKind(), m.GetNamespace(), m.GetName())
					if got == nil {
						t.Errorf("no %s %s", m.GetKind(), m.GetName())
						continue
					}
					sameField(t, m.GetKind()+" "+m.GetName(), m, got, "spec")
					if got.GetLabels()["release"] != "prometheus" {
						t.Errorf("%s %s: labels %v, no release=prometheus", m.GetKind(), m.GetName(), got.GetLabels())
					}
				}
			}},
		{name: "dashboard", set: []string{"monitoring.dashboard.enabled=true"}, check: func(t *testing.T, r rendered) {
			u := r.find("ConfigMap", "weft-system", "weft-grafana-dashboard")
			if u == nil {
				t.Fatal("no dashboard ConfigMap")
			}
			cm := as[corev1.ConfigMap](t, u)
			if cm.Data["weft-dashboard.json"] != string(dashboard) || cm.Labels["grafana_dashboard"] != "1" {
				t.Errorf("dashboard ConfigMap: labels %v, %d bytes of JSON, deploy/monitoring's %d", cm.Labels, len(cm.Data["weft-dashboard.json"]), len(dashboard))
			}
		}},
		{name: "tide off", set: []string{"tide.enabled=false", "monitoring.serviceMonitor.enabled=true"}, check: func(t *testing.T, r rendered) {
			for _, u := range r {
				if strings.HasPrefix(u.GetName(), "weft-tide") {
					t.Errorf("%s %s rendered with tide.enabled=false", u.GetKind(), u.GetName())
				}
			}
		}},
		{name: "other namespaces", set: []string{"namespaces.system=wsys", "namespaces.jobs=wjobs", "monitoring.serviceMonitor.enabled=true",
			"monitoring.dashboard.enabled=true", "nodePlugin.colocation.config.cpuWatermarkPercent=70"},
			check: func(t *testing.T, r rendered) {
				for _, u := range r {
					if s := js(u.Object); strings.Contains(s, "weft-system") || strings.Contains(s, "weft-jobs") {
						t.Errorf("%s %s still names weft-system or weft-jobs: %s", u.GetKind(), u.GetName(), s)
					}
				}
				for _, ns := range []string{"wsys", "wjobs"} {
					if r.find("Namespace", "", ns) == nil {
						t.Errorf("no Namespace %s", ns)
					}
				}
				np := as[appsv1.DaemonSet](t, r.find("DaemonSet", "wsys", "weft-nodeplugin")).Spec.Template.Spec.Containers[0].Args
				hasAll(t, np, "--namespace=wjobs", "--nm-key-secret=wsys/weft-nm-key", "--rm-webapp-address=weft-rm.wsys.svc:8088",
					"--colocation-configmap=wsys/weft-colocation")
				rm := as[appsv1.Deployment](t, r.find("Deployment", "wsys", "weft-rm")).Spec.Template.Spec.Containers[0].Args
				hasAll(t, rm, "--namespace=wjobs", "--state-namespace=wsys", "--ha-pod=wsys/$(POD_NAME)", "--nm-key-secret=wsys/weft-nm-key")
			}},
		{name: "memory limit", set: []string{"rm.memoryLimit=400Mi"}, check: func(t *testing.T, r rendered) {
			hasAll(t, args(t, r, "Deployment", "weft-rm"), "--memory-limit=400Mi")
		}},
		{name: "no memory limit", set: []string{"rm.memoryLimit="}, check: func(t *testing.T, r rendered) {
			if got := args(t, r, "Deployment", "weft-rm"); slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "--memory-limit") }) {
				t.Errorf("a memory limit with rm.memoryLimit empty: %v", got)
			}
		}},
		{name: "memory limit not a quantity", set: []string{"rm.memoryLimit=lots"}, wantErr: "memoryLimit"},
		{name: "namespaces not created", set: []string{"namespaces.create=false"}, check: func(t *testing.T, r rendered) {
			if ns := r.ofKind("Namespace"); len(ns) != 0 {
				t.Errorf("%d Namespaces rendered", len(ns))
			}
		}},
		{name: "ports", set: []string{"nodePlugin.ports.nodemanager=9041", "nodePlugin.ports.http=9042", "nodePlugin.ports.shuffle=23562",
			"rm.ports.client=9032", "rm.ports.webapp=9088", "tide.metricsPort=9999"},
			check: func(t *testing.T, r rendered) {
				hasAll(t, args(t, r, "Deployment", "weft-rm"), "--client-address=0.0.0.0:9032", "--scheduler-address=0.0.0.0:8030",
					"--webapp-address=0.0.0.0:9088", "--nm-port=9041", "--nm-http-port=9042")
				hasAll(t, args(t, r, "DaemonSet", "weft-nodeplugin"), "--address=$(NODE_IP):9041", "--http-address=$(NODE_IP):9042",
					"--shuffle-address=$(NODE_IP):23562", "--rm-webapp-address=weft-rm.weft-system.svc:9088")
				hasAll(t, args(t, r, "Deployment", "weft-tide"), "--metrics-address=$(POD_IP):9999")
				svc := as[corev1.Service](t, r.find("Service", "weft-system", "weft-rm"))
				if p := svc.Spec.Ports; len(p) != 3 || p[0].Port != 9032 || p[2].Port != 9088 {
					t.Errorf("Service ports %v", js(p))
				}
			}},
		{name: "colocation off", set: []string{"nodePlugin.colocation.enabled=false"}, check: func(t *testing.T, r rendered) {
			ds := as[appsv1.DaemonSet](t, r.find("DaemonSet", "weft-system", "weft-nodeplugin"))
			spec := ds.Spec.Template.Spec
			if spec.HostPID || spec.Containers[0].SecurityContext != nil || len(spec.Volumes) != 3 {
				t.Errorf("no colocation agent, yet hostPID %v, securityContext %s, volumes %s", spec.HostPID, js(spec.Containers[0].SecurityContext), js(spec.Volumes))
			}
			hasAll(t, spec.Containers[0].Args, "--profile=weft", "--colocation=false")
			for _, u := range r {
				if strings.Contains(u.GetName(), "colocation") {
					t.Errorf("%s %s rendered without the agent", u.GetKind(), u.GetName())
				}
			}
		}},
		{name: "no rm config: no ConfigMap, no --config", check: func(t *testing.T, r rendered) {
			if r.find("ConfigMap", "weft-system", "weft-rm-config") != nil {
				t.Error("weft-rm-config rendered without rm.config")
			}
			if got := args(t, r, "Deployment", "weft-rm"); slices.ContainsFunc(got, func(a string) bool { return strings.HasPrefix(a, "--config") }) {
				t.Errorf("--config without rm.config: %v", got)
			}
		}},
		{name: "rm config is a document weft-rm takes with the chart's flags over it",
			set: []string{"rm.config.nodes.expiry=5m", "rm.config.applications.maximumAllocationMB=16384", "rm.config.kubernetes.namespace=overridden"},
			check: func(t *testing.T, r rendered) {
				u := r.find("ConfigMap", "weft-system", "weft-rm-config")
				if u == nil {
					t.Fatal("no weft-rm-config ConfigMap")
				}
				file := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(file, []byte(as[corev1.ConfigMap](t, u).Data["config.yaml"]), 0o600); err != nil {
					t.Fatal(err)
				}
				d := as[appsv1.Deployment](t, r.find("Deployment", "weft-system", "weft-rm"))
				pod := d.Spec.Template
				flags := slices.Clone(pod.Spec.Containers[0].Args)
				i := slices.Index(flags, "--config=/etc/weft/rm/config.yaml")
				if i < 0 {
					t.Fatalf("no --config in %v", flags)
				}
				flags[i] = "--config=" + file
				fs := flag.NewFlagSet("weft-rm", flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				c, err := rmconfig.Parse(fs, flags)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Validate(); err != nil {
					t.Fatal(err)
				}
				if c.Nodes.Expiry.Duration != 5*time.Minute || c.Applications.MaximumAllocationMB != 16384 {
					t.Errorf("the file's values are not weft-rm's: expiry %s, maximum %d MB", c.Nodes.Expiry.Duration, c.Applications.MaximumAllocationMB)
				}
				if c.Kubernetes.Namespace != "weft-jobs" {
					t.Errorf("the chart's --namespace did not win over the file: %s", c.Kubernetes.Namespace)
				}
				mounted := slices.ContainsFunc(pod.Spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/weft/rm" }) &&
					slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool {
						return v.ConfigMap != nil && v.ConfigMap.Name == "weft-rm-config"
					})
				if !mounted || pod.Annotations["checksum/config"] == "" {
					t.Errorf("the ConfigMap is not mounted at /etc/weft/rm, or no checksum rolls the pods: %s", js(pod))
				}
			}},
		{name: "rm config with its own kind", set: []string{"rm.config.kind=Other"}, wantErr: "config"},
		{name: "colocation config", set: []string{"nodePlugin.colocation.config.cpuWatermarkPercent=70", "nodePlugin.colocation.config.peakWindow=5m"},
			check: func(t *testing.T, r rendered) {
				u := r.find("ConfigMap", "weft-system", "weft-colocation")
				if u == nil {
					t.Fatal("no weft-colocation ConfigMap")
				}
				cfg, err := colocation.DefaultConfig().Merge(as[corev1.ConfigMap](t, u).Data[colocation.ConfigKey])
				if err != nil || cfg.CPUWatermark != 70 || cfg.PeakWindow.Duration != 5*time.Minute {
					t.Errorf("the agent reads %+v, %v", cfg, err)
				}
			}},
		{name: "no colocation ConfigMap by default", check: func(t *testing.T, r rendered) {
			if r.find("ConfigMap", "weft-system", "weft-colocation") != nil {
				t.Error("weft-colocation rendered without nodePlugin.colocation.config")
			}
		}},
		{name: "extra args, one replica, an image", set: []string{"rm.extraArgs={--milli-cpu-per-vcore=250}", "nodePlugin.extraArgs={--milli-cpu-per-vcore=250}",
			"rm.replicas=1", "image.repository=registry.example/weft", "image.tag=v1"},
			check: func(t *testing.T, r rendered) {
				rm := as[appsv1.Deployment](t, r.find("Deployment", "weft-system", "weft-rm"))
				hasAll(t, rm.Spec.Template.Spec.Containers[0].Args, "--milli-cpu-per-vcore=250", "--ha-id=$(POD_NAME)")
				hasAll(t, args(t, r, "DaemonSet", "weft-nodeplugin"), "--milli-cpu-per-vcore=250")
				if *rm.Spec.Replicas != 1 || rm.Spec.Template.Spec.Containers[0].Image != "registry.example/weft:v1" {
					t.Errorf("replicas %d, image %s", *rm.Spec.Replicas, rm.Spec.Template.Spec.Containers[0].Image)
				}
			}},
		{name: "an unknown profile", set: []string{"profile=yarn"}, wantErr: "profile"},
		{name: "a misspelt value", set: []string{"rm.replica=3"}, wantErr: "replica"},
		{name: "no weft-rm", set: []string{"rm.replicas=0"}, wantErr: "replicas"},
		{name: "a queue name YARN cannot path", set: []string{"queues[0].name=root.a"}, wantErr: "name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var a []string
			for _, s := range c.set {
				a = append(a, "--set", s)
			}
			r, err := render(t, a...)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("rendered (error %v), want an error about %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

// notes renders the chart's NOTES.txt, which `helm template` leaves out:
// through a copy of the chart where a template prints it.
func notes(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "weft")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(chartDir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"notes/NOTES.txt":         string(b),
		"templates/zz-notes.yaml": "notes: {{ tpl (.Files.Get \"notes/NOTES.txt\") . | toJson }}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := helmTemplate(t, dir, append(args, "--show-only", "templates/zz-notes.yaml")...)
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Notes string }
	if err := yaml.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return v.Notes
}

var propertyRE = regexp.MustCompile(`<property>.*</property>`)

// NOTES.txt tells the yarn-site.xml properties clients need: weft-rm's
// addresses through the Service's DNS name and ports and, with more than
// one replica, YARN's HA alternative as test/hadoop's WriteHAConf writes
// it (an rm-id a replica, each with its addresses, short failover sleeps).
func TestChartNotes(t *testing.T) {
	helmBinary(t)
	for _, c := range []struct {
		name   string
		set    string
		host   string
		ports  [3]int
		rmIDs  []string
		others []string // in the text
	}{
		{name: "defaults", host: "weft-rm.weft-system.svc", ports: [3]int{8032, 8030, 8088}, rmIDs: []string{"rm1", "rm2"}, others: []string{"root, default"}},
		{name: "three replicas, other ports and namespace", set: "rm.replicas=3,rm.ports.client=9032,rm.ports.scheduler=9030,rm.ports.webapp=9088,namespaces.system=wsys",
			host: "weft-rm.wsys.svc", ports: [3]int{9032, 9030, 9088}, rmIDs: []string{"rm1", "rm2", "rm3"}},
		{name: "one replica", set: "rm.replicas=1,profile=koordinator,queues=null", host: "weft-rm.weft-system.svc", ports: [3]int{8032, 8030, 8088},
			others: []string{"koordinator profile", "none rendered"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			if c.set != "" {
				args = []string{"--set", c.set}
			}
			text := notes(t, args...)
			props := map[string]string{}
			for _, line := range propertyRE.FindAllString(text, -1) {
				var p struct {
					Name  string `xml:"name"`
					Value string `xml:"value"`
				}
				if err := xml.Unmarshal([]byte(line), &p); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				props[p.Name] = p.Value
			}
			want := map[string]string{
				"yarn.resourcemanager.address":           fmt.Sprintf("%s:%d", c.host, c.ports[0]),
				"yarn.resourcemanager.scheduler.address": fmt.Sprintf("%s:%d", c.host, c.ports[1]),
				"yarn.resourcemanager.webapp.address":    fmt.Sprintf("%s:%d", c.host, c.ports[2]),
				"yarn.nodemanager.recovery.enabled":      "true",
			}
			if c.rmIDs != nil {
				want["yarn.resourcemanager.ha.enabled"] = "true"
				want["yarn.resourcemanager.ha.rm-ids"] = strings.Join(c.rmIDs, ",")
				want["yarn.resourcemanager.cluster-id"] = "weft"
				want["yarn.client.failover-sleep-base-ms"] = "500"
				want["yarn.client.failover-sleep-max-ms"] = "2000"
				for _, id := range c.rmIDs {
					host := props["yarn.resourcemanager.hostname."+id]
					if host == "" {
						t.Errorf("no yarn.resourcemanager.hostname.%s", id)
					}
					want["yarn.resourcemanager.address."+id] = fmt.Sprintf("%s:%d", host, c.ports[0])
					want["yarn.resourcemanager.scheduler.address."+id] = fmt.Sprintf("%s:%d", host, c.ports[1])
					want["yarn.resourcemanager.webapp.address."+id] = fmt.Sprintf("%s:%d", host, c.ports[2])
				}
			} else if _, ok := props["yarn.resourcemanager.ha.rm-ids"]; ok {
				t.Errorf("rm-ids for one replica")
			}
			for k, v := range want {
				if props[k] != v {
					t.Errorf("%s = %q, want %q", k, props[k], v)
				}
			}
			for _, o := range c.others {
				if !strings.Contains(text, o) {
					t.Errorf("no %q in the notes", o)
				}
			}
			if t.Failed() {
				t.Logf("NOTES.txt:\n%s", text)
			}
		})
	}
}
