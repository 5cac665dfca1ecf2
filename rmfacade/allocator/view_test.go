package allocator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/scheduler/podbinder/podbindertest"
	schedstate "github.com/weft-sh/weft/scheduler/state"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The view kept from cycle to cycle by the RM store's changes must be,
// at the start of every cycle, exactly the store a cycle would build from
// scratch over the same RM state and asks. Seeded random runs of what an
// RM sees — submissions, asks raised and lowered, cycles granting and
// preempting, containers completing, kills, queue moves, nodes lost and
// back, cooling down, taken by other pods — compare the two after every
// step.
func TestViewMatchesARebuild(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { checkViewAgainstRebuild(t, seed, 150) })
	}
}

func checkViewAgainstRebuild(t *testing.T, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0))
	mgr, now := testRM(t, []quota.QueueConfig{
		{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
		{Path: "root.a", Capacity: 30, MaxCapacity: 100},
		{Path: "root.b", Capacity: 70, MaxCapacity: 100},
	})
	clock := func() time.Time { return *now }
	pods := &podsAtBoundary{}
	kube := &versionedNodes{nodes: map[string]*corev1.Node{}}
	for i := range 5 {
		id := fmt.Sprintf("n%d", i)
		kube.nodes[id] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{}}}
	}
	opts := Options{Logger: quiet, Now: clock, PreemptionGrace: 3 * time.Second, Pods: pods, Profile: translator.Plain, Nodes: kube}
	a := New(mgr, opts)

	node := func(i int) *records.Node {
		id := fmt.Sprintf("n%d", i)
		return &records.Node{ID: id, Host: id, HTTPAddress: id + ":8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 8192, VCores: 8}}
	}
	for i := range 4 {
		put(t, mgr, node(i))
	}
	var attempts []records.AttemptID
	live := func() []records.AttemptID {
		var out []records.AttemptID
		for _, at := range attempts {
			if app := mgr.Snapshot().Application(at.App); app != nil && !app.State.Terminal() {
				out = append(out, at)
			}
		}
		return out
	}
	pick := func(ids []records.AttemptID) (records.AttemptID, bool) {
		if len(ids) == 0 {
			return records.AttemptID{}, false
		}
		return ids[rng.IntN(len(ids))], true
	}
	ask := func(at records.AttemptID, prio int32, n int) {
		a.Update(at, []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(prio)},
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(int32(n))}})
	}
	steps_ := []struct {
		name string
		do   func() error
	}{
		{"submit", func() error {
			id := mgr.NewApplicationID()
			queue := []string{"a", "b"}[rng.IntN(2)]
			if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: queue, UnmanagedAM: true}); err != nil {
				return err
			}
			at := records.AttemptID{App: id, ID: 1}
			attempts = append(attempts, at)
			if rng.IntN(4) == 0 {
				return nil // ACCEPTED, not registered yet
			}
			_, err := mgr.RegisterAM(ctx, at, "h", 1, "")
			return err
		}},
		{"ask", func() error {
			if at, ok := pick(live()); ok {
				ask(at, int32(1+rng.IntN(2)), rng.IntN(6))
			}
			return nil
		}},
		{"cycle", func() error { _, err := a.Cycle(ctx); return err }},
		{"cycle", func() error { _, err := a.Cycle(ctx); return err }},
		{"complete a container", func() error {
			at, ok := pick(live())
			if !ok {
				return nil
			}
			var running []*records.Container
			for _, c := range mgr.Snapshot().ContainersOfAttempt(at) {
				if c.State != records.ContainerComplete {
					running = append(running, c)
				}
			}
			if len(running) == 0 {
				return nil
			}
			_, err := mgr.CompleteContainer(ctx, running[rng.IntN(len(running))].ID, 0, "done")
			return err
		}},
		{"kill", func() error {
			if at, ok := pick(live()); ok && rng.IntN(3) == 0 {
				_, err := mgr.Kill(ctx, at.App, "alice", "")
				a.Forget(at)
				return err
			}
			return nil
		}},
		{"move", func() error {
			if at, ok := pick(live()); ok {
				_ = mgr.Move(ctx, at.App, "alice", []string{"a", "b"}[rng.IntN(2)]) // refused for a finished one
			}
			return nil
		}},
		{"node lost or back", func() error {
			n := node(rng.IntN(5))
			if rng.IntN(2) == 0 {
				// Its containers stay in the RM's records until their
				// pods are found gone.
				n.State = []records.NodeState{records.NodeLost, records.NodeUnhealthy}[rng.IntN(2)]
			}
			return mgr.PutNode(n)
		}},
		{"notice given outside a plan", func() error {
			// As the tide gives it to every container on a node taken back:
			// an allocation the view holds becomes a victim in place.
			at, ok := pick(live())
			if !ok {
				return nil
			}
			cs := mgr.Snapshot().ContainersOfAttempt(at)
			if len(cs) == 0 {
				return nil
			}
			c := cs[rng.IntN(len(cs))]
			if c.ID.ID == 1 || c.State == records.ContainerComplete || c.PreemptDeadline != 0 {
				return nil
			}
			_, err := mgr.PreemptContainer(ctx, c.ID, now.Add(time.Duration(1+rng.IntN(3))*time.Second))
			return err
		}},
		{"node cools down", func() error {
			n := node(rng.IntN(4))
			n.CooldownUntil = now.Add(time.Duration(1+rng.IntN(3)) * time.Second).UnixMilli()
			return mgr.PutNode(n)
		}},
		{"others' pods on a node", func() error {
			n := node(rng.IntN(4))
			n.Occupied = records.Resource{MemoryMB: int64(rng.IntN(4)) * 1024, VCores: int32(rng.IntN(4))}
			return mgr.PutNode(n)
		}},
		{"a pod names Weft's scheduler", func() error {
			labels := map[string]string{}
			switch rng.IntN(4) {
			case 0:
				labels[wellknown.LabelQueue] = "root.a"
			case 1:
				labels[wellknown.LabelQueue], labels[wellknown.LabelApp] = "b", "job"+fmt.Sprint(rng.IntN(3))
			case 2:
				labels[wellknown.LabelQueue] = "gone" // refused; if placed, charged to its node
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", rng.Int()), Namespace: "batch", Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}}}
			if rng.IntN(3) == 0 {
				p.Spec.NodeName = fmt.Sprintf("n%d", rng.IntN(4)) // placed before this RM (a restart)
			}
			if rng.IntN(3) == 0 {
				p.Spec.NodeSelector = map[string]string{"zone": "x"}
			}
			pods.add(p)
			return nil
		}},
		{"a pod ends", func() error { pods.removeOne(rng); return nil }},
		{"a pod changes", func() error {
			// A new resource version: its labels edited, its status, or its
			// deletion begun (a placed pod being deleted is a victim already).
			pods.change(rng, func(p *corev1.Pod) {
				switch rng.IntN(4) {
				case 0:
					// A job whose pods name different queues is in the queue of
					// whichever pod came first, in a rebuild as in the kept
					// view: only a pod that is its own job moves.
					if p.Labels[wellknown.LabelApp] == "" {
						p.Labels[wellknown.LabelQueue] = []string{"root.a", "b", "gone"}[rng.IntN(3)]
					}
				case 1:
					p.Labels[wellknown.LabelTier] = []string{"low", "high", ""}[rng.IntN(3)]
				case 2:
					p.Status.Phase = corev1.PodRunning // kubelet's: nothing the view reads
				default:
					p.DeletionTimestamp = &metav1.Time{Time: *now}
				}
			})
			return nil
		}},
		{"a node's labels change", func() error {
			n := kube.nodes[fmt.Sprintf("n%d", rng.IntN(5))]
			if n.Labels["zone"] == "" {
				n.Labels["zone"] = "x"
			} else {
				delete(n.Labels, "zone")
			}
			kube.version++
			return nil
		}},
		{"a pod made again under its name", func() error { pods.recreate(rng); return nil }},
		{"bindings fail or not", func() error { pods.setFailing(rng.IntN(3) == 0); return nil }},
		{"an AM's pod waits", func() error {
			// A managed AM: its attempt's container 1 is the pod's to place.
			id := mgr.NewApplicationID()
			queue := []string{"a", "b"}[rng.IntN(2)]
			if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: queue,
				AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
				return err
			}
			at := records.AttemptID{App: id, ID: 1}
			attempts = append(attempts, at)
			cid := records.ContainerID{Attempt: at, ID: 1}
			pods.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "am-" + cid.String(), Namespace: "batch",
				Labels: map[string]string{wellknown.LabelRM: "weft", wellknown.LabelContainer: cid.String()}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "am"}}}})
			return nil
		}},
		{"time passes", func() error { *now = now.Add(time.Duration(rng.IntN(3000)) * time.Millisecond); return nil }},
	}
	for i := range steps {
		s := steps_[rng.IntN(len(steps_))]
		if err := s.do(); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.name, err)
		}
		kept := syncView(t, a)
		fresh := New(mgr, opts)
		a.mu.Lock()
		for at, m := range a.asks {
			fresh.asks[at] = maps.Clone(m)
		}
		a.mu.Unlock()
		built := syncView(t, fresh)
		if kept != built {
			t.Fatalf("step %d (%s): the kept view differs from a rebuild\n%s", i, s.name, lineDiff(kept, built))
		}
		if got, want := slices.Sorted(maps.Keys(a.view.pending)), slices.Sorted(maps.Keys(fresh.view.pending)); !slices.Equal(got, want) {
			t.Fatalf("step %d (%s): pending asks %v, a rebuild has %v", i, s.name, got, want)
		}
		if id := copiedKey(mgr.Snapshot(), a.view.st.Snapshot()); id != "" {
			t.Fatalf("step %d (%s): the view's allocation %s holds a copy of the RM store's key, not the key", i, s.name, id)
		}
	}
}

