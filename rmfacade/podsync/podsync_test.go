package podsync

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource"
	"github.com/weft-sh/weft/rmfacade/storesource/storesourcetest"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// cluster is the container controller over a fake API server, an RM with
// one running application, and a clock.
type cluster struct {
	t       *testing.T
	now     time.Time
	mgr     *rm.Manager
	client  client.Client
	r       *Reconciler
	loop    *storesourcetest.Loop
	app     records.ApplicationID
	attempt records.AttemptID
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	return newClusterWith(t, interceptor.Funcs{})
}

// newClusterWith is newCluster over an API server whose calls pass through
// funcs.
func newClusterWith(t *testing.T, funcs interceptor.Funcs) *cluster {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := &cluster{t: t, now: time.Unix(1_700_000_000, 0)}
	clock := func() time.Time { return c.now }
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, _ := quota.NewTree(quota.DefaultQueues)
	c.mgr = rm.New(st, tree, rm.Options{Logger: quiet, Now: clock})
	c.client = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(funcs).Build()
	c.r = New(c.mgr, c.client, Options{Namespace: "jobs", ContainerAllocationExpiry: 10 * time.Minute, Now: clock, Logger: quiet})
	c.loop = storesourcetest.Start(t, c.r, c.r.StoreSource())
	ctx := context.Background()
	c.app = c.mgr.NewApplicationID()
	if err := c.mgr.Submit(ctx, rm.Submission{ID: c.app, User: "alice", MaxAttempts: 2, AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
		t.Fatal(err)
	}
	c.attempt = records.AttemptID{App: c.app, ID: 1}
	if err := c.mgr.AMLaunched(ctx, c.attempt, records.ContainerID{Attempt: c.attempt, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.mgr.RegisterAM(ctx, c.attempt, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	// The node containers are granted on: grants are checked against its room.
	if err := c.mgr.PutNode(&records.Node{ID: "n1:8041", State: records.NodeRunning, Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// grant gives the AM n containers and hands them over.
func (c *cluster) grant(n int) []records.ContainerID {
	c.t.Helper()
	grants := make([]rm.Grant, n)
	for i := range grants {
		grants[i] = rm.Grant{Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}}
	}
	granted, err := c.mgr.AllocateContainers(context.Background(), c.attempt, grants)
	if err != nil || len(granted) != n {
		c.t.Fatalf("grant: %v %v", granted, err)
	}
	if _, err := c.mgr.Allocate(context.Background(), rm.Allocation{Attempt: c.attempt, Acquire: true}); err != nil {
		c.t.Fatal(err)
	}
	out := make([]records.ContainerID, n)
	for i, g := range granted {
		out[i] = g.ID
	}
	return out
}

// start plays the node plugin: the container's pod, with its credentials
// Secret, in phase.
func (c *cluster) start(id records.ContainerID, phase corev1.PodPhase) {
	c.t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: translator.SecretName(id.String())}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: translator.PodName(id.String()), Labels: map[string]string{
		wellknown.LabelManagedBy: wellknown.ManagedByWeft, wellknown.LabelRM: "weft", wellknown.LabelApp: id.Attempt.App.String(), wellknown.LabelContainer: id.String()}},
		Spec: corev1.PodSpec{NodeName: "n1", Volumes: []corev1.Volume{{Name: "credentials",
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name}}}}}}
	if err := c.client.Create(ctx, secret); err != nil {
		c.t.Fatal(err)
	}
	if err := c.client.Create(ctx, pod); err != nil {
		c.t.Fatal(err)
	}
	c.setPhase(id, phase, 0)
}

// setPhase plays the kubelet.
func (c *cluster) setPhase(id records.ContainerID, phase corev1.PodPhase, exitCode int32) {
	c.t.Helper()
	pod := c.pod(id)
	pod.Status.Phase = phase
	if phase == corev1.PodFailed || phase == corev1.PodSucceeded {
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error"}}}}
	}
	if err := c.client.Status().Update(context.Background(), pod); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) pod(id records.ContainerID) *corev1.Pod {
	c.t.Helper()
	pod, err := CachedPod(context.Background(), c.client, "jobs", id)
	if err != nil {
		c.t.Fatal(err)
	}
	return pod
}

func (c *cluster) secrets() int {
	var list corev1.SecretList
	if err := c.client.List(context.Background(), &list); err != nil {
		c.t.Fatal(err)
	}
	return len(list.Items)
}

func (c *cluster) settle() {
	c.t.Helper()
	c.loop.SettlePods(c.client, c.r.PodRequests)
}

func (c *cluster) container(id records.ContainerID) *records.Container {
	return c.mgr.Snapshot().Container(id)
}

// A container's pod runs, then exits: the container is RUNNING, then
// COMPLETE with the pod's exit code; its pod stays for the logs two
// minutes (the controller asks to be woken then), then goes with its
// Secret.
func TestContainerLifecycle(t *testing.T) {
	c := newCluster(t)
	id := c.grant(1)[0]
	c.start(id, corev1.PodRunning)
	c.settle()
	if got := c.container(id); got.State != records.ContainerRunning {
		t.Fatalf("container with a running pod: %+v", got)
	}
	c.setPhase(id, corev1.PodFailed, 3)
	c.settle()
	if got := c.container(id); got.State != records.ContainerComplete || got.ExitStatus != 3 {
		t.Fatalf("container whose pod exited: %+v", got)
	}
	if c.pod(id) == nil {
		t.Fatal("a completed container's pod went before its retention")
	}
	after := c.loop.Last[storesource.Request(id)].RequeueAfter
	if after <= 0 || after > CompletedPodRetention+time.Millisecond {
		t.Fatalf("the controller asks to be woken in %v", after)
	}
	c.now = c.now.Add(CompletedPodRetention + time.Second)
	c.loop.Add(storesource.Request(id))
	c.settle()
	if c.pod(id) != nil || c.secrets() != 0 {
		t.Fatal("the completed container's pod or Secret outlived the retention")
	}
}

// Pods the RM has no use for go: a container its AM released, one of an
// attempt that failed, one no grant stands behind, and every pod of an
// application that was killed — which the controller learns from the
// records alone.
func TestPodsRemoved(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t)
	ids := c.grant(2)
	released, kept := ids[0], ids[1]
	c.start(released, corev1.PodRunning)
	c.start(kept, corev1.PodRunning)
	orphan := records.ContainerID{Attempt: c.attempt, ID: 99}
	c.start(orphan, corev1.PodRunning)
	c.settle()
	if _, err := c.mgr.CompleteContainer(ctx, released, records.ExitKilledByRM, "released"); err != nil {
		t.Fatal(err)
	}
	c.loop.Drain()
	if c.pod(released) != nil || c.pod(orphan) != nil || c.pod(kept) == nil {
		t.Fatalf("released %v, orphan %v, kept %v", c.pod(released) != nil, c.pod(orphan) != nil, c.pod(kept) != nil)
	}

	// The attempt fails: its containers complete and their pods stop.
	if err := c.mgr.AMExited(ctx, c.attempt, 1, "crashed"); err != nil {
		t.Fatal(err)
	}
	c.loop.Drain()
	if got := c.container(kept); got.State != records.ContainerComplete || got.Diagnostics != rm.CompletedApplicationDiagnostics || c.pod(kept) != nil {
		t.Fatalf("container of the failed attempt: %+v, pod left %v", got, c.pod(kept) != nil)
	}

	// The next attempt's container, then a kill.
	c.attempt = records.AttemptID{App: c.app, ID: 2}
	if err := c.mgr.AMLaunched(ctx, c.attempt, records.ContainerID{Attempt: c.attempt, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.mgr.RegisterAM(ctx, c.attempt, "h", 1, ""); err != nil {
		t.Fatal(err)
	}
	next := c.grant(1)[0]
	c.start(next, corev1.PodRunning)
	c.settle()
	if _, err := c.mgr.Kill(ctx, c.app, "alice", ""); err != nil {
		t.Fatal(err)
	}
	c.loop.Drain()
	if c.pod(next) != nil || c.secrets() != 0 {
		t.Fatalf("after the kill: pod left %v, %d secrets", c.pod(next) != nil, c.secrets())
	}
}

// A running container whose pod is gone was lost with it; one handed to
// its AM and never started expires after the allocation expiry, not
// before (YARN's ContainerAllocationExpirer); a restarted controller
// finds both from the records.
func TestLostAndExpiredContainers(t *testing.T) {
	ctx := context.Background()
	for _, restarted := range []bool{false, true} {
		c := newCluster(t)
		ids := c.grant(2)
		lost, unused := ids[0], ids[1]
		c.start(lost, corev1.PodRunning)
		c.settle()
		if err := c.client.Delete(ctx, c.pod(lost)); err != nil {
			t.Fatal(err)
		}
		c.now = c.now.Add(9 * time.Minute)
		if restarted {
			c.r = New(c.mgr, c.client, c.r.opts)
			c.loop = storesourcetest.Start(t, c.r, c.r.StoreSource())
		} else {
			c.loop.Add(storesource.Request(lost), storesource.Request(unused))
		}
		c.loop.Drain()
		if got := c.container(lost); got.State != records.ContainerComplete || got.ExitStatus != records.ExitAborted ||
			got.Diagnostics != "Container's pod was deleted" {
			t.Errorf("restarted %v: container whose pod went: %+v", restarted, got)
		}
		if got := c.container(unused); got.State == records.ContainerComplete {
			t.Fatalf("restarted %v: container ended before its allocation expired: %+v", restarted, got)
		}
		after := c.loop.Last[storesource.Request(unused)].RequeueAfter
		if after < time.Minute-time.Second || after > time.Minute+time.Second {
			t.Errorf("restarted %v: the unused container is looked at again in %v, want when it expires", restarted, after)
		}
		c.now = c.now.Add(2 * time.Minute)
		c.loop.Add(storesource.Request(unused))
		c.loop.Drain()
		if got := c.container(unused); got.State != records.ContainerComplete || got.Diagnostics != "Container expired since it was unused" {
			t.Fatalf("restarted %v: unused container after the expiry: %+v", restarted, got)
		}
	}
}

// Delete removes a pod and its Secret, and does not delete again a pod
// already terminating.
func TestDelete(t *testing.T) {
	ctx := context.Background()
	for _, terminating := range []bool{false, true} {
		var podDeletes int
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if _, ok := obj.(*corev1.Pod); ok {
					podDeletes++
				}
				return c.Delete(ctx, obj, opts...)
			}}).Build()
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "s"}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "jobs", Name: "p"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{
			Name: "credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}}}
		if terminating {
			pod.Finalizers = []string{"kubelet"} // what keeps a deleted pod while it stops
		}
		for _, o := range []client.Object{secret, pod} {
			if err := c.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
		if terminating {
			if err := c.Delete(ctx, pod); err != nil {
				t.Fatal(err)
			}
			podDeletes = 0
			if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil || pod.DeletionTimestamp == nil {
				t.Fatalf("pod not terminating: %v", err)
			}
		}
		if err := Delete(ctx, c, pod, false); err != nil {
			t.Fatal(err)
		}
		want := 1
		if terminating {
			want = 0
		}
		if podDeletes != want {
			t.Errorf("terminating %v: %d pod deletions, want %d", terminating, podDeletes, want)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); !apierrors.IsNotFound(err) {
			t.Errorf("terminating %v: the Secret is left (%v)", terminating, err)
		}
	}
}

