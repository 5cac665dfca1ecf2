// Command failover measures how long weft-rm takes to come back with 1,000
// running containers in its state kept in the API server: a restart (kill
// -9, the same replica started again; restart → first allocation) and a
// failover (kill -9 of the active while a standby runs; kill → standby
// active, and kill → first allocation through it), on a private control
// plane with kwok's fake nodes.
//
// The containers belong to unmanaged AMs driven over the real protocols
// (the client protocol to submit, the AM protocol with each attempt's
// AMRMToken), each container a pod bound to its node and labelled as the
// node plugin labels it, so the recovering RM finds them as it finds a
// real cluster's. After the kill, every AM calls allocate every 100 ms
// (Hadoop's AMs heartbeat each second: this measures the RM, not their
// wait), re-registers when told it is not registered (YARN's resync), and
// asks for one more container; the first one granted ends the measure.
//
// The physical floor printed beside it is the Lease: a standby may take
// over only once LeaseDuration has passed without a renewal.
//
//	go run ./test/bench/failover [-nodes 20] [-apps 10] [-containers 100]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/rmfacade/amrm"
	"github.com/weft-sh/weft/rmfacade/clientrm"
	"github.com/weft-sh/weft/test/bench/kwokfleet"
	"github.com/weft-sh/weft/test/e2e"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

const (
	clusterID = "bench"
	jobs      = "weft-jobs"
	system    = "weft-system"
	lease     = 5 * time.Second
)

