package translator

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator/wellknown"
)

// BatchTolerations are the tolerations of every pod Weft makes: nodes
// lent whole to batch work (the tide's Offline nodes) take them.
var BatchTolerations = []corev1.Toleration{{Key: wellknown.TaintTide, Operator: corev1.TolerationOpEqual, Value: wellknown.TaintTideOffline,
	Effect: corev1.TaintEffectNoSchedule}}

// Paths inside every container pod, laid out as a NodeManager lays out a
// container's directories.
const (
	WorkDir  = "/weft/work"
	LocalDir = "/weft/local"
	LogDir   = "/weft/logs"
	// CredentialsDir holds the container's credentials, mounted from a
	// Secret; TokenFile is HADOOP_TOKEN_FILE_LOCATION.
	CredentialsDir = "/weft/credentials"
	TokenFile      = CredentialsDir + "/" + TokenFileKey
	// TokenFileKey is the key of the token storage in the Secret.
	TokenFileKey = "container_tokens"
	// LocalResourcesKey holds the container's LocalResources, a
	// ContainerLaunchContextProto with only local_resources set.
	LocalResourcesKey = "local_resources"
	// CacheMount is where the localizer sees the node's cache.
	CacheMount = "/weft/cache"
)

// ContainerSpec is one YARN container to run as a pod.
type ContainerSpec struct {
	App, Attempt, Container string
	User, Queue             string
	Tier                    records.Tier
	MemoryMB                int64
	VCores                  int32
	// Commands and Env come from the ContainerLaunchContext, unexpanded.
	Commands []string
	Env      map[string]string
	// Runtime is the node's part: image, Java, Hadoop, network, localizer.
	Runtime Runtime
	// LocalResources is true when the credentials Secret holds
	// LocalResourcesKey, for the localizer to fetch before the container
	// starts.
	LocalResources bool
	// NodeName binds the pod to a node the RM already chose; empty leaves
	// placement to SchedulerName.
	NodeName string
	// NMPort and NMHTTPPort are the node plugin's ports, which AMs and
	// shuffle clients reach on the node.
	NMPort, NMHTTPPort int32
	// AppSubmitTime and MaxAppAttempts are given to AMs, as YARN does.
	AppSubmitTime  int64
	MaxAppAttempts int32
	// CredentialsSecret names the Secret holding the container's token
	// storage under TokenFileKey; empty for a container without tokens.
	CredentialsSecret string
	// RM is the cluster id of the ResourceManager the container belongs to.
	RM string
	// Namespace, SchedulerName and Owner place the pod.
	Namespace     string
	SchedulerName string
	Owner         *metav1.OwnerReference
}

// yarnVar matches YARN's cross-platform variable syntax {{NAME}}.
var yarnVar = regexp.MustCompile(`\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}`)

// AddOpens is what <ADD_OPENS> expands to: the --add-opens options
// Hadoop needs on Java 17 and later, which the container runtimes run.
const AddOpens = "--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED " +
	"--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED " +
	"--add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED " +
	"--add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED " +
	"--add-opens=java.base/sun.security.util=ALL-UNNAMED"

// ExpandCommand rewrites a YARN launch command for a Linux shell, as the
// NodeManager does: {{VAR}} becomes $VAR, <CPS> the class path separator,
// <LOG_DIR> the container's log directory, <ADD_OPENS> Java 17's options.
func ExpandCommand(s string) string {
	s = yarnVar.ReplaceAllString(s, "$$$1")
	s = strings.ReplaceAll(s, "<CPS>", ":")
	s = strings.ReplaceAll(s, "<ADD_OPENS>", AddOpens)
	return strings.ReplaceAll(s, "<LOG_DIR>", LogDir)
}

// limits are a container's limits for its requests res: the same, but
// for native CPU without StrictCPU, which has none.
func (p Profile) limits(res corev1.ResourceList) corev1.ResourceList {
	if p.CPU != corev1.ResourceCPU || p.StrictCPU {
		return res
	}
	limits := res.DeepCopy()
	delete(limits, corev1.ResourceCPU)
	return limits
}

