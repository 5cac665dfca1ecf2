package translator

import (
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator/wellknown"
)

func TestTierPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy TierPolicy
		c      Container
		tags   []string
		want   records.Tier
	}{
		{"AM", DefaultTierPolicy, Container{AM: true, RequestPriority: 5}, nil, records.TierHigh},
		{"first worker is the minimum", DefaultTierPolicy, Container{RequestPriority: 20}, nil, records.TierMedium},
		{"second worker is elastic", DefaultTierPolicy, Container{RequestPriority: 20, WorkersBefore: 1}, nil, records.TierLow},
		{"tag raises the minimum", DefaultTierPolicy, Container{WorkersBefore: 3}, []string{"etl", "weft.min-workers=4"}, records.TierMedium},
		{"tag's minimum reached", DefaultTierPolicy, Container{WorkersBefore: 4}, []string{"weft.min-workers=4"}, records.TierLow},
		{"minimum of zero", DefaultTierPolicy, Container{}, []string{"weft.min-workers=0"}, records.TierLow},
		{"bad tag ignored", DefaultTierPolicy, Container{}, []string{"weft.min-workers=lots"}, records.TierMedium},
		{"parameter server by priority", DefaultTierPolicy, Container{RequestPriority: 1, WorkersBefore: 9}, []string{"weft.high-priorities=1, 2"}, records.TierHigh},
		{"queue policy", TierPolicy{DefaultMinWorkers: 10, HighPriorities: []int32{0}}, Container{RequestPriority: 3, WorkersBefore: 5}, nil, records.TierMedium},
		{"queue policy high", TierPolicy{HighPriorities: []int32{0}}, Container{RequestPriority: 0, WorkersBefore: 5}, nil, records.TierHigh},
	}
	for _, tc := range tests {
		if got := tc.policy.Tier(tc.c, tc.tags); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func spec(tier records.Tier) ContainerSpec {
	return ContainerSpec{
		App: "application_1700000000000_0001", Attempt: "appattempt_1700000000000_0001_000001",
		Container: "container_1700000000000_0001_01_000002", User: "alice@EXAMPLE", Queue: "root.etl",
		Tier: tier, MemoryMB: 1536, VCores: 2, Commands: []string{"{{JAVA_HOME}}/bin/java", "-cp", "a.jar<CPS>b.jar", "Main", "1><LOG_DIR>/stdout"},
		Env: map[string]string{"CLASSPATH": "$PWD:{{HADOOP_CONF_DIR}}"}, Runtime: Runtime{Image: "weft/hadoop:3.4.1", JavaHome: "/usr/lib/jvm/java-17"},
		NMPort: 8041, NMHTTPPort: 8042, Namespace: "weft-jobs", SchedulerName: "weft-scheduler",
	}
}

func TestPodPerProfile(t *testing.T) {
	tests := []struct {
		profile      Profile
		cpuName      corev1.ResourceName
		cpu          resource.Quantity
		memName      corev1.ResourceName
		label, annot string
		wantPriority int32
	}{
		{Katalyst, "resource.katalyst.kubewharf.io/reclaimed_millicpu", resource.MustParse("2000"), "resource.katalyst.kubewharf.io/reclaimed_memory",
			"", "katalyst.kubewharf.io/qos_level=reclaimed_cores", -3000},
		{Koordinator, "kubernetes.io/batch-cpu", resource.MustParse("2000"), "kubernetes.io/batch-memory", "koordinator.sh/qosClass=BE", "", 5100},
		{Plain, corev1.ResourceCPU, resource.MustParse("2"), corev1.ResourceMemory, "", "", -3000},
		{Weft, "weft.io/reclaimed-cpu", resource.MustParse("2000"), "weft.io/reclaimed-memory", "", "", -3000},
	}
	for _, tc := range tests {
		t.Run(tc.profile.Name, func(t *testing.T) {
			pod, err := tc.profile.Pod(spec(records.TierLow))
			if err != nil {
				t.Fatal(err)
			}
			c := pod.Spec.Containers[0]
			if got := c.Resources.Requests[tc.cpuName]; got.Cmp(tc.cpu) != 0 {
				t.Errorf("cpu %s = %s, want %s", tc.cpuName, got.String(), tc.cpu.String())
			}
			if got := c.Resources.Requests[tc.memName]; got.Value() != 1536<<20 {
				t.Errorf("memory %s = %s", tc.memName, got.String())
			}
			// Memory is always capped; native CPU only with StrictCPU
			// (YARN's vcores are a share by default).
			wantLimits := 2
			if tc.cpuName == corev1.ResourceCPU {
				wantLimits = 1
			}
			if len(c.Resources.Requests) != 2 || len(c.Resources.Limits) != wantLimits || c.Resources.Limits[tc.memName] != c.Resources.Requests[tc.memName] {
				t.Errorf("resources %v", c.Resources)
			}
			strict := tc.profile
			strict.StrictCPU = true
			if sp, _ := strict.Pod(spec(records.TierLow)); len(sp.Spec.Containers[0].Resources.Limits) != 2 {
				t.Errorf("strict CPU: limits %v", sp.Spec.Containers[0].Resources.Limits)
			}
			for _, kv := range []struct {
				m map[string]string
				s string
			}{{pod.Labels, tc.label}, {pod.Annotations, tc.annot}} {
				if k, v, ok := strings.Cut(kv.s, "="); ok && kv.m[k] != v {
					t.Errorf("missing %s in %v", kv.s, kv.m)
				}
			}
			if *pod.Spec.Priority != tc.wantPriority || pod.Spec.PriorityClassName != "weft-low" {
				t.Errorf("priority %d %s", *pod.Spec.Priority, pod.Spec.PriorityClassName)
			}
			for k, want := range map[string]string{wellknown.LabelApp: "application_1700000000000_0001", wellknown.LabelTier: "low", wellknown.LabelQueue: "root.etl",
				wellknown.LabelUser: "alice_EXAMPLE", wellknown.LabelContainer: "container_1700000000000_0001_01_000002"} {
				if pod.Labels[k] != want {
					t.Errorf("label %s = %q, want %q", k, pod.Labels[k], want)
				}
			}
			if pod.Name != "container-1700000000000-0001-01-000002" || pod.Spec.SchedulerName != "weft-scheduler" ||
				pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("pod %s scheduler %s restart %s", pod.Name, pod.Spec.SchedulerName, pod.Spec.RestartPolicy)
			}
		})
	}
	// Weft's pods request no native cpu or memory: kubelet makes them
	// BestEffort, so their cgroups are all in kubepods/besteffort, the big
	// box its colocation agent bounds.
	wp, _ := Weft.Pod(spec(records.TierMedium))
	for _, c := range wp.Spec.Containers {
		for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
			if _, ok := l[corev1.ResourceCPU]; ok {
				t.Errorf("weft profile pod asks native cpu: %v", c.Resources)
			}
			if _, ok := l[corev1.ResourceMemory]; ok {
				t.Errorf("weft profile pod asks native memory: %v", c.Resources)
			}
		}
	}
	// Tiers order reclaim in every profile.
	for _, p := range []Profile{Weft, Katalyst, Koordinator, Plain} {
		if !(p.Priorities[records.TierLow] < p.Priorities[records.TierMedium] && p.Priorities[records.TierMedium] < p.Priorities[records.TierHigh]) {
			t.Errorf("%s: tiers out of order %v", p.Name, p.Priorities)
		}
	}
	if _, err := Plain.Pod(ContainerSpec{Tier: records.TierLow, Container: "c"}); err == nil {
		t.Error("pod without resources accepted")
	}
}

