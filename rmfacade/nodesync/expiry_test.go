package nodesync

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/translator"
)

// readySince sets a node's Ready condition to status since at (none when
// at is zero).
func readySince(status corev1.ConditionStatus, at time.Time) func(*corev1.Node) {
	return func(n *corev1.Node) {
		c := corev1.NodeCondition{Type: corev1.NodeReady, Status: status}
		if !at.IsZero() {
			c.LastTransitionTime = metav1.NewTime(at)
		}
		n.Status.Conditions = []corev1.NodeCondition{c}
	}
}

// A node whose Ready condition has not been True for NodeExpiry, counted
// from when it stopped being True, is LOST, its report saying since when;
// before that it is UNHEALTHY and asks to be reconciled when it expires
// (no Node event will come of a kubelet that stays silent). With no time
// to count from, or no expiry, it stays UNHEALTHY.
func TestNodeExpiry(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	tests := []struct {
		name        string
		status      corev1.ConditionStatus
		since       time.Time
		expiry      time.Duration
		want        records.NodeState
		wantRequeue time.Duration
	}{
		{"a Ready node is RUNNING", corev1.ConditionTrue, now.Add(-time.Hour), 0, records.NodeRunning, 0},
		{"a node not Ready for less than the expiry is UNHEALTHY, and asks to be reconciled when it expires",
			corev1.ConditionFalse, now.Add(-9 * time.Minute), 0, records.NodeUnhealthy, time.Minute + time.Second},
		{"a node not Ready for the expiry is LOST", corev1.ConditionFalse, now.Add(-10 * time.Minute), 0, records.NodeLost, 0},
		{"a node whose kubelet went silent (Ready Unknown) for longer than the expiry is LOST",
			corev1.ConditionUnknown, now.Add(-2 * time.Hour), 0, records.NodeLost, 0},
		{"the expiry is the one configured", corev1.ConditionUnknown, now.Add(-2 * time.Minute), time.Minute, records.NodeLost, 0},
		{"a node not Ready with no time to count from stays UNHEALTHY", corev1.ConditionFalse, time.Time{}, 0, records.NodeUnhealthy, 0},
		{"with no expiry a node not Ready for hours stays UNHEALTHY", corev1.ConditionUnknown, now.Add(-5 * time.Hour), -1, records.NodeUnhealthy, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, Options{ClusterID: "weft", Profile: translator.Plain, NMPort: 8041, NodeExpiry: tc.expiry,
				Now: func() time.Time { return now }}, node("a", true, readySince(tc.status, tc.since)))
			res := r.reconcile("a", func() bool { return true })
			n := r.node("a")
			if n.State != tc.want || res.RequeueAfter != tc.wantRequeue {
				t.Fatalf("%s, reconcile again in %v; want %s, in %v", n.State, res.RequeueAfter, tc.want, tc.wantRequeue)
			}
			if since := tc.since.UTC().Format(time.RFC3339); n.State == records.NodeLost && !strings.Contains(n.HealthReport, "not Ready since "+since) {
				t.Errorf("health report %q does not say since when (%s)", n.HealthReport, since)
			}
		})
	}
}