// Pod builds the pod that runs a container under profile p.
func (p Profile) Pod(c ContainerSpec) (*corev1.Pod, error) {
	if !c.Tier.Valid() {
		return nil, fmt.Errorf("translator: container %s has no tier", c.Container)
	}
	if c.MemoryMB <= 0 || c.VCores <= 0 {
		return nil, fmt.Errorf("translator: container %s asks for <memory:%d, vCores:%d>", c.Container, c.MemoryMB, c.VCores)
	}
	script := c.script()
	res := corev1.ResourceList{p.Memory: *resource.NewQuantity(c.MemoryMB<<20, resource.BinarySI)}
	if p.CPUMilli {
		res[p.CPU] = *resource.NewQuantity(int64(c.VCores)*p.VCoreMilli(), resource.DecimalSI)
	} else {
		res[p.CPU] = *resource.NewMilliQuantity(int64(c.VCores)*p.VCoreMilli(), resource.DecimalSI)
	}
	labels := map[string]string{wellknown.LabelApp: c.App, wellknown.LabelContainer: c.Container, wellknown.LabelTier: c.Tier.String(),
		wellknown.LabelQueue: labelValue(c.Queue), wellknown.LabelUser: labelValue(c.User), wellknown.LabelManagedBy: wellknown.ManagedByWeft}
	if c.Attempt != "" {
		labels[wellknown.LabelAttempt] = c.Attempt
	}
	if c.RM != "" {
		labels[wellknown.LabelRM] = labelValue(c.RM)
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range p.Annotations {
		annotations[k] = v
	}
	priority := p.Priorities[c.Tier]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(c.Container), Namespace: c.Namespace, Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy:     corev1.RestartPolicyNever,
			Tolerations:       append([]corev1.Toleration(nil), BatchTolerations...),
			SchedulerName:     c.SchedulerName,
			NodeName:          c.NodeName,
			PriorityClassName: PriorityClassName(c.Tier),
			Priority:          &priority,
			Containers: []corev1.Container{{
				Name: "yarn-container", Image: c.Runtime.Image, WorkingDir: WorkDir,
				Command:   []string{"/bin/bash", "-c", script},
				Env:       c.env(),
				Resources: corev1.ResourceRequirements{Requests: res, Limits: p.limits(res)},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "work", MountPath: WorkDir}, {Name: "local", MountPath: LocalDir}, {Name: "logs", MountPath: LogDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "local", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	if c.CredentialsSecret != "" {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "credentials", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: c.CredentialsSecret}}})
		ctr := &pod.Spec.Containers[0]
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "credentials", MountPath: CredentialsDir, ReadOnly: true})
	}
	c.Runtime.apply(pod, c)
	if c.Owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*c.Owner}
	}
	return pod, nil
}

// env is what a NodeManager sets for every container. The node's name
// comes from the downward API, since the pod's node is chosen after it is
// built.
func (c ContainerSpec) env() []corev1.EnvVar {
	nodeName := &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}
	vars := []corev1.EnvVar{
		{Name: "NM_HOST", ValueFrom: nodeName},
		{Name: "NM_PORT", Value: strconv.Itoa(int(c.NMPort))},
		{Name: "NM_HTTP_PORT", Value: strconv.Itoa(int(c.NMHTTPPort))},
		{Name: "CONTAINER_ID", Value: c.Container},
		{Name: "USER", Value: c.User}, {Name: "LOGNAME", Value: c.User}, {Name: "HOME", Value: WorkDir},
		{Name: "PWD", Value: WorkDir}, {Name: "LOCAL_DIRS", Value: LocalDir}, {Name: "LOG_DIRS", Value: LogDir},
		{Name: "LOCAL_USER_DIRS", Value: LocalDir + "/usercache/" + c.User + "/"},
		{Name: "HADOOP_TOKEN_FILE_LOCATION", Value: TokenFile},
		{Name: "JAVA_HOME", Value: c.Runtime.JavaHome},
	}
	if c.Tier == records.TierHigh && c.AppSubmitTime > 0 {
		// The RM's web proxy path of the application, which AM web apps
		// (AmIpFilter) build their redirect from.
		vars = append(vars, corev1.EnvVar{Name: "APP_SUBMIT_TIME_ENV", Value: strconv.FormatInt(c.AppSubmitTime, 10)},
			corev1.EnvVar{Name: "MAX_APP_ATTEMPTS", Value: strconv.Itoa(int(c.MaxAppAttempts))},
			corev1.EnvVar{Name: "APPLICATION_WEB_PROXY_BASE", Value: "/proxy/" + c.App})
	}
	return vars
}