// copiedKey returns the id of an allocation of the view that holds a copy
// of its container's key in the RM store rather than the store's string
// (100,000 copies at a large cluster's size), or "".
func copiedKey(rm *state.Snapshot, view *schedstate.Snapshot) string {
	for _, cs := range rm.ContainersByApp() {
		for _, c := range cs {
			key := rm.ContainerKey(c.ID)
			if al := view.Allocation(key); al != nil && unsafe.StringData(al.ID) != unsafe.StringData(key) {
				return key
			}
		}
	}
	return ""
}

// podsAtBoundary stands for the API server's pods that name Weft's
// scheduler.
type podsAtBoundary struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	version int
	failing bool
	moves   podbindertest.Moves
}

func (f *podsAtBoundary) add(p *corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.UID = types.UID(p.Namespace + "/" + p.Name)
	f.pods = append(f.pods, p)
}

func (f *podsAtBoundary) removeOne(rng *rand.Rand) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pods) > 0 {
		i := rng.IntN(len(f.pods))
		f.pods = slices.Delete(f.pods, i, i+1)
	}
}

// change replaces a pod by an edited copy with a new resource version,
// as the API server does.
func (f *podsAtBoundary) change(rng *rand.Rand, edit func(*corev1.Pod)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pods) == 0 {
		return
	}
	i := rng.IntN(len(f.pods))
	c := f.pods[i].DeepCopy()
	edit(c)
	f.version++
	c.ResourceVersion = fmt.Sprint(f.version)
	f.pods[i] = c
}