func main() {
	nodes := flag.Int("nodes", 20, "kwok nodes (32 CPU, 256 GiB each; 128 vcores at 250m a vcore)")
	apps := flag.Int("apps", 10, "unmanaged AMs")
	containers := flag.Int("containers", 100, "running containers per AM")
	logs := flag.String("logs", "", "keep weft-rm's and kwok's logs in this directory")
	flag.Parse()
	err := kwokfleet.Run(30*time.Minute, kwokfleet.Options{Nodes: *nodes, Logs: *logs}, func(ctx context.Context, f *kwokfleet.Fleet) error {
		return run(ctx, f, *nodes, *apps, *containers)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, f *kwokfleet.Fleet, nodes, apps, perApp int) error {
	for _, ns := range []string{jobs, system} {
		_, err := f.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	rms := make([]*e2e.RM, 2)
	for i := range rms {
		addrs, err := e2e.FreeAddrs(3)
		if err != nil {
			return err
		}
		id := fmt.Sprintf("rm%d", i+1)
		rms[i] = &e2e.RM{Bin: filepath.Join(f.Bin, "weft-rm"), DataDir: filepath.Join(f.Work, id), ClientAddr: addrs[0], SchedulerAddr: addrs[1],
			WebAddr: addrs[2], HA: true, Args: []string{"--kubeconfig", f.Cluster.Kubeconfig, "--local-node=false", "--profile", "plain",
				"--namespace", jobs, "--cluster-id", clusterID, "--milli-cpu-per-vcore", "250", "--state-namespace", system, "--ha-id", id,
				"--ha-lease-duration", lease.String(), "--kube-api-qps", "500", "--kube-api-burst", "1000",
				"--am-expiry", "30m", "--container-allocation-expiry", "30m"}}
	}
	defer func() {
		for i, r := range rms {
			r.Stop()
			if f.Logs != "" {
				os.WriteFile(filepath.Join(f.Logs, fmt.Sprintf("weft-rm-%d.log", i+1)), []byte(r.Logs()), 0o644)
			}
		}
	}()
	active := rms[0]
	if err := active.Start(ctx); err != nil {
		return err
	}
	if err := waitActive(ctx, active); err != nil {
		return err
	}

	ams := make([]*am, apps)
	start := time.Now()
	err := parallel(apps, func(i int) error {
		a, err := newAM(ctx, active, fmt.Sprintf("bench-%d", i))
		if err != nil {
			return err
		}
		ams[i] = a
		return a.fill(ctx, f.Client, perApp)
	})
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	total := apps * perApp
	if err := waitPodsRunning(ctx, f.Client, total); err != nil {
		return err
	}
	fmt.Printf("%d kwok nodes, %d unmanaged AMs, %d running containers (pods Running) set up in %s\n",
		nodes, apps, total, time.Since(start).Round(time.Millisecond))

	// Restart: the same replica, killed and started again at once. It
	// holds the Lease under its own id, so it leads again without waiting
	// out the Lease.
	if err := active.Kill(); err != nil {
		return err
	}
	t0 := time.Now()
	if err := active.Start(ctx); err != nil {
		return err
	}
	if err := waitActive(ctx, active); err != nil {
		return err
	}
	activeAfter := time.Since(t0)
	first, err := firstAllocation(ctx, ams, active, t0)
	if err != nil {
		return fmt.Errorf("after restart: %w", err)
	}
	fmt.Printf("restart  (kill -9, start again): active after %6.2fs, first allocation after %6.2fs\n", activeAfter.Seconds(), first.Seconds())
	restartFirst := first

	// Failover: a standby runs; the active dies without releasing the
	// Lease (its node is gone).
	standby := rms[1]
	if err := standby.Start(ctx); err != nil {
		return err
	}
	if err := active.Kill(); err != nil {
		return err
	}
	t0 = time.Now()
	if err := waitActive(ctx, standby); err != nil {
		return err
	}
	takeover := time.Since(t0)
	first, err = firstAllocation(ctx, ams, standby, t0)
	if err != nil {
		return fmt.Errorf("after failover: %w", err)
	}
	fmt.Printf("failover (kill -9 the active):   standby active after %6.2fs, first allocation after %6.2fs\n", takeover.Seconds(), first.Seconds())
	running, err := runningContainers(standby)
	if err != nil {
		return err
	}
	fmt.Printf("\nwith %d containers running (the new active reports %d): restart → first allocation %.2fs; failover → first allocation %.2fs,\n"+
		"  of which %.0fs is the Lease (the floor: --ha-lease-duration) and %.2fs Weft's own (load the state, recover, first cycle)\n",
		total, running, restartFirst.Seconds(), first.Seconds(), lease.Seconds(), (first - lease).Seconds())
	if running < total {
		return fmt.Errorf("the new active reports %d running containers, want at least %d", running, total)
	}
	return nil
}

// am is an unmanaged ApplicationMaster speaking the AM protocol.
type am struct {
	app        *yarnpb.ApplicationIdProto
	token      *commonpb.TokenProto
	conn       *ipc.Client
	responseID int32
}

func callTimeout(ctx context.Context, c *ipc.Client, protocol, method string, req, resp proto.Message) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Call(cctx, protocol, method, req, resp)
}

func newAM(ctx context.Context, rm *e2e.RM, name string) (*am, error) {
	c, err := ipc.Dial(ctx, rm.ClientAddr, ipc.ClientOptions{User: "bench", Protocol: clientrm.Protocol})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := callTimeout(ctx, c, clientrm.Protocol, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return nil, err
	}
	id := na.GetApplicationId()
	if err := callTimeout(ctx, c, clientrm.Protocol, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String(name), Queue: proto.String("default"), UnmanagedAm: proto.Bool(true),
		Resource: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
	}}, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	a := &am{app: id}
	for a.token == nil {
		report := &yarnpb.GetApplicationReportResponseProto{}
		if err := callTimeout(ctx, c, clientrm.Protocol, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}, report); err != nil {
			return nil, err
		}
		if a.token = report.GetApplicationReport().GetAmRmToken(); a.token == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return a, a.register(ctx, rm)
}

func (a *am) register(ctx context.Context, rm *e2e.RM) error {
	if a.conn != nil {
		a.conn.Close()
	}
	c, err := ipc.Dial(ctx, rm.SchedulerAddr, ipc.ClientOptions{Protocol: amrm.Protocol,
		Token: &ipc.Token{Identifier: a.token.GetIdentifier(), Password: a.token.GetPassword()}})
	if err != nil {
		return err
	}
	a.conn, a.responseID = c, 0
	return callTimeout(ctx, c, amrm.Protocol, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("bench")},
		&yarnpb.RegisterApplicationMasterResponseProto{})
}

