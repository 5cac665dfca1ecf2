package amlauncher

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/amrm"
	"github.com/weft-sh/weft/rmfacade/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/credentials"
)

// newManager returns a Manager over a store of its own and the default
// queues.
func newManager(t *testing.T, opts rm.Options) *rm.Manager {
	t.Helper()
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, _ := quota.NewTree(quota.DefaultQueues)
	return rm.New(st, tree, opts)
}

func TestLaunchAM(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := newManager(t, rm.Options{Logger: quiet})
	tokens := amrm.NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
	client := fake.NewSimpleClientset()
	l := New(mgr, client, tokens, Options{Namespace: "weft-jobs", Profile: translator.Katalyst, Runtime: translator.Runtime{Image: "weft/hadoop:3.4.1",
		JavaHome: "/opt/java"}, SchedulerName: "weft-scheduler", SchedulerAddr: "rm:8030", NMPort: 8041, NMHTTPPort: 8042, Logger: quiet})
	ctx := context.Background()

	// The client's own tokens, as YarnClient puts them in the launch context.
	clientCreds := credentials.New()
	clientCreds.Tokens["hdfs"] = credentials.Token{Identifier: []byte("hdfs-id"), Password: []byte("pw"), Kind: "HDFS_DELEGATION_TOKEN", Service: "nn:8020"}
	tokenBytes, _ := clientCreds.Bytes()
	submit := func(unmanaged bool) records.ApplicationID {
		id := mgr.NewApplicationID()
		raw, _ := proto.Marshal(&yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: &yarnpb.ContainerLaunchContextProto{
			Command:     []string{"{{JAVA_HOME}}/bin/java", "-Xmx512m", "org.example.AM", "1><LOG_DIR>/stdout"},
			Environment: []*yarnpb.StringStringMapProto{{Key: proto.String("CLASSPATH"), Value: proto.String("$PWD/*")}},
			Tokens:      tokenBytes,
		}})
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", UnmanagedAM: unmanaged, Raw: raw,
			AMResource: records.Resource{MemoryMB: 2048, VCores: 1}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	managed, unmanaged, killed := submit(false), submit(true), submit(false)
	if _, err := mgr.Kill(ctx, killed, "alice", ""); err != nil {
		t.Fatal(err)
	}

	for range 2 { // reconciling twice changes nothing the second time
		if err := l.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pods, _ := client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods, want only the managed app's AM", len(pods.Items))
	}
	pod := pods.Items[0]
	container := records.ContainerID{Attempt: records.AttemptID{App: managed, ID: 1}, ID: 1}
	if pod.Name != translator.PodName(container.String()) || pod.Labels[translator.LabelTier] != "high" ||
		pod.Labels[translator.LabelApp] != managed.String() || pod.Spec.PriorityClassName != "weft-high" ||
		pod.Spec.SchedulerName != "weft-scheduler" || pod.Annotations["katalyst.kubewharf.io/qos_level"] != "reclaimed_cores" {
		t.Fatalf("pod %s labels %v", pod.Name, pod.Labels)
	}
	mem := pod.Spec.Containers[0].Resources.Requests["resource.katalyst.kubewharf.io/reclaimed_memory"]
	if mem.Value() != 2048<<20 {
		t.Fatalf("AM memory %s", mem.String())
	}
	script := pod.Spec.Containers[0].Command[2]
	if !strings.Contains(script, `export CLASSPATH="$PWD/*"`) || !strings.Contains(script, "$JAVA_HOME/bin/java -Xmx512m org.example.AM 1>/weft/logs/stdout") {
		t.Fatalf("launch script:\n%s", script)
	}
	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["CONTAINER_ID"] != container.String() || env["HADOOP_TOKEN_FILE_LOCATION"] != translator.TokenFile || env["MAX_APP_ATTEMPTS"] != "2" {
		t.Fatalf("env %v", env)
	}

	// The credentials Secret holds the client's token and a working AMRMToken.
	var secretVolume *corev1.SecretVolumeSource
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secretVolume = v.Secret
		}
	}
	if secretVolume == nil {
		t.Fatal("no credentials volume")
	}
	secret, err := client.CoreV1().Secrets("weft-jobs").Get(ctx, secretVolume.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := credentials.Parse(secret.Data[translator.TokenFileKey])
	if err != nil {
		t.Fatal(err)
	}
	amToken, ok := creds.Tokens["rm:8030"]
	if creds.Tokens["hdfs"].Kind != "HDFS_DELEGATION_TOKEN" || !ok || amToken.Kind != amrm.TokenKind {
		t.Fatalf("credentials %+v", creds.Tokens)
	}
	password, user, err := tokens.RetrievePassword(amToken.Identifier)
	if err != nil || string(password) != string(amToken.Password) || user != container.Attempt.String() {
		t.Fatalf("AMRMToken does not authenticate: %v %q", err, user)
	}

	snap := mgr.Snapshot()
	if att := snap.Attempt(container.Attempt); att.State != records.AttemptLaunched || att.AMContainer != container.String() {
		t.Fatalf("attempt %+v", att)
	}
	if att := snap.Attempt(records.AttemptID{App: unmanaged, ID: 1}); att.State != records.AttemptLaunched || att.AMContainer != "" {
		t.Fatalf("unmanaged attempt %+v", att)
	}
}

