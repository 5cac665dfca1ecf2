package amrm

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/ipc/ipctest"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/clientrm"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// 1,000 applications submitted at once over the client protocol to 10
// queues, each capped at 20% of the cluster, whose AMs ask, hold and
// release containers while the allocator runs: no queue's max is ever
// exceeded (checked against the RM's state all along, not only at the
// end), and every application is admitted, served and finishes.
func TestThousandSubmissionsNeverExceedQueueMax(t *testing.T) {
	const apps, queues, nodes, asks = 1000, 10, 10, 2
	st, err := state.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	configs := []quota.QueueConfig{{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"}}
	for i := 0; i < queues; i++ {
		configs = append(configs, quota.QueueConfig{Path: fmt.Sprintf("root.q%d", i), Capacity: 10, MaxCapacity: 20})
	}
	tree, err := quota.NewTree(configs)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{Logger: quiet})
	for i := 0; i < nodes; i++ {
		if err := mgr.PutNode(&records.Node{ID: fmt.Sprintf("node-%d:8041", i), Host: fmt.Sprintf("node-%d", i), Port: 8041,
			HTTPAddress: fmt.Sprintf("node-%d:8042", i), State: records.NodeRunning, Capability: records.Resource{MemoryMB: 16384, VCores: 16}}); err != nil {
			t.Fatal(err)
		}
	}
	var cluster quota.Resource
	cluster.AddInPlace(quota.Resource{MilliCPU: nodes * 16 * 1000, Memory: nodes * 16384 << 20})
	maxOf := map[string]quota.Resource{}
	for _, q := range quota.QuotasFromQueues(mgr.Queues().Queues(), cluster) {
		if q.Max != nil {
			maxOf[q.Path] = *q.Max
		}
	}
	if len(maxOf) != queues {
		t.Fatalf("queue maxima %v", maxOf)
	}

	alloc := allocator.New(mgr, allocator.Options{Logger: quiet, Interval: 20 * time.Millisecond})
	amTokens := NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef"))
	amAddr := ipctest.Serve(t, ipc.Options{Tokens: amTokens}, New(mgr, Options{Allocator: alloc, Keys: nmtokens.New([]byte("fedcba9876543210fedcba9876543210"))}).Service())
	dts := clientrm.NewDelegationTokens(st, []byte("0123456789abcdef0123"), clientrm.TokenOptions{})
	clientAddr := ipctest.Serve(t, ipc.Options{Simple: true, Tokens: dts},
		clientrm.New(mgr, clientrm.Options{Tokens: dts, AMTokens: amTokens, WebAddr: "127.0.0.1:8088", Logger: quiet}).Service())

	// A bound against a hang, not a speed target (speed lives in the
	// benchmarks): under -race it takes 45–55 s on the idle two-core
	// machine, and over 3 minutes with other builds beside it.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	go alloc.Run(ctx)

	// The watcher: the RM's state, checked over and over while it changes.
	var violations atomic.Int64
	var checks atomic.Int64
	var firstViolation atomic.Value
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		for ctx.Err() == nil {
			snap := mgr.Snapshot()
			used := map[string]quota.Resource{}
			for _, a := range snap.Applications(state.ApplicationFilter{}) {
				q, _ := mgr.Queues().Queue(a.Queue)
				for _, c := range snap.ContainersOfApp(a.ID) {
					if c.State != records.ContainerComplete {
						used[q.Path] = used[q.Path].Add(quota.Resource{MilliCPU: int64(c.Resource.VCores) * 1000, Memory: c.Resource.MemoryMB << 20})
					}
				}
			}
			checks.Add(1)
			time.Sleep(time.Millisecond)
			for q, u := range used {
				if !u.Fits(maxOf[q]) {
					if violations.Add(1) == 1 {
						firstViolation.Store(fmt.Sprintf("%s uses %v over its max %v", q, u, maxOf[q]))
					}
				}
			}
		}
	}()

	// Submissions share 20 client connections, as many clients of one
	// gateway would; each AM has its own.
	clients := make([]*ipc.Client, 20)
	for i := range clients {
		if clients[i], err = ipctest.Dial(t, clientAddr, ipc.ClientOptions{User: "alice", Protocol: clientrm.Protocol}); err != nil {
			t.Fatal(err)
		}
	}
	clientCall := func(c *ipc.Client, method string, req, resp proto.Message) error {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		return c.Call(cctx, clientrm.Protocol, method, req, resp)
	}
	amCall := func(c *ipc.Client, method string, req, resp proto.Message) error {
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		return c.Call(cctx, Protocol, method, req, resp)
	}
	run := func(i int) error {
		c := clients[i%len(clients)]
		newApp := &yarnpb.GetNewApplicationResponseProto{}
		if err := clientCall(c, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, newApp); err != nil {
			return err
		}
		id := newApp.GetApplicationId()
		if err := clientCall(c, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
			ApplicationId: id, ApplicationName: proto.String(fmt.Sprintf("app-%d", i)), Queue: proto.String(fmt.Sprintf("q%d", i%queues)),
			UnmanagedAm: proto.Bool(true), Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		}}, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		// The unmanaged AM's token comes in the report, as for
		// UnmanagedAMLauncher.
		var token *commonpb.TokenProto
		for token == nil {
			report := &yarnpb.GetApplicationReportResponseProto{}
			if err := clientCall(c, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, report); err != nil {
				return err
			}
			if token = report.GetApplicationReport().GetAmRmToken(); token == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
		am, err := ipc.Dial(ctx, amAddr, ipc.ClientOptions{Protocol: Protocol, Token: &ipc.Token{Identifier: token.GetIdentifier(), Password: token.GetPassword()}})
		if err != nil {
			return err
		}
		defer am.Close()
		if err := amCall(am, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("h")},
			&yarnpb.RegisterApplicationMasterResponseProto{}); err != nil {
			return fmt.Errorf("register: %w", err)
		}
		// Ask, hold each container for a heartbeat, release it; done
		// when all asks were served.
		var responseID int32
		got := 0
		var held []*yarnpb.ContainerIdProto
		ask := []*yarnpb.ResourceRequestProto{{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
			Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(asks)}}
		for got < asks {
			resp := &yarnpb.AllocateResponseProto{}
			if err := amCall(am, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(responseID), Ask: ask, Release: held}, resp); err != nil {
				return fmt.Errorf("allocate: %w", err)
			}
			responseID, ask, held = resp.GetResponseId(), nil, nil
			for _, ct := range resp.GetAllocatedContainers() {
				held = append(held, ct.GetId())
				got++
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := amCall(am, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(responseID), Release: held}, &yarnpb.AllocateResponseProto{}); err != nil {
			return err
		}
		return amCall(am, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()},
			&yarnpb.FinishApplicationMasterResponseProto{})
	}
	var wg sync.WaitGroup
	errs := make(chan error, apps)
	for i := 0; i < apps; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := run(i); err != nil {
				errs <- fmt.Errorf("app %d: %w", i, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cancel()
	<-watchDone

	if n := violations.Load(); n > 0 {
		t.Errorf("%d states over a queue's max; first: %v", n, firstViolation.Load())
	}
	// No application lost: all of them known and finished as their AM said.
	finished := 0
	for _, a := range mgr.Snapshot().Applications(state.ApplicationFilter{}) {
		if a.FinalStatus == records.FinalSucceeded {
			finished++
		}
	}
	if finished != apps {
		t.Errorf("%d of %d applications finished SUCCEEDED", finished, apps)
	}
	t.Logf("%d RM states checked", checks.Load())
}