// script is the container's launch script, as the NodeManager writes
// launch_container.sh: the launch context's environment as exports, which
// the shell expands in order (values refer to $PWD, $JAVA_HOME and to each
// other; Kubernetes would not expand $VAR in env values), then the
// commands joined with spaces. The commands run as a child that receives
// TERM and INT: the script is the pod's PID 1, which bash would otherwise
// leave deaf to them until the kill grace period ends.
func (c ContainerSpec) script() string {
	var b strings.Builder
	for _, k := range exportOrder(c.Env) {
		fmt.Fprintf(&b, "export %s=\"%s\"\n", k, strings.ReplaceAll(ExpandCommand(c.Env[k]), `"`, `\"`))
	}
	cmds := make([]string, len(c.Commands))
	for i, cmd := range c.Commands {
		cmds[i] = ExpandCommand(cmd)
	}
	joined := strings.ReplaceAll(strings.Join(cmds, " "), `'`, `'\''`)
	// The trap comes first; a signal that arrives before the child exists
	// is remembered and passed on once it does.
	// set -m runs the child as its own process group, which is signalled
	// whole, as a NodeManager signals a container's process group.
	// The container's temporary directory, which YARN makes in its working
	// directory and Hadoop's AMs point java.io.tmpdir at ($PWD/tmp).
	b.WriteString("mkdir -p tmp\n")
	b.WriteString(`set -m; child=; term=; trap 'term=1; [ -n "$child" ] && kill -TERM -- "-$child" 2>/dev/null' TERM INT` + "\n")
	b.WriteString("/bin/bash -c '" + joined + "' &\n")
	b.WriteString(`child=$!; [ -n "$term" ] && kill -TERM -- "-$child" 2>/dev/null` + "\n")
	// wait returns early when a trapped signal arrives; wait again for the
	// child's own exit status.
	b.WriteString("wait $child; status=$?\nwhile kill -0 $child 2>/dev/null; do wait $child; status=$?; done\n")
	// As a NodeManager puts the end of a failed container's stderr in its
	// diagnostics, the script leaves it as the pod's termination message.
	b.WriteString(`if [ "$status" -ne 0 ]; then for f in ` + LogDir + `/*err*; do [ -f "$f" ] && { echo "Last 2048 bytes of ${f##*/} :"; tail -c 2048 "$f"; }; done > /dev/termination-log 2>/dev/null; fi` + "\n")
	b.WriteString("exit $status\n")
	return b.String()
}

var validEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var envRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)|\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}`)

// exportOrder orders the launch context's variables so that each comes
// after those of them it references (CLASSPATH after HADOOP_CONF_DIR);
// otherwise by name. Invalid names are dropped; a cycle keeps name order.
func exportOrder(env map[string]string) []string {
	var names []string
	for k := range env {
		if validEnvName.MatchString(k) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	deps := map[string][]string{}
	for _, k := range names {
		for _, m := range envRef.FindAllStringSubmatch(env[k], -1) {
			ref := m[1] + m[2]
			if _, ok := env[ref]; ok && ref != k {
				deps[k] = append(deps[k], ref)
			}
		}
	}
	var out []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string)
	visit = func(k string) {
		if state[k] != 0 {
			return // done, or a cycle: leave it where name order puts it
		}
		state[k] = 1
		for _, d := range deps[k] {
			visit(d)
		}
		state[k] = 2
		out = append(out, k)
	}
	for _, k := range names {
		visit(k)
	}
	return out
}

// PodName turns a container id into its pod's name (DNS-1123).
func PodName(container string) string { return strings.ReplaceAll(container, "_", "-") }

var labelUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// labelValue makes s a valid label value (users and queues may hold any
// character).
func labelValue(s string) string {
	s = labelUnsafe.ReplaceAllString(s, "_")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "._-")
}

// ContainerOf returns the YARN container a pod runs, when it is one of
// the containers of the RM named rm (wellknown.LabelRM,
// wellknown.LabelContainer).
func ContainerOf(p *corev1.Pod, rm string) (records.ContainerID, bool) {
	if p.Labels[wellknown.LabelRM] != labelValue(rm) {
		return records.ContainerID{}, false
	}
	id, err := records.ParseContainerID(p.Labels[wellknown.LabelContainer])
	return id, err == nil
}

// PodTier is the tier a pod's label names; zero (unknown) for none or
// another name.
func PodTier(p *corev1.Pod) records.Tier {
	t, _ := wellknown.TierOf(p.Labels)
	return t
}

// PodOutcome reads a container pod: its state and, once complete, the
// exit code and what Kubernetes said. A pod being deleted before it ended
// was killed.
func PodOutcome(pod *corev1.Pod) (int32, string, records.ContainerState) {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		code, diag := int32(records.ExitInvalid), strings.TrimSpace(pod.Status.Reason+" "+pod.Status.Message)
		for _, cs := range pod.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				code = t.ExitCode
				diag = strings.TrimSpace(fmt.Sprintf("%s %s", t.Reason, t.Message))
			}
		}
		for _, cs := range pod.Status.InitContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				// YARN's INVALID, as a NodeManager reports a container
				// whose resources failed to localize: it counts against
				// the AM's attempts, where ABORTED would retry it forever.
				code = records.ExitInvalid
				diag = strings.TrimSpace("Localization failed: " + t.Message)
			}
		}
		// Evicted (the node reclaimed what the online load needs back) or
		// preempted: YARN's PREEMPTED, which AMs do not count against the
		// task, unlike a failure.
		if pod.Status.Reason == "Evicted" || pod.Status.Reason == "Preempting" {
			code = records.ExitPreempted
		}
		// Refused by the kubelet's admission: the node's capacity for
		// reclaimed work shrank between the RM's grant and the pod's start
		// (the online load took it back). Not the task's fault: YARN's
		// PREEMPTED, which AMs retry without counting it.
		if strings.HasPrefix(pod.Status.Reason, "OutOf") || pod.Status.Reason == "UnexpectedAdmissionError" {
			code = records.ExitPreempted
		}
		// Ended by a disruption (the colocation agent's eviction under
		// memory pressure, the Eviction API, the kubelet's own): the
		// condition's message says why, as YARN's diagnostics of a
		// preempted container do.
		if c := disruption(pod); c != nil {
			code = records.ExitPreempted
			diag = strings.TrimSpace(c.Reason + ": " + c.Message)
		}
		if code != 0 && diag == "" {
			diag = fmt.Sprintf("Exception from container-launch.\nExit code: %d", code)
		}
		return code, diag, records.ContainerComplete
	case corev1.PodRunning:
		return 0, "", records.ContainerRunning
	}
	return 0, "", records.ContainerNew
}

// disruption is the pod's DisruptionTarget condition, when it is true.
func disruption(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Selector selects the pods of one ResourceManager's applications.
func Selector(rm string) string {
	return wellknown.LabelManagedBy + "=" + wellknown.ManagedByWeft + "," + wellknown.LabelRM + "=" + labelValue(rm)
}