func TestAMFailureRetriesAndKillCleansUp(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := newManager(t, rm.Options{Logger: quiet})
	client := fake.NewSimpleClientset()
	l := New(mgr, client, amrm.NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef")),
		Options{Namespace: "jobs", Profile: translator.Plain, SchedulerAddr: "rm:8030", Logger: quiet})
	ctx := context.Background()
	raw, _ := proto.Marshal(&yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"exit 1"}}})
	submit := func(attempts int32) records.ApplicationID {
		id := mgr.NewApplicationID()
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", MaxAttempts: attempts, Raw: raw,
			AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	podsOf := func(app records.ApplicationID) []corev1.Pod {
		list, err := client.CoreV1().Pods("jobs").List(ctx, metav1.ListOptions{LabelSelector: translator.LabelApp + "=" + app.String()})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	// fail plays the kubelet: the AM's container exits with code.
	fail := func(pod corev1.Pod, code int32) {
		pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: "AM crashed"}}}}}
		if _, err := client.CoreV1().Pods("jobs").UpdateStatus(ctx, &pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	app := submit(2)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	fail(podsOf(app)[0], 1)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	pods := podsOf(app)
	if len(pods) != 1 || pods[0].Labels[translator.LabelAttempt] != (records.AttemptID{App: app, ID: 2}).String() {
		t.Fatalf("after the first failure: %d pods %v", len(pods), pods)
	}
	fail(pods[0], 3)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	a, _ := mgr.Application(app)
	if a.State != records.AppFailed || !strings.Contains(a.Diagnostics, "exitCode: 3") || !strings.Contains(a.Diagnostics, "AM crashed") {
		t.Fatalf("after the last failure: %+v", a)
	}
	if n := len(podsOf(app)); n != 0 {
		t.Fatalf("%d pods left of a failed application", n)
	}

	// Killing a running application removes its pods and credentials.
	killed := submit(1)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if len(podsOf(killed)) != 1 {
		t.Fatal("AM pod not created")
	}
	if _, err := mgr.Kill(ctx, killed, "alice", ""); err != nil {
		t.Fatal(err)
	}
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	secrets, _ := client.CoreV1().Secrets("jobs").List(ctx, metav1.ListOptions{})
	if len(podsOf(killed)) != 0 || len(secrets.Items) != 0 {
		t.Fatalf("after kill: %d pods, %d secrets", len(podsOf(killed)), len(secrets.Items))
	}
}

// TestExpiredAMAndUnusedContainers: the running AM pod of an attempt that
// timed out is stopped and the next attempt gets its own; a container its
// AM was handed but never started ends as unused once the allocation
// expiry has passed (YARN's ContainerAllocationExpirer), not before.
func TestExpiredAMAndUnusedContainers(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	mgr := newManager(t, rm.Options{Logger: quiet, Now: clock})
	client := fake.NewSimpleClientset()
	l := New(mgr, client, amrm.NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef")),
		Options{Namespace: "jobs", Profile: translator.Plain, SchedulerAddr: "rm:8030", Logger: quiet, Now: clock,
			ContainerAllocationExpiry: 10 * time.Minute})
	ctx := context.Background()
	raw, _ := proto.Marshal(&yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"am"}}})
	app := mgr.NewApplicationID()
	if err := mgr.Submit(ctx, rm.Submission{ID: app, User: "alice", MaxAttempts: 2, Raw: raw, AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	first := records.AttemptID{App: app, ID: 1}
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.RegisterAM(ctx, first, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := mgr.PutNode(&records.Node{ID: "n:8041", State: records.NodeRunning, Capability: records.Resource{MemoryMB: 8192, VCores: 8}}); err != nil {
		t.Fatal(err)
	}
	granted, err := mgr.AllocateContainers(ctx, first, []rm.Grant{{Node: "n:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}}})
	if err != nil || len(granted) != 1 {
		t.Fatalf("grant: %v %v", granted, err)
	}
	if _, err := mgr.AcquireContainers(ctx, first); err != nil {
		t.Fatal(err)
	}
	unused := granted[0].ID

	now = now.Add(9 * time.Minute)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if c := mgr.Snapshot().Container(unused); c.State == records.ContainerComplete {
		t.Fatalf("container ended before its allocation expired: %+v", c)
	}
	now = now.Add(2 * time.Minute)
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if c := mgr.Snapshot().Container(unused); c.State != records.ContainerComplete || c.Diagnostics != "Container expired since it was unused" {
		t.Fatalf("unused container after the expiry: %+v", c)
	}

	// The AM goes silent: its attempt expires while its pod still runs.
	if err := mgr.AMExpired(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := l.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("jobs").List(ctx, metav1.ListOptions{LabelSelector: translator.LabelApp + "=" + app.String()})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Labels[translator.LabelAttempt] != (records.AttemptID{App: app, ID: 2}).String() {
		t.Fatalf("pods after the first attempt expired: %v", pods.Items)
	}
}
