package amlauncher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/amrm"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource"
	"github.com/weft-sh/weft/rmfacade/storesource/storesourcetest"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/credentials"
	"github.com/weft-sh/weft/translator/wellknown"
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

// harness is the launcher's controller over a fake API server: requests
// from the store's changes and from the pods, reconciled until none is
// left.
type harness struct {
	t      *testing.T
	client client.Client
	l      *Launcher
	loop   *storesourcetest.Loop
}

func newHarness(t *testing.T, mgr *rm.Manager, tokens AMTokens, opts Options) *harness {
	h := &harness{t: t, client: fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()}
	h.restart(mgr, tokens, opts)
	return h
}

// restart is a new controller over the same records and pods: it starts
// from what they hold.
func (h *harness) restart(mgr *rm.Manager, tokens AMTokens, opts Options) {
	h.l = New(mgr, h.client, tokens, opts)
	h.loop = storesourcetest.Start(h.t, h.l, h.l.StoreSource())
}

// settle delivers the pods' events and reconciles until nothing is left.
func (h *harness) settle() {
	h.t.Helper()
	h.loop.SettlePods(h.client, h.l.PodRequests)
}

// runOn plays the scheduler and the kubelet: pod is bound to node and
// runs there, and the controller has seen it.
func (h *harness) runOn(pod corev1.Pod, node string) {
	h.t.Helper()
	ctx := context.Background()
	pod.Spec.NodeName = node
	if err := h.client.Update(ctx, &pod); err != nil {
		h.t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := h.client.Status().Update(ctx, &pod); err != nil {
		h.t.Fatal(err)
	}
	h.settle()
}

func (h *harness) pods(ns string, labels client.MatchingLabels) []corev1.Pod {
	h.t.Helper()
	var list corev1.PodList
	if err := h.client.List(context.Background(), &list, client.InNamespace(ns), labels); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func TestLaunchAM(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := newManager(t, rm.Options{Logger: quiet})
	tokens := amrm.NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
	opts := Options{Namespace: "weft-jobs", Profile: translator.Katalyst, Runtime: translator.Runtime{Image: "weft/hadoop:3.4.1",
		JavaHome: "/opt/java"}, SchedulerName: "weft-scheduler", SchedulerAddr: "rm:8030", NMPort: 8041, NMHTTPPort: 8042, Logger: quiet}
	h := newHarness(t, mgr, tokens, opts)
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

	h.settle()
	// Reconciling again, or a restarted controller starting from the
	// records, changes nothing.
	h.loop.Add(storesource.Request(records.AttemptID{App: managed, ID: 1}))
	h.restart(mgr, tokens, opts)
	h.settle()
	pods := h.pods("weft-jobs", nil)
	if len(pods) != 1 {
		t.Fatalf("%d pods, want only the managed app's AM", len(pods))
	}
	pod := pods[0]
	container := records.ContainerID{Attempt: records.AttemptID{App: managed, ID: 1}, ID: 1}
	if pod.Name != translator.PodName(container.String()) || pod.Labels[wellknown.LabelTier] != "high" ||
		pod.Labels[wellknown.LabelApp] != managed.String() || pod.Spec.PriorityClassName != "weft-high" ||
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
	var secret corev1.Secret
	if err := h.client.Get(ctx, types.NamespacedName{Namespace: "weft-jobs", Name: secretVolume.SecretName}, &secret); err != nil {
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

// submitAM submits an application of alice's whose AM runs command.
func submitAM(t *testing.T, mgr *rm.Manager, maxAttempts int32, command string) records.ApplicationID {
	t.Helper()
	raw, _ := proto.Marshal(&yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{command}}})
	id := mgr.NewApplicationID()
	if err := mgr.Submit(context.Background(), rm.Submission{ID: id, User: "alice", MaxAttempts: maxAttempts, Raw: raw,
		AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	return id
}

// newPlain is a launcher of the plain profile in namespace jobs over a
// Manager of its own; clock and api may be nil.
func newPlain(t *testing.T, clock func() time.Time, api client.Reader) (*rm.Manager, *harness) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := newManager(t, rm.Options{Logger: quiet, Now: clock})
	return mgr, newHarness(t, mgr, amrm.NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef")), Options{Namespace: "jobs",
		Profile: translator.Plain, SchedulerAddr: "rm:8030", NMPort: 8041, NMHTTPPort: 8042, Logger: quiet, Now: clock, APIReader: api})
}

func TestAMFailureRetriesAndKillCleansUp(t *testing.T) {
	mgr, h := newPlain(t, nil, nil)
	ctx := context.Background()
	submit := func(attempts int32) records.ApplicationID { return submitAM(t, mgr, attempts, "exit 1") }
	podsOf := func(app records.ApplicationID) []corev1.Pod {
		return h.pods("jobs", client.MatchingLabels{wellknown.LabelApp: app.String()})
	}
	// fail plays the kubelet: the AM's container exits with code.
	fail := func(pod corev1.Pod, code int32) {
		pod.Status = corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: "AM crashed"}}}}}
		if err := h.client.Status().Update(ctx, &pod); err != nil {
			t.Fatal(err)
		}
	}

	app := submit(2)
	h.settle()
	fail(podsOf(app)[0], 1)
	h.settle()
	pods := podsOf(app)
	if len(pods) != 1 || pods[0].Labels[wellknown.LabelAttempt] != (records.AttemptID{App: app, ID: 2}).String() {
		t.Fatalf("after the first failure: %d pods %v", len(pods), pods)
	}
	fail(pods[0], 3)
	h.settle()
	a, _ := mgr.Application(app)
	if a.State != records.AppFailed || !strings.Contains(a.Diagnostics, "exitCode: 3") || !strings.Contains(a.Diagnostics, "AM crashed") {
		t.Fatalf("after the last failure: %+v", a)
	}
	if n := len(podsOf(app)); n != 0 {
		t.Fatalf("%d pods left of a failed application", n)
	}

	// Killing a running application removes its pods and credentials:
	// the kill, a change of the records, is all the controller is told.
	killed := submit(1)
	h.settle()
	if len(podsOf(killed)) != 1 {
		t.Fatal("AM pod not created")
	}
	if _, err := mgr.Kill(ctx, killed, "alice", ""); err != nil {
		t.Fatal(err)
	}
	h.loop.Drain()
	var secrets corev1.SecretList
	if err := h.client.List(ctx, &secrets); err != nil {
		t.Fatal(err)
	}
	if len(podsOf(killed)) != 0 || len(secrets.Items) != 0 {
		t.Fatalf("after kill: %d pods, %d secrets", len(podsOf(killed)), len(secrets.Items))
	}
}