// recreate deletes a pod and creates one of the same name, waiting.
func (f *podsAtBoundary) recreate(rng *rand.Rand) {
	f.change(rng, func(c *corev1.Pod) {
		c.UID, c.Spec.NodeName, c.DeletionTimestamp = types.UID(fmt.Sprint("uid-", f.version)), "", nil
	})
}

func (f *podsAtBoundary) setFailing(failing bool) {
	f.mu.Lock()
	f.failing = failing
	f.mu.Unlock()
}

// Pods answers as podbinder.Binder does: a waiting pod being deleted waits
// for nothing.
func (f *podsAtBoundary) Pods() (pending, bound []*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pending, bound = f.shown()
	f.moves.Reset(append(slices.Clip(bound), pending...))
	return pending, bound
}

func (f *podsAtBoundary) shown() (pending, bound []*corev1.Pod) {
	for _, p := range f.pods {
		switch {
		case p.Spec.NodeName != "":
			bound = append(bound, p)
		case p.DeletionTimestamp == nil:
			pending = append(pending, p)
		}
	}
	return pending, bound
}

// Moved answers as podbinder.Binder does, from what changed since the
// last answer.
func (f *podsAtBoundary) Moved(also []types.UID) ([]*corev1.Pod, []types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pending, bound := f.shown()
	return f.moves.Moved(append(bound, pending...), also)
}