// graceOf is the grace period a pod deletion asked for: -1 for the pod's
// own.
func graceOf(opts []client.DeleteOption) int64 {
	var o client.DeleteOptions
	o.ApplyOptions(opts)
	if o.GracePeriodSeconds == nil {
		return -1
	}
	return *o.GracePeriodSeconds
}

// When the RM loses a node, the pods of its containers there are deleted
// at once, with no grace period, since the node's kubelet is not there to
// confirm a graceful deletion — a pod already terminating included; the
// pods' deletion then leaves the containers as the loss ended them.
func TestPodsOfALostNode(t *testing.T) {
	ctx := context.Background()
	var deletes []string // "pod grace", in order
	c := newClusterWith(t, interceptor.Funcs{
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return cl.Delete(ctx, obj, opts...)
			}
			grace := graceOf(opts)
			deletes = append(deletes, fmt.Sprintf("%s %d", pod.Name, grace))
			if grace == 0 {
				// The API server removes a pod deleted with no grace
				// period without waiting for its kubelet, for which the
				// finalizer stands in here.
				var cur corev1.Pod
				if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), &cur); err == nil && len(cur.Finalizers) > 0 {
					cur.Finalizers = nil
					if err := cl.Update(ctx, &cur); err != nil {
						return err
					}
				}
			}
			return cl.Delete(ctx, obj, opts...)
		}})
	ids := c.grant(2)
	live, released := ids[0], ids[1]
	c.start(live, corev1.PodRunning)
	c.start(released, corev1.PodRunning)
	c.settle()
	// The AM released one before the node went silent: its graceful
	// deletion waits on a kubelet that no longer answers.
	pod := c.pod(released)
	pod.Finalizers = []string{"kubelet"}
	if err := c.client.Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := c.mgr.CompleteContainer(ctx, released, records.ExitKilledByAppMaster, "released"); err != nil {
		t.Fatal(err)
	}
	c.loop.Drain()
	if p := c.pod(released); p == nil || p.DeletionTimestamp == nil {
		t.Fatalf("the released container's pod is not terminating: %+v", p)
	}
	deletes = nil

	lost := *c.mgr.Snapshot().Node("n1:8041")
	lost.State = records.NodeLost
	if err := c.mgr.PutNode(&lost); err != nil {
		t.Fatal(err)
	}
	// The records' changes are all the controller is told of the loss.
	c.loop.Drain()
	onLoss := slices.Clone(deletes)
	ended := *c.container(live)
	// Then the pods' deletion events, and a later look at each.
	c.loop.Add(storesource.Request(live), storesource.Request(released))
	c.settle()

	livePod, releasedPod := translator.PodName(live.String()), translator.PodName(released.String())
	tests := []struct {
		name string
		ok   bool
	}{
		{"the pod of a container ended with its node is deleted at once, with no grace period",
			slices.Contains(onLoss, livePod+" 0") && c.pod(live) == nil},
		{"a pod already terminating there is deleted again, with no grace period",
			slices.Contains(onLoss, releasedPod+" 0") && c.pod(released) == nil},
		{"no pod of the lost node is deleted with a grace period",
			!slices.Contains(deletes, livePod+" -1") && !slices.Contains(deletes, releasedPod+" -1")},
		{"the pod's deletion leaves its container as the loss ended it",
			*c.container(live) == ended && ended.Diagnostics == rm.LostContainerDiagnostics && ended.ExitStatus == records.ExitAborted},
		{"a container its AM released keeps its own end", c.container(released).ExitStatus == records.ExitKilledByAppMaster},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				t.Errorf("no; pod deletions: %v", deletes)
			}
		})
	}
}
