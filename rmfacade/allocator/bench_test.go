package allocator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

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
	"github.com/weft-sh/weft/scheduler"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/translator"
)

// BenchmarkCycle is a cycle of a busy RM — 1,000 nodes, 1,000 running
// applications in 20 queues holding 100 containers each — with the
// scheduler's view kept from the last cycle (kept) and built afresh each
// cycle (rebuilt), when nothing changed
// (idle: a cycle still runs every second) and when one application asks
// for one more container (one-ask: the cycle places and grants it), also
// after 20 nodes' records were written with what Weft's own pods hold
// there (one-ask-own-pods-written, as while Weft binds pods). The ratio of
// kept to rebuilt is the view's gain:
//
//	go test ./rmfacade/allocator -run '^$' -bench Cycle -benchtime 20x
func BenchmarkCycle(b *testing.B) {
	const nodes, apps, perApp, queues = 1000, 1000, 100, 20
	ctx := context.Background()
	st, err := state.OpenMemory()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := []quota.QueueConfig{{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"}}
	for q := range queues {
		cfg = append(cfg, quota.QueueConfig{Path: fmt.Sprintf("root.q%02d", q), Capacity: 100.0 / queues, MaxCapacity: 100})
	}
	tree, err := quota.NewTree(cfg)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{Logger: quiet})
	for i := range nodes {
		id := fmt.Sprintf("n%04d", i)
		if err := mgr.PutNode(&records.Node{ID: id, Host: id, HTTPAddress: id + ":8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 256 << 10, VCores: 128}}); err != nil {
			b.Fatal(err)
		}
	}
	var attempts []records.AttemptID
	for i := range apps {
		id := mgr.NewApplicationID()
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "u", Queue: fmt.Sprintf("q%02d", i%queues), UnmanagedAM: true}); err != nil {
			b.Fatal(err)
		}
		at := records.AttemptID{App: id, ID: 1}
		if _, err := mgr.RegisterAM(ctx, at, "h", 1, ""); err != nil {
			b.Fatal(err)
		}
		grants := make([]rm.Grant, perApp)
		for j := range grants {
			n := fmt.Sprintf("n%04d", (i*perApp+j)%nodes)
			grants[j] = rm.Grant{Node: n, NodeHTTP: n + ":8042", Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Priority: 1, Tier: records.TierLow}
		}
		if _, err := mgr.AllocateContainers(ctx, at, grants); err != nil {
			b.Fatal(err)
		}
		attempts = append(attempts, at)
	}
	a := New(mgr, Options{Logger: quiet})
	if _, err := a.Cycle(ctx); err != nil {
		b.Fatal(err)
	}
	oneMore := []*yarnpb.ResourceRequestProto{{ResourceName: proto.String("*"), Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)},
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(1)}}
	for _, work := range []string{"idle", "one-ask", "one-ask-own-pods-written"} {
		for _, view := range []string{"kept", "rebuilt"} {
			b.Run(work+"/"+view, func(b *testing.B) {
				for i := range b.N {
					if work != "idle" {
						a.Update(attempts[i%apps], oneMore)
					}
					if work == "one-ask-own-pods-written" {
						// As the node controller writes while Weft binds:
						// what Weft's pods hold on 20 nodes moved. The
						// writes are not the cycle's time.
						b.StopTimer()
						for j := range 20 {
							n := *mgr.Snapshot().Node(fmt.Sprintf("n%04d", (i*20+j)%nodes))
							n.NumContainers++
							n.Used.MemoryMB += 1024
							if err := mgr.PutNode(&n); err != nil {
								b.Fatal(err)
							}
						}
						b.StartTimer()
					}
					if view == "rebuilt" {
						a.view.markAll()
					}
					granted, err := a.Cycle(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if want := map[string]int{"idle": 0, "one-ask": 1, "one-ask-own-pods-written": 1}[work]; granted != want {
						b.Fatalf("granted %d containers, want %d", granted, want)
					}
				}
			})
		}
	}
}

// BenchmarkFirstCycleOfPods is the first cycle of an RM started against
// pending pods, as in test/bench/binding: 1,000 nodes, 5,000 pods naming
// Weft's scheduler, each its own job in root.default with a node
// selector, all placed and set binding by one cycle. Its length is part of
// every binding round's start, before the first pod is bound:
//
//	go test ./rmfacade/allocator -run '^$' -bench FirstCycleOfPods -benchtime 20x
func BenchmarkFirstCycleOfPods(b *testing.B) {
	const nodes, pods = 1000, 5000
	ctx := context.Background()
	st, err := state.OpenMemory()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	tree, err := quota.NewTree(quota.DefaultQueues)
	if err != nil {
		b.Fatal(err)
	}
	mgr := rm.New(st, tree, rm.Options{Logger: quiet})
	kube := &versionedNodes{nodes: map[string]*corev1.Node{}}
	taint := corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}
	for i := range nodes {
		id := fmt.Sprintf("n%04d", i)
		kube.nodes[id] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: id, Labels: map[string]string{"type": "kwok"}},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{taint}}}
		if err := mgr.PutNode(&records.Node{ID: id, Host: id, HTTPAddress: id + ":8042", State: records.NodeRunning,
			Capability: records.Resource{MemoryMB: 256 << 10, VCores: 32}}); err != nil {
			b.Fatal(err)
		}
	}
	source := &podsAtBoundary{}
	for i := range pods {
		source.add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%05d", i), Namespace: "bench",
			UID: types.UID(fmt.Sprint("uid-", i)), ResourceVersion: "1"},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"type": "kwok"},
				Tolerations: []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}})
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		a := New(mgr, Options{Logger: quiet, Pods: &placedOnly{source}, Profile: translator.Plain, Nodes: kube,
			Scheduler: scheduler.Options{PercentageOfNodesToScore: scheduler.AdaptivePercentage}}) // weft-rm's default
		b.StartTimer()
		granted, err := a.Cycle(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if granted != pods {
			b.Fatalf("placed %d pods, want %d", granted, pods)
		}
	}
}

// placedOnly is a PodSource whose bindings never complete: a cycle counts
// its pods bound as it sets them binding, and the pods stay as they were
// for the next iteration's new Allocator.
type placedOnly struct{ *podsAtBoundary }

func (placedOnly) BindAsync(context.Context, []podbinder.Binding, func([]error)) {}