// Bind binds a pod as the API server does (a new resource version, with
// its node), or fails them all while failing.
func (f *podsAtBoundary) Bind(_ context.Context, bs []podbinder.Binding) []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	errs := make([]error, len(bs))
	for i, b := range bs {
		if f.failing {
			errs[i] = errors.New("binding refused")
			continue
		}
		for j, p := range f.pods {
			if p.UID == b.UID {
				c := p.DeepCopy()
				f.version++
				c.ResourceVersion, c.Spec.NodeName = fmt.Sprint(f.version), b.Node
				f.pods[j] = c
			}
		}
	}
	return errs
}

func (f *podsAtBoundary) BindAsync(ctx context.Context, bs []podbinder.Binding, done func([]error)) {
	done(f.Bind(ctx, bs))
}

func (f *podsAtBoundary) Event(context.Context, *corev1.Pod, string, string) {}

func (f *podsAtBoundary) Preempt(_ context.Context, p *corev1.Pod, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = slices.DeleteFunc(f.pods, func(q *corev1.Pod) bool { return q.UID == p.UID })
	return nil
}

// syncView brings a's view up to the RM's store as a cycle does before
// deciding, and returns the view's content.
func syncView(t *testing.T, a *Allocator) string {
	t.Helper()
	a.cycleMu.Lock()
	defer a.cycleMu.Unlock()
	now := a.opts.Now()
	changed := a.view.take()
	snap, nodes := a.snapshot()
	h, err := a.hierarchy(nodes.list, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.sync(snap, nodes, h, now, a.view.constraints(nodes, a.opts.Nodes), changed); err != nil {
		t.Fatal(err)
	}
	return dumpStore(a.view.st.Snapshot())
}

// dumpStore prints what a scheduling cycle reads of a store, without the
// store's own indexes.
func dumpStore(s *schedstate.Snapshot) string {
	var b strings.Builder
	for _, n := range s.Nodes() {
		fmt.Fprintf(&b, "node %s allocatable=%v others=%v allocated=%v releasing=%v cordoned=%v\n",
			n.ID, n.Allocatable, n.NonWeftUsed, n.Allocated, n.Releasing, n.Cordoned)
	}
	h := s.Hierarchy()
	for _, p := range h.Paths() {
		if q := s.QueueUsage(p); q != nil {
			fmt.Fprintf(&b, "queue %s used=%v pending=%v releasing=%v\n", p, q.Used, q.Pending, q.Releasing)
		}
	}
	for _, leaf := range h.Leaves() {
		for _, app := range s.ApplicationsInQueue(leaf) {
			fmt.Fprintf(&b, "app %s queue=%s user=%s priority=%d reserve=%v min=%d\n", app.ID, app.Queue, app.User, app.Priority, app.Reserve, app.MinMembers)
			for _, r := range s.RequestsOfApp(app.ID) {
				fmt.Fprintf(&b, "  request %s tier=%v resource=%v nodes=%v\n", r.ID, r.Tier, r.Resource, r.Nodes)
			}
		}
	}
	for _, al := range s.Allocations() {
		fmt.Fprintf(&b, "allocation %s app=%s queue=%s node=%s tier=%v resource=%v preempting=%v\n",
			al.ID, al.AppID, al.Queue, al.NodeID, al.Tier, al.Resource, al.Preempting)
	}
	return b.String()
}

// lineDiff shows the lines only one side has.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("- kept:    " + l + "\n")
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("+ rebuilt: " + l + "\n")
		}
	}
	return b.String()
}

// TestShrunk: a map is copied to its size once it holds a quarter of the
// most it held or less, and not before, nor while it never held many.
func TestShrunk(t *testing.T) {
	fill := func(n int) map[int]int {
		m := make(map[int]int, n)
		for i := range n {
			m[i] = i
		}
		return m
	}
	cases := []struct {
		name      string
		len, peak int
		copied    bool
		wantPeak  int
	}{
		{"growing", 5000, 2000, false, 5000},
		{"above a quarter", 1001, 4000, false, 4000},
		{"at a quarter", 1000, 4000, true, 1000},
		{"emptied", 0, 100_000, true, 0},
		{"never held many", 10, shrinkFrom - 1, false, shrinkFrom - 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := fill(c.len)
			got, peak := shrunk(m, c.peak)
			copied := reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(m).UnsafePointer()
			if copied != c.copied || peak != c.wantPeak || !maps.Equal(got, m) {
				t.Errorf("copied %v, peak %d, same entries %v; want copied %v, peak %d", copied, peak, maps.Equal(got, m), c.copied, c.wantPeak)
			}
		})
	}
}