// An AM pod deleted from under its attempt fails it as ABORTED, which
// does not count against the attempts (a retry even with maxAttempts 1) —
// but only once the API server confirms the pod gone: a pod the cache has
// not seen yet is not a deleted one.
func TestDeletedAMPod(t *testing.T) {
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	mgr, h := newPlain(t, nil, api)
	ctx := context.Background()
	app := submitAM(t, mgr, 1, "am")
	h.settle()
	first := records.AttemptID{App: app, ID: 1}
	pod := h.pods("jobs", nil)[0]
	inAPI := pod.DeepCopy()
	inAPI.ResourceVersion = ""
	if err := api.Create(ctx, inAPI); err != nil { // the API server has it, the cache not
		t.Fatal(err)
	}
	if err := h.client.Delete(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	h.loop.Add(storesource.Request(first))
	h.loop.Drain()
	if att := mgr.Snapshot().Attempt(first); att.State != records.AttemptLaunched {
		t.Fatalf("attempt failed on the cache's word alone: %+v", att)
	}
	if err := api.Delete(ctx, &pod); err != nil {
		t.Fatal(err)
	}
	h.loop.Add(storesource.Request(first))
	h.settle()
	a, _ := mgr.Application(app)
	if att := mgr.Snapshot().Attempt(first); att.State != records.AttemptFailed || a.CurrentAttempt != 2 ||
		!strings.Contains(att.Diagnostics, "exitCode: -100") || !strings.Contains(att.Diagnostics, "the AM container's pod was deleted") {
		t.Fatalf("after the pod's deletion: attempt %+v, application %+v", att, a)
	}
	if pods := h.pods("jobs", nil); len(pods) != 1 || pods[0].Labels[wellknown.LabelAttempt] != (records.AttemptID{App: app, ID: 2}).String() {
		t.Fatalf("pods after the retry: %v", pods)
	}
}

// An AM that unregistered is placed on its node, then stopped a minute
// later if it still runs (the controller asks to be woken then), and its
// attempt ends with the application FINISHED.
func TestFinishingAMStoppedAfterGrace(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	mgr, h := newPlain(t, func() time.Time { return now }, nil)
	ctx := context.Background()
	app := submitAM(t, mgr, 0, "am")
	h.settle()
	id := records.AttemptID{App: app, ID: 1}
	h.runOn(h.pods("jobs", nil)[0], "n1")
	if c := mgr.Snapshot().Container(records.ContainerID{Attempt: id, ID: 1}); c == nil || c.Node != "n1:8041" || c.NodeHTTP != "n1:8042" {
		t.Fatalf("AM container not placed: %+v", c)
	}
	if _, err := mgr.RegisterAM(ctx, id, "n1", 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := mgr.FinishAM(ctx, id, records.FinalSucceeded, "", ""); err != nil {
		t.Fatal(err)
	}
	h.loop.Drain()
	req := storesource.Request(id)
	if after := h.loop.Last[req].RequeueAfter; after <= 0 || after > finishingGrace+time.Millisecond {
		t.Fatalf("a finishing AM asks to be looked at again in %v", after)
	}
	if len(h.pods("jobs", nil)) != 1 {
		t.Fatal("the AM was stopped before its grace ended")
	}
	now = now.Add(finishingGrace + time.Second)
	h.loop.Add(req)
	h.settle()
	a, _ := mgr.Application(app)
	if n := len(h.pods("jobs", nil)); n != 0 || a.State != records.AppFinished || a.FinalStatus != records.FinalSucceeded {
		t.Fatalf("after the grace: %d pods, application %s/%s", n, a.State, a.FinalStatus)
	}
}

// The running AM pod of an attempt that timed out is stopped and the next
// attempt gets its own.
func TestExpiredAM(t *testing.T) {
	mgr, h := newPlain(t, nil, nil)
	ctx := context.Background()
	app := submitAM(t, mgr, 2, "am")
	first := records.AttemptID{App: app, ID: 1}
	h.settle()
	if _, err := mgr.RegisterAM(ctx, first, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	// The AM goes silent: its attempt expires while its pod still runs.
	if err := mgr.AMExpired(ctx, first); err != nil {
		t.Fatal(err)
	}
	h.settle()
	pods := h.pods("jobs", client.MatchingLabels{wellknown.LabelApp: app.String()})
	if len(pods) != 1 || pods[0].Labels[wellknown.LabelAttempt] != (records.AttemptID{App: app, ID: 2}).String() {
		t.Fatalf("pods after the first attempt expired: %v", pods)
	}
}

// An AM on a node the RM loses: the loss fails its attempt (rm.Manager.
// PutNodes) and its pod is deleted at once, with no grace period — the
// node's kubelet is not there to confirm a graceful deletion —, while the
// next attempt gets its own; an AM pod the launcher finds placed on a node
// lost already (the RM was not running when it was placed) ends the same
// way.
func TestAMOnALostNode(t *testing.T) {
	mgr, h := newPlain(t, nil, nil)
	var deletes []string // "pod grace", -1 for the pod's own
	h.client = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				var o client.DeleteOptions
				o.ApplyOptions(opts)
				grace := int64(-1)
				if o.GracePeriodSeconds != nil {
					grace = *o.GracePeriodSeconds
				}
				deletes = append(deletes, fmt.Sprintf("%s %d", obj.GetName(), grace))
			}
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	h.restart(mgr, h.l.tokens, h.l.opts)
	podsOf := func(app records.ApplicationID) []corev1.Pod {
		return h.pods("jobs", client.MatchingLabels{wellknown.LabelApp: app.String()})
	}
	// bind plays the scheduler and the kubelet: the AM's pod runs on n1.
	bind := func(app records.ApplicationID) string {
		t.Helper()
		pod := podsOf(app)[0]
		h.runOn(pod, "n1")
		return pod.Name
	}
	setNode := func(st records.NodeState) {
		t.Helper()
		if err := mgr.PutNode(&records.Node{ID: "n1:8041", Host: "n1", State: st}); err != nil {
			t.Fatal(err)
		}
	}
	endedByLoss := func(app records.ApplicationID, pod string) string {
		first := records.AttemptID{App: app, ID: 1}
		snap := mgr.Snapshot()
		if att := snap.Attempt(first); att.State != records.AttemptFailed || !strings.Contains(att.Diagnostics, rm.LostContainerDiagnostics) {
			return fmt.Sprintf("attempt %s: %s", att.State, att.Diagnostics)
		}
		if c := snap.Container(records.ContainerID{Attempt: first, ID: 1}); c.State != records.ContainerComplete || c.Diagnostics != rm.LostContainerDiagnostics {
			return fmt.Sprintf("AM container %s: %s", c.State, c.Diagnostics)
		}
		if !slices.Contains(deletes, pod+" 0") || slices.Contains(deletes, pod+" -1") {
			return fmt.Sprintf("pod deletions %v, want %s with no grace period", deletes, pod)
		}
		if pods := podsOf(app); len(pods) != 1 || pods[0].Labels[wellknown.LabelAttempt] != (records.AttemptID{App: app, ID: 2}).String() {
			return fmt.Sprintf("pods %d, want the next attempt's", len(pods))
		}
		return ""
	}

	setNode(records.NodeRunning)
	placed := submitAM(t, mgr, 2, "am")
	h.settle()
	pod := bind(placed)
	setNode(records.NodeLost)
	// The records' changes are all the launcher is told of the loss.
	h.loop.Drain()
	if msg := endedByLoss(placed, pod); msg != "" {
		t.Errorf("an AM whose node the RM lost: %s", msg)
	}

	late := submitAM(t, mgr, 2, "am")
	h.settle()
	pod = bind(late)
	if msg := endedByLoss(late, pod); msg != "" {
		t.Errorf("an AM placed on a node lost already: %s", msg)
	}
}