func ask(n int32) []*yarnpb.ResourceRequestProto {
	return []*yarnpb.ResourceRequestProto{{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(1)}, ResourceName: proto.String("*"),
		Capability: &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)}, NumContainers: proto.Int32(n)}}
}

// allocate heartbeats once with asks, returning the containers granted.
func (a *am) allocate(ctx context.Context, asks []*yarnpb.ResourceRequestProto) ([]*yarnpb.ContainerProto, error) {
	resp := &yarnpb.AllocateResponseProto{}
	if err := callTimeout(ctx, a.conn, amrm.Protocol, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.responseID), Ask: asks}, resp); err != nil {
		return nil, err
	}
	a.responseID = resp.GetResponseId()
	return resp.GetAllocatedContainers(), nil
}

// fill asks for n containers and starts each as the node plugin would: a
// pod on its node, labelled with its container id.
func (a *am) fill(ctx context.Context, client kubernetes.Interface, n int) error {
	asks := ask(int32(n))
	for got := 0; got < n; {
		granted, err := a.allocate(ctx, asks)
		if err != nil {
			return err
		}
		asks = nil
		for _, c := range granted {
			if err := startPod(ctx, client, c); err != nil {
				return err
			}
			got++
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

func startPod(ctx context.Context, client kubernetes.Interface, c *yarnpb.ContainerProto) error {
	cid := wire.ContainerIDOf(c.GetId())
	_, err := client.CoreV1().Pods(jobs).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: translator.PodName(cid.String()), Namespace: jobs, Labels: map[string]string{
			wellknown.LabelManagedBy: wellknown.ManagedByWeft, wellknown.LabelRM: clusterID, wellknown.LabelContainer: cid.String(),
			wellknown.LabelApp: cid.Attempt.App.String(), wellknown.LabelTier: records.TierLow.String()}},
		Spec: corev1.PodSpec{NodeName: c.GetNodeId().GetHost(), Containers: []corev1.Container{{Name: "c", Image: "fake"}}},
	}, metav1.CreateOptions{})
	return err
}

func waitPodsRunning(ctx context.Context, client kubernetes.Interface, n int) error {
	for {
		list, err := client.CoreV1().Pods(jobs).List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelRM + "=" + clusterID})
		if err != nil {
			return err
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pods running: %w", running, n, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func waitActive(ctx context.Context, rm *e2e.RM) error {
	for !rm.Active() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never became active: %w\n%s", rm.WebAddr, ctx.Err(), rm.Logs())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// firstAllocation drives every AM against rm, as AMRMClient does after a
// restart or failover, until one is granted a new container; it returns
// the time from t0.
func firstAllocation(ctx context.Context, ams []*am, rm *e2e.RM, t0 time.Time) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var once sync.Once
	var first time.Duration
	done := make(chan struct{})
	err := parallel(len(ams), func(i int) error {
		a := ams[i]
		registered := false
		for {
			select {
			case <-done:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			default:
			}
			if !registered {
				if err := a.register(ctx, rm); err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				registered = true
			}
			granted, err := a.allocate(ctx, ask(1))
			var re *ipc.RemoteError
			if errors.As(err, &re) && strings.HasSuffix(re.Class, "ApplicationMasterNotRegisteredException") {
				registered = false
				continue
			}
			if err == nil && len(granted) > 0 {
				once.Do(func() { first = time.Since(t0); close(done) })
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return first, err
}

func runningContainers(rm *e2e.RM) (int, error) {
	c, err := ipc.Dial(context.Background(), rm.ClientAddr, ipc.ClientOptions{User: "bench", Protocol: clientrm.Protocol})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	resp := &yarnpb.GetApplicationsResponseProto{}
	if err := callTimeout(context.Background(), c, clientrm.Protocol, "getApplications", &yarnpb.GetApplicationsRequestProto{}, resp); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range resp.GetApplications() {
		n += int(r.GetAppResource_Usage().GetNumUsedContainers())
	}
	return n, nil
}

func parallel(n int, fn func(int) error) error {
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- fn(i)
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}