// Once the RM has stored a cycle's grants, the view lets go of what the
// plan made of the asks, and the next cycle derives the containers from
// the RM's records: nothing holds them twice in between (a large
// cluster's fill would hold 100,000 planned allocations beside their
// derived copies).
func TestGrantsLeaveThePlanOutOfTheView(t *testing.T) {
	ctx := context.Background()
	mgr, now := testRM(t, quota.DefaultQueues)
	put(t, mgr, &records.Node{ID: "n1", Host: "n1", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}})
	attempt := registered(t, mgr, "default")
	a := New(mgr, Options{Logger: quiet, Now: func() time.Time { return *now }})
	a.Update(attempt, []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)},
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(3)}})
	if granted, err := a.Cycle(ctx); err != nil || granted != 3 {
		t.Fatalf("cycle granted %d, %v; want 3", granted, err)
	}
	if held := a.view.st.Snapshot().AllocationsOfApp(attempt.String()); len(held) != 0 || len(a.view.pending) != 0 {
		t.Fatalf("after the grants the view holds %d planned allocations and %d asks, want none", len(held), len(a.view.pending))
	}
	syncView(t, a)
	want := map[string]bool{}
	for _, c := range mgr.Snapshot().ContainersOfAttempt(attempt) {
		want[c.Key()] = true
	}
	held := a.view.st.Snapshot().AllocationsOfApp(attempt.String())
	if len(held) != 3 {
		t.Fatalf("the next cycle derived %d allocations, want the 3 containers", len(held))
	}
	for _, al := range held {
		if !want[al.ID] {
			t.Errorf("allocation %s is not one of the RM's containers %v", al.ID, want)
		}
	}
}

// A cycle leaves the pods that did not change as the last one made them,
// and makes again the one that did (making every placed pod again each
// cycle costs 40% of weft-rm's CPU while binding 5,000 pods).
func TestUnchangedPodsKept(t *testing.T) {
	mgr, now := testRM(t, quota.DefaultQueues)
	put(t, mgr, &records.Node{ID: "n1", Host: "n1", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}})
	pods := &podsAtBoundary{}
	for i := range 4 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "batch", ResourceVersion: "1",
			Labels: map[string]string{wellknown.LabelApp: "job"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
		if i > 0 {
			p.Spec.NodeName = "n1"
		}
		pods.add(p)
	}
	a := New(mgr, Options{Logger: quiet, Now: func() time.Time { return *now }, Pods: pods, Profile: translator.Plain})
	syncView(t, a)
	made := func() map[string]uint64 {
		s := a.view.st.Snapshot()
		out := map[string]uint64{}
		for i := range 4 {
			id := fmt.Sprint("pod:batch/p", i)
			if r := s.Request(id); r != nil {
				out[id] = r.CreateIndex
			} else if al := s.Allocation(id); al != nil {
				out[id] = al.CreateIndex
			}
		}
		return out
	}
	before := made()
	if len(before) != 4 {
		t.Fatalf("the view holds %v, want the 4 pods", before)
	}
	// p2's tier changes; p3 has a new version with nothing the view
	// reads changed (kubelet's status, say).
	pods.mu.Lock()
	changed := pods.pods[2].DeepCopy()
	changed.ResourceVersion, changed.Labels[wellknown.LabelTier] = "2", "low"
	pods.pods[2] = changed
	status := pods.pods[3].DeepCopy()
	status.ResourceVersion, status.Status.Phase = "2", corev1.PodRunning
	pods.pods[3] = status
	pods.mu.Unlock()
	syncView(t, a)
	after := made()
	for id, idx := range before {
		if again := after[id] != idx; again != (id == "pod:batch/p2") {
			t.Errorf("%s made again %v (index %d → %d); only pod:batch/p2 changed", id, again, idx, after[id])
		}
	}
	if got := a.view.pods.bound["pod:batch/p3"]; got != status {
		t.Errorf("the view's p3 is not the pod's new version")
	}
}