// A node that stops being Ready is UNHEALTHY while its containers run
// on; at the expiry, with no event to tell of it, the reconcile it asked
// for finds it LOST, and its containers end with it as in YARN — its
// tasks complete, its AM's attempt fails and another begins —; back
// Ready, it is RUNNING again.
func TestNodeLostAtExpiry(t *testing.T) {
	ctx := context.Background()
	clock := time.Now().Truncate(time.Second)
	r := start(t, Options{ClusterID: "weft", Profile: translator.Plain, NMPort: 8041, NodeExpiry: 10 * time.Minute,
		Now: func() time.Time { return clock }}, node("a", true, nil), node("b", true, nil))

	// An application whose AM runs on a, with a task running there, one
	// that completed there, and one on b.
	mgr := r.mgr
	app := mgr.NewApplicationID()
	if err := mgr.Submit(ctx, rm.Submission{ID: app, User: "alice", MaxAttempts: 2}); err != nil {
		t.Fatal(err)
	}
	attempt := records.AttemptID{App: app, ID: 1}
	am := records.ContainerID{Attempt: attempt, ID: 1}
	if err := mgr.AMLaunched(ctx, attempt, am); err != nil {
		t.Fatal(err)
	}
	if err := mgr.AMContainerPlaced(ctx, am, "a:8041", "a:8042", records.Resource{MemoryMB: 1024, VCores: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.RegisterAM(ctx, attempt, "a", 1, ""); err != nil {
		t.Fatal(err)
	}
	gib := rm.Grant{Node: "a:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}}
	onB := gib
	onB.Node = "b:8041"
	granted, err := mgr.AllocateContainers(ctx, attempt, []rm.Grant{gib, gib, onB})
	if err != nil || len(granted) != 3 {
		t.Fatalf("grants %v, %v", granted, err)
	}
	task, done, elsewhere := granted[0].ID, granted[1].ID, granted[2].ID
	if _, err := mgr.Allocate(ctx, rm.Allocation{Attempt: attempt, Acquire: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []records.ContainerID{task, done, elsewhere} {
		if err := mgr.ContainerRunning(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mgr.CompleteContainer(ctx, done, 0, "finished"); err != nil {
		t.Fatal(err)
	}
	if _, err := mgr.Allocate(ctx, rm.Allocation{Attempt: attempt}); err != nil {
		t.Fatal(err)
	}
	doneBefore := *mgr.Snapshot().Container(done)

	setReady := func(status corev1.ConditionStatus) {
		t.Helper()
		n, err := r.client.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		readySince(status, clock)(n)
		if _, err := r.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	watched := func(status corev1.ConditionStatus) func() bool {
		return func() bool { n, ok := r.s.KubeNode("a"); return ok && readyCondition(n).Status == status }
	}
	var wake time.Duration
	steps := []struct {
		name string
		do   func() string
	}{
		{"a node whose kubelet went silent is UNHEALTHY, its containers running on, and asks to be woken at the expiry", func() string {
			setReady(corev1.ConditionUnknown)
			clock = clock.Add(4 * time.Minute)
			wake = r.reconcile("a", watched(corev1.ConditionUnknown)).RequeueAfter
			if n := r.node("a"); n.State != records.NodeUnhealthy {
				return "state " + string(n.State)
			}
			if c := mgr.Snapshot().Container(task); c.State != records.ContainerRunning {
				return "task " + string(c.State)
			}
			if wake != 6*time.Minute+time.Second {
				return "woken in " + wake.String()
			}
			return ""
		}},
		{"at the expiry, with no event, the reconcile it asked for finds it LOST", func() string {
			clock = clock.Add(wake)
			if res := r.reconcile("a", func() bool { return true }); res.RequeueAfter != 0 {
				return "asks again in " + res.RequeueAfter.String()
			}
			if n := r.node("a"); n.State != records.NodeLost {
				return "state " + string(n.State)
			}
			return ""
		}},
		{"its task completes ABORTED with YARN's diagnostics for a lost node, listed for its attempt's next allocate", func() string {
			c := mgr.Snapshot().Container(task)
			if c.State != records.ContainerComplete || c.ExitStatus != records.ExitAborted || c.Diagnostics != rm.LostContainerDiagnostics {
				return "task " + string(c.State) + " " + c.Diagnostics
			}
			// The AM was lost with the node: its attempt is over and
			// will never ask, but the record says what it would be told.
			if told := mgr.Snapshot().ContainersToReport(attempt); len(told) != 1 || told[0].ID != task {
				return "not listed alone for the attempt's next allocate"
			}
			return ""
		}},
		{"a container already complete there is untouched, and the failed attempt's one elsewhere ends with the attempt", func() string {
			snap := mgr.Snapshot()
			if *snap.Container(done) != doneBefore {
				return "the completed container changed"
			}
			if c := snap.Container(elsewhere); c.State != records.ContainerComplete || c.Diagnostics != rm.CompletedApplicationDiagnostics {
				return "the container on b " + string(c.State) + " " + c.Diagnostics
			}
			return ""
		}},
		{"the AM's attempt fails, and another begins", func() string {
			snap := mgr.Snapshot()
			if att := snap.Attempt(attempt); att.State != records.AttemptFailed || !strings.Contains(att.Diagnostics, rm.LostContainerDiagnostics) {
				return "attempt " + string(att.State) + ": " + att.Diagnostics
			}
			if a := snap.Application(app); a.State != records.AppAccepted || a.CurrentAttempt != 2 {
				return "application " + string(a.State)
			}
			return ""
		}},
		{"back Ready, it is RUNNING again", func() string {
			clock = clock.Add(time.Minute)
			setReady(corev1.ConditionTrue)
			r.reconcile("a", watched(corev1.ConditionTrue))
			if n := r.node("a"); n.State != records.NodeRunning {
				return "state " + string(n.State)
			}
			return ""
		}},
	}
	for _, st := range steps {
		if msg := st.do(); msg != "" {
			t.Fatalf("%s: %s", st.name, msg)
		}
	}
}
