package queuesync

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/quota/crd"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource/storesourcetest"
)

func queue(name, parent, guaranteedCPU string) *v1alpha1.Queue {
	q := &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.QueueSpec{Parent: parent, SubmitACL: "*"}}
	if guaranteedCPU != "" {
		q.Spec.Guaranteed = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(guaranteedCPU)}
	}
	return q
}

// cluster is the Queue controller over a fake API server holding Queues,
// and an RM started with the tree they made.
type cluster struct {
	t      *testing.T
	now    time.Time
	client client.Client
	mgr    *rm.Manager
	events *record.FakeRecorder
	r      *Reconciler
	loop   *storesourcetest.Loop
}

func newCluster(t *testing.T, queues ...*v1alpha1.Queue) *cluster {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, now: time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC), events: record.NewFakeRecorder(100)}
	objs := make([]client.Object, len(queues))
	items := make([]v1alpha1.Queue, len(queues))
	for i, q := range queues {
		objs[i], items[i] = q, *q
	}
	c.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Queue{}).Build()
	configs, err := crd.ConfigsFromQueues(items)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := quota.NewTree(configs)
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c.mgr = rm.New(st, tree, rm.Options{Logger: quiet})
	c.r = New(c.mgr, c.client, configs, items, Options{Events: c.events, Now: func() time.Time { return c.now }, Logger: quiet})
	c.loop = storesourcetest.Start(t, c.r, c.r.StoreSource())
	return c
}

func (c *cluster) queue(name string) *v1alpha1.Queue {
	c.t.Helper()
	var q v1alpha1.Queue
	if err := c.client.Get(context.Background(), types.NamespacedName{Name: name}, &q); err != nil {
		c.t.Fatal(err)
	}
	return &q
}

// A Queue added to the cluster joins the RM's tree, and the scheduler's
// quotas read the new objects.
func TestRefresh(t *testing.T) {
	c := newCluster(t, queue("root", "", ""), queue("default", "root", "4"))
	if _, ok := c.mgr.Queues().Queue("etl"); ok {
		t.Fatal("etl before it exists")
	}
	if err := c.client.Create(context.Background(), queue("etl", "root", "8")); err != nil {
		t.Fatal(err)
	}
	c.loop.Add(Request)
	c.loop.Drain()
	if _, ok := c.mgr.Queues().Queue("etl"); !ok {
		t.Fatal("etl not in the RM's tree after it was added")
	}
	if n := len(c.r.Objects()); n != 3 {
		t.Errorf("%d Queue objects for the scheduler, want 3", n)
	}
	if cond := meta.FindStatusCondition(c.queue("etl").Status.Conditions, ConditionTreeValid); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("etl's condition %+v", cond)
	}
}

// A tree that is not valid leaves the RM's as it was: every Queue says
// so in a condition, and an Event tells it once, not on every reconcile.
func TestInvalidTreeKept(t *testing.T) {
	c := newCluster(t, queue("root", "", ""), queue("default", "root", "4"))
	if err := c.client.Create(context.Background(), queue("orphan", "nowhere", "")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c.now = c.now.Add(time.Minute)
		c.loop.Add(Request)
		c.loop.Drain()
	}
	if _, ok := c.mgr.Queues().Queue("default"); !ok || len(c.r.Objects()) != 2 {
		t.Fatalf("the current tree was not kept: %d objects", len(c.r.Objects()))
	}
	for _, name := range []string{"root", "default", "orphan"} {
		cond := meta.FindStatusCondition(c.queue(name).Status.Conditions, ConditionTreeValid)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != ReasonInvalidTree || !strings.Contains(cond.Message, `"orphan" names a parent`) {
			t.Errorf("%s: condition %+v", name, cond)
		}
	}
	if n := len(c.events.Events); n != 3 {
		t.Errorf("%d events, want one on each of the 3 Queues", n)
	}
	// Mended, the tree is followed again.
	orphan := c.queue("orphan")
	orphan.Spec.Parent = "root"
	if err := c.client.Update(context.Background(), orphan); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(time.Minute)
	c.loop.Add(Request)
	c.loop.Drain()
	if _, ok := c.mgr.Queues().Queue("orphan"); !ok {
		t.Error("the mended tree is not the RM's")
	}
	if cond := meta.FindStatusCondition(c.queue("orphan").Status.Conditions, ConditionTreeValid); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("mended: condition %+v", cond)
	}
}

// The statuses count what the RM holds, parents adding up their
// children, the part above the guarantee borrowed; the RM's own writes
// wake the controller, whose writes come at most once each StatusEvery.
func TestStatus(t *testing.T) {
	c := newCluster(t, queue("root", "", ""), queue("default", "root", "1"), queue("etl", "root", ""))
	ctx := context.Background()
	c.loop.Drain() // the first round, at start
	submit := func() records.ApplicationID {
		id := c.mgr.NewApplicationID()
		if err := c.mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default", AMResource: records.Resource{MemoryMB: 2048, VCores: 2}}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	app := submit()
	c.loop.Drain()
	if got := c.queue("default").Status.PendingApplications; got != 0 {
		t.Fatalf("status written %d after the last round: StatusEvery not kept", got)
	}
	if after := c.loop.Last[StatusRequest].RequeueAfter; after <= 0 || after > time.Second {
		t.Fatalf("held back for %v", after)
	}
	c.now = c.now.Add(time.Second)
	c.loop.Add(StatusRequest)
	c.loop.Drain()
	def, root := c.queue("default").Status, c.queue("root").Status
	if def.PendingApplications != 1 || root.PendingApplications != 1 || def.Used.Cpu().MilliValue() != 0 {
		t.Fatalf("after a submission: default %+v, root %+v", def, root)
	}
	// The AM's container exists: it holds its resources, one vcore of
	// the two above default's guarantee.
	if err := c.mgr.AMLaunched(ctx, records.AttemptID{App: app, ID: 1}, records.ContainerID{Attempt: records.AttemptID{App: app, ID: 1}, ID: 1}); err != nil {
		t.Fatal(err)
	}
	c.now = c.now.Add(time.Second)
	c.loop.Drain()
	def, root = c.queue("default").Status, c.queue("root").Status
	if def.Used.Memory().Value() != 2<<30 || def.Used.Cpu().Value() != 2 || def.Borrowed.Cpu().Value() != 1 ||
		root.Used.Memory().Value() != 2<<30 || c.queue("etl").Status.Used.Memory().Value() != 0 {
		t.Fatalf("with the AM's container: default %+v, root %+v", def, root)
	}
}

// A Queue with time windows has its status looked at again when the next
// minute begins: a window may open or close then.
func TestTimeWindowsRequeue(t *testing.T) {
	etl := queue("etl", "root", "1")
	etl.Spec.TimeWindows = []v1alpha1.QueueTimeWindow{{Name: "night", Start: "22:00", End: "06:00",
		Guaranteed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}}
	c := newCluster(t, queue("root", "", ""), etl)
	c.loop.Drain()
	if after := c.loop.Last[Request].RequeueAfter; after != 31*time.Second {
		t.Errorf("looked at again in %v, want 31s (the next minute, 12:01:00, and a second)", after)
	}
	c2 := newCluster(t, queue("root", "", ""), queue("default", "root", "1"))
	c2.loop.Drain()
	if after := c2.loop.Last[Request].RequeueAfter; after != 0 {
		t.Errorf("without windows, looked at again in %v", after)
	}
}