// A node record's write marks the node for the next cycle only when it
// changes what a cycle reads of it: while Weft binds, most writes are of
// what its own pods hold there, which the cycle takes from the pods.
func TestNodeMarkedOnlyWhenACycleReadsTheChange(t *testing.T) {
	base := records.Node{ID: "n1:8041", Host: "n1", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}, LastHealthUpdate: 1}
	cases := []struct {
		name   string
		change func(n *records.Node)
		marked bool
	}{
		{"Weft's pods bound there", func(n *records.Node) { n.Used, n.NumContainers = records.Resource{MemoryMB: 1024, VCores: 1}, 1 }, false},
		{"report time", func(n *records.Node) { n.LastHealthUpdate = 2 }, false},
		{"others' pods", func(n *records.Node) { n.Occupied = records.Resource{MemoryMB: 512} }, true},
		{"capacity", func(n *records.Node) { n.Capability.VCores = 4 }, true},
		{"state", func(n *records.Node) { n.State = records.NodeUnhealthy }, true},
		{"cooldown", func(n *records.Node) { n.CooldownUntil = 5 }, true},
	}
	for _, c := range cases {
		v := newView()
		v.take()
		after := base
		c.change(&after)
		before := base
		v.observe(nil, []state.Change{{Table: "nodes", Before: &before, After: &after}})
		if got := v.take().nodes[base.ID]; got != c.marked {
			t.Errorf("%s: marked %v, want %v", c.name, got, c.marked)
		}
	}
	v := newView()
	v.take()
	added := base
	v.observe(nil, []state.Change{{Table: "nodes", After: &added}})
	if !v.take().nodes[base.ID] {
		t.Error("a new node is not marked")
	}
}

// The running nodes are listed again only after a write a cycle reads:
// writes of what Weft's own pods hold keep the set (and its records),
// any other move lists it again, and a write between the stale check
// and the snapshot it lists from is not lost.
func TestRunningNodesListedOnlyWhenACycleReadsTheChange(t *testing.T) {
	mgr, _ := testRM(t, quota.DefaultQueues)
	a := New(mgr, Options{Logger: quiet})
	node := records.Node{ID: "n1:8041", Host: "n1", HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 8192, VCores: 8}}
	put := func(change func(n *records.Node)) {
		t.Helper()
		change(&node)
		n := node
		if err := mgr.PutNode(&n); err != nil {
			t.Fatal(err)
		}
	}
	put(func(*records.Node) {})
	_, first := a.snapshot()
	if len(first.list) != 1 || first.byID[node.ID].Capability.VCores != 8 {
		t.Fatalf("first list %v", first.list)
	}

	put(func(n *records.Node) {
		n.Used, n.NumContainers, n.LastHealthUpdate = records.Resource{MemoryMB: 1024, VCores: 1}, 1, 7
	})
	if _, kept := a.snapshot(); kept != first {
		t.Error("a write of what Weft's pods hold listed the nodes again")
	}

	put(func(n *records.Node) { n.Capability.VCores = 4 })
	_, moved := a.snapshot()
	if moved == first || moved.byID[node.ID].Capability.VCores != 4 || moved.byHost["n1"].Capability.VCores != 4 {
		t.Errorf("after a capacity change: %+v", moved.byID[node.ID])
	}
	if moved.members != first.members {
		t.Error("the same node counted as a new membership")
	}

	// A write after the mark is cleared and before the snapshot: it is
	// in the snapshot, and so in the set.
	_, unhealthy := a.view.snapshotNodes(func() *state.Snapshot {
		put(func(n *records.Node) { n.State = records.NodeUnhealthy })
		return mgr.Snapshot()
	})
	if len(unhealthy.list) != 0 {
		t.Errorf("an unhealthy node still running: %v", unhealthy.list)
	}
	// A write after the snapshot: the next snapshot lists again.
	_, before := a.view.snapshotNodes(func() *state.Snapshot {
		snap := mgr.Snapshot()
		put(func(n *records.Node) { n.State = records.NodeRunning })
		return snap
	})
	if len(before.list) != 0 {
		t.Errorf("the snapshot's set holds a node written after it: %v", before.list)
	}
	if _, again := a.snapshot(); len(again.list) != 1 {
		t.Errorf("a node back to running not listed: %v", again.list)
	}
}
