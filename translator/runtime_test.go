package translator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/protos/yarn/records"
)

func TestRuntime(t *testing.T) {
	s := spec(records.TierLow)
	s.Runtime = Runtime{Image: "weft.local/node-runtime:1", JavaHome: "/usr/lib/jvm/java-17", HadoopHome: "/opt/hadoop", HadoopConf: "hadoop-conf",
		HostNetwork: true, HostPaths: []string{"/usr", "/opt/hadoop"}, LocalizerImage: "weft.local/weft:dev"}
	s.CredentialsSecret, s.LocalResources, s.NodeName = "launch", true, "node-a"
	pod, err := Plain.Pod(s)
	if err != nil {
		t.Fatal(err)
	}
	if !pod.Spec.HostNetwork || pod.Spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet || pod.Spec.NodeName != "node-a" {
		t.Errorf("network/node: %v %v %q", pod.Spec.HostNetwork, pod.Spec.DNSPolicy, pod.Spec.NodeName)
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	for _, k := range []string{"HADOOP_HOME", "HADOOP_COMMON_HOME", "HADOOP_YARN_HOME", "HADOOP_HDFS_HOME", "HADOOP_MAPRED_HOME"} {
		if env[k] != "/opt/hadoop" {
			t.Errorf("%s = %q", k, env[k])
		}
	}
	if env["HADOOP_CONF_DIR"] != ConfDir {
		t.Errorf("HADOOP_CONF_DIR = %q", env["HADOOP_CONF_DIR"])
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m
	}
	for _, p := range []string{"/usr", "/opt/hadoop", ConfDir, CacheMount, CredentialsDir} {
		if m, ok := mounts[p]; !ok || !m.ReadOnly {
			t.Errorf("mount %s: %+v (want read-only)", p, m)
		}
	}
	if len(pod.Spec.InitContainers) != 1 || pod.Spec.InitContainers[0].Image != "weft.local/weft:dev" ||
		pod.Spec.InitContainers[0].Command[0] != "weft-localizer" {
		t.Fatalf("init containers %+v", pod.Spec.InitContainers)
	}
	// Without local resources there is nothing to localize.
	s.LocalResources = false
	if pod, _ := Plain.Pod(s); len(pod.Spec.InitContainers) != 0 {
		t.Errorf("localizer without resources")
	}
}

func TestPodOutcome(t *testing.T) {
	term := func(code int32, reason string) []corev1.ContainerStatus {
		return []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, Message: "boom"}}}}
	}
	tests := []struct {
		name  string
		pod   corev1.PodStatus
		state records.ContainerState
		code  int32
		diag  string
	}{
		{"pending", corev1.PodStatus{Phase: corev1.PodPending}, records.ContainerNew, 0, ""},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning}, records.ContainerRunning, 0, ""},
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: term(0, "Completed")}, records.ContainerComplete, 0, "Completed boom"},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: term(3, "Error")}, records.ContainerComplete, 3, "Error boom"},
		{"localization failed", corev1.PodStatus{Phase: corev1.PodFailed, InitContainerStatuses: term(1, "Error")}, records.ContainerComplete,
			records.ExitInvalid, "Localization failed: boom"},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}, records.ContainerComplete,
			records.ExitPreempted, "Evicted low on memory"},
	}
	for _, tc := range tests {
		code, diag, state := PodOutcome(&corev1.Pod{Status: tc.pod})
		if state != tc.state || code != tc.code || diag != tc.diag {
			t.Errorf("%s: got %s %d %q", tc.name, state, code, diag)
		}
	}
}