// runScript runs a pod's launch script in a local bash with the pod's
// static environment.
func runScript(t *testing.T, pod *corev1.Pod, extraEnv ...string) *exec.Cmd {
	t.Helper()
	c := pod.Spec.Containers[0]
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, extraEnv...)
	for _, e := range c.Env {
		if e.ValueFrom == nil && e.Name != "PWD" {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
	}
	return cmd
}

func TestLaunchScript(t *testing.T) {
	s := spec(records.TierHigh)
	s.Runtime.JavaHome = "/opt/java"
	s.Env = map[string]string{
		"CLASSPATH":       `$PWD:{{HADOOP_CONF_DIR}}<CPS>$EXTRA`,
		"HADOOP_CONF_DIR": "/etc/hadoop",
		"EXTRA":           `say "hi"`,
		"bad name":        "ignored",
	}
	s.Commands = []string{`echo "java=$JAVA_HOME" cp=$CLASSPATH`, `&& echo 'it''s' && exit 3`}
	pod, err := Plain.Pod(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := runScript(t, pod).Output()
	var exit *exec.ExitError
	if !errorsAs(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("exit: %v (output %q)", err, out)
	}
	// Exports are expanded in name order by the shell, as launch_container.sh does.
	got := string(out)
	if !strings.Contains(got, "java=/opt/java cp=") || !strings.Contains(got, ":/etc/hadoop:say \"hi\"") || !strings.Contains(got, "its") {
		t.Fatalf("output %q", got)
	}
}

func TestLaunchScriptForwardsTERM(t *testing.T) {
	s := spec(records.TierLow)
	s.Env = nil
	s.Commands = []string{`trap 'echo got-term; exit 143' TERM; echo started; sleep 30 & wait`}
	pod, err := Plain.Pod(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, delay := range []time.Duration{0, 300 * time.Millisecond} { // before and after the child starts
		cmd := runScript(t, pod)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		out, _ := io.ReadAll(stdout)
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errorsAs(err, &exit) || exit.ExitCode() != 143 && exit.ExitCode() != -1 {
			t.Fatalf("delay %v: exit %v, output %q", delay, err, out)
		}
		if delay > 0 && !strings.Contains(string(out), "got-term") {
			t.Fatalf("delay %v: the container's process did not see TERM: %q", delay, out)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("delay %v: TERM did not end the container", delay)
		}
	}
}

func TestExpandCommand(t *testing.T) {
	for in, want := range map[string]string{
		"{{JAVA_HOME}}/bin/java -cp {{PWD}}<CPS>x 1><LOG_DIR>/stdout": "$JAVA_HOME/bin/java -cp $PWD:x 1>/weft/logs/stdout",
		"{{not valid}} {{A1_B}}": "{{not valid}} $A1_B",
	} {
		if got := ExpandCommand(in); got != want {
			t.Errorf("ExpandCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

func TestExportOrder(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CLASSPATH": "$PWD:${HADOOP_CONF_DIR}:{{B}}", "HADOOP_CONF_DIR": "/etc", "B": "x"}, "B HADOOP_CONF_DIR CLASSPATH"},
		{map[string]string{"Z": "1", "A": "$Z", "M": "$A"}, "Z A M"},
		{map[string]string{"A": "$B", "B": "$A", "C": "1"}, "B A C"}, // a cycle keeps a stable order
		{map[string]string{"bad-name": "x", "OK": "$bad"}, "OK"},
	}
	for _, tc := range tests {
		if got := strings.Join(exportOrder(tc.env), " "); got != tc.want {
			t.Errorf("exportOrder(%v) = %s, want %s", tc.env, got, tc.want)
		}
	}
}

// A pod ended by a disruption — the colocation agent's eviction under
// memory pressure, the Eviction API, the kubelet's own — is YARN's
// PREEMPTED with the disruption's reason in the diagnostics; an ordinary
// failure stays a failure.
func TestPodOutcomeDisruption(t *testing.T) {
	failed := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: conds,
			ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}}}
	}
	tests := []struct {
		name     string
		pod      *corev1.Pod
		wantCode int32
		wantDiag string
	}{
		{"killed", failed(), 137, "Error"},
		{"evicted by the agent", failed(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByWeftColocation", Message: "memory pressure: node memory 93% above the eviction watermark 90%"}),
			-102, "EvictionByWeftColocation: memory pressure: node memory 93% above the eviction watermark 90%"},
		{"condition false", failed(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}), 137, "Error"},
		{"refused by the kubelet's admission", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfweft.io/reclaimed-cpu",
			Message: "Pod was rejected: Node didn't have enough resource: weft.io/reclaimed-cpu, requested: 250, used: 500, capacity: 600"}},
			-102, "OutOfweft.io/reclaimed-cpu Pod was rejected: Node didn't have enough resource: weft.io/reclaimed-cpu, requested: 250, used: 500, capacity: 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, diag, st := PodOutcome(tc.pod)
			if code != tc.wantCode || diag != tc.wantDiag || st != "COMPLETE" {
				t.Errorf("got %d %q %s, want %d %q COMPLETE", code, diag, st, tc.wantCode, tc.wantDiag)
			}
		})
	}
}
