package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
	"github.com/weft-sh/weft/scheduler/sim"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The protocols' names as Hadoop's clients send them in each call.
const (
	clientProtocol = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
	amProtocol     = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
)

// Request priorities: the AM stand-in's (a high-tier priority by the
// application's weft.high-priorities tag) and the workers'.
const (
	amPriority     = 0
	workerPriority = 1
)

// amUsageRatio is the simulation's AM usage over request (sim's
// amUsageRatio).
const amUsageRatio = 0.3

// maxAsks is how many worker containers an AM asks for at once beyond its
// gang (sim's maxAsks).
const maxAsks = 8

// batch drives the scenario's jobs through weft-rm, each by a Go AM over
// the real client and AM protocols, and plays the node plugin's part in
// starting a granted container: it checks the container token with the
// NM master key (nmtokens, as the node plugin does) and creates the pod
// the node plugin would (translator's Pod, bound to the granted node),
// which kwok then runs. A task holds its container for its duration in
// wall time; a container the RM completes while it runs a task is a
// killed task, which runs again, as in the simulation.
type batch struct {
	cl         kubernetes.Interface
	clientAddr string
	sched      string
	keys       *nmtokens.Keys
	sc         *sim.Scenario
	clock      clock
	meter      *meter
	heartbeat  time.Duration
	clusterID  string
	namespace  string
	nmPort     int32
	maxApps    map[string]int
	uses       *sync.Map // pod name → batchUse (its UID left empty)
	// realNode is the real node's name (-real-node), whose pods the
	// kubelet runs (onRealNode), else "".
	realNode string
	// profile is the node plugin's translator profile, weft-rm's vcore
	// size (--milli-cpu-per-vcore) included.
	profile translator.Profile
	// nodeState is a node's tide state as last seen (the node
	// informer's), to tell a tide's kill from a queue's (killCause).
	nodeState   func(name string) v1alpha1.NodeState
	failures    chan error
	mu          sync.Mutex
	waiting     map[string][]int // queue → jobs waiting for room
	active      map[string]int
	done, total int
}

// run submits each job at its arrival until the scenario ends, then
// waits for nothing: what runs at the end is cut off with the run.
func (b *batch) run(ctx context.Context, jobs []sim.Job) error {
	b.waiting, b.active = map[string][]int{}, map[string]int{}
	end := b.sc.Start.Add(b.sc.Duration.Duration)
	for i, j := range jobs {
		if !j.At.Before(end) {
			break
		}
		if err := sleepUntil(ctx, b.clock.Wall(j.At)); err != nil {
			return nil
		}
		b.mu.Lock()
		b.total++
		b.waiting[j.Queue] = append(b.waiting[j.Queue], i)
		b.mu.Unlock()
		b.admit(ctx, jobs, j.Queue)
	}
	return nil
}

// admit starts the queue's waiting jobs while it has room: a queue runs
// at most its MaxParallelApps at once, later ones wait in order (as the
// simulation keeps them ACCEPTED).
func (b *batch) admit(ctx context.Context, jobs []sim.Job, q string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.waiting[q]) > 0 && (b.maxApps[q] == 0 || b.active[q] < b.maxApps[q]) {
		i := b.waiting[q][0]
		b.waiting[q] = b.waiting[q][1:]
		b.active[q]++
		go func() {
			err := b.job(ctx, i, &jobs[i])
			b.mu.Lock()
			b.active[q]--
			if err == nil {
				b.done++
			}
			b.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				select {
				case b.failures <- fmt.Errorf("job %d: %w", i, err):
				default:
				}
			}
			b.admit(ctx, jobs, q)
		}()
	}
}

// held is a container the AM holds: its pod, and the task it runs.
type held struct {
	id   records.ContainerID
	pod  string
	node string // the Kubernetes node it was granted on
	// noticed is set once the RM names it in a PreemptionMessage (a
	// tide's notice or a queue's reclaim): it finishes its task but
	// takes no other, as the simulation's container (engine.complete)
	// and a Spark executor told to go.
	noticed bool
	// byTide is set when the notice came while the node was being taken
	// back (tidal): a tide's, even if the node is lent again by the time
	// the kill is read (a pool flapping at its watermark does that
	// within seconds on the compressed clock).
	byTide bool
	am     bool
	task   float64 // simulated seconds; 0 when idle
	end    time.Time
}

// am is one job's ApplicationMaster.
type am struct {
	b        *batch
	j        *sim.Job
	mix      *sim.Mix
	conn     *ipc.Client
	response int32
	todo     []float64
	held     map[string]*held // by container id
	amHeld   bool
	gang     bool
	release  []*yarnpb.ContainerIdProto
}

func (b *batch) job(ctx context.Context, i int, j *sim.Job) error {
	a := &am{b: b, j: j, mix: &b.sc.Batch.Mixes[j.Mix], todo: append([]float64(nil), j.Tasks...), held: map[string]*held{}}
	if err := a.start(ctx, fmt.Sprintf("%s-%d", a.mix.Name, i)); err != nil {
		return err
	}
	defer a.conn.Close()
	defer a.cleanup()
	for {
		if err := a.heartbeat(ctx); err != nil {
			return err
		}
		if len(a.todo) == 0 && a.running() == 0 {
			return a.finish(ctx)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(b.heartbeat):
		}
	}
}

func call(ctx context.Context, c *ipc.Client, protocol, method string, req, resp proto.Message) error {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.Call(cctx, protocol, method, req, resp); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// start submits the job as an unmanaged application, with the tags that
// tell weft-rm its gang (weft.min-workers) and its AM stand-in's priority
// (weft.high-priorities), waits for its AMRMToken and registers.
func (a *am) start(ctx context.Context, name string) error {
	c, err := ipc.Dial(ctx, a.b.clientAddr, ipc.ClientOptions{Protocol: clientProtocol, User: a.j.Queue})
	if err != nil {
		return err
	}
	defer c.Close()
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := call(ctx, c, clientProtocol, "getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return err
	}
	// No weft.max-workers: weft-rm would hold quota for every worker the
	// job may still run, which the simulation's applications do not
	// declare (with it, the first job's reserve starved the others).
	tags := []string{wellknown.TagMinWorkers + strconv.Itoa(a.j.Min), wellknown.TagHighPriorities + strconv.Itoa(amPriority)}
	err = call(ctx, c, clientProtocol, "submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: na.GetApplicationId(), ApplicationName: proto.String(name), Queue: proto.String(a.j.Queue), UnmanagedAm: proto.Bool(true),
		ApplicationType: proto.String(a.mix.Name), ApplicationTags: tags, Resource: resourceOf(a.mix.AM, a.b.profile),
	}}, &yarnpb.SubmitApplicationResponseProto{})
	if err != nil {
		return err
	}
	for {
		report := &yarnpb.GetApplicationReportResponseProto{}
		if err := call(ctx, c, clientProtocol, "getApplicationReport", &yarnpb.GetApplicationReportRequestProto{ApplicationId: na.GetApplicationId()}, report); err != nil {
			return err
		}
		if t := report.GetApplicationReport().GetAmRmToken(); t != nil {
			a.conn, err = ipc.Dial(ctx, a.b.sched, ipc.ClientOptions{Protocol: amProtocol,
				Token: &ipc.Token{Identifier: t.GetIdentifier(), Password: t.GetPassword()}})
			if err != nil {
				return err
			}
			return call(ctx, a.conn, amProtocol, "registerApplicationMaster", &yarnpb.RegisterApplicationMasterRequestProto{Host: proto.String("groundtruth")},
				&yarnpb.RegisterApplicationMasterResponseProto{})
		}
		if err := sleepUntil(ctx, time.Now().Add(a.b.heartbeat/4)); err != nil {
			return err
		}
	}
}

// resourceOf is s as YARN asks for it: vcores of p's size (sizes are
// multiples of it: vcoreSized).
func resourceOf(s sim.Size, p translator.Profile) *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(int64(s.MemoryGiB * 1024)), VirtualCores: proto.Int32(int32(s.MilliCPU / p.VCoreMilli()))}
}

func (a *am) running() int {
	n := 0
	for _, h := range a.held {
		if h.task > 0 {
			n++
		}
	}
	return n
}

func (a *am) workers() int {
	n := 0
	for _, h := range a.held {
		if !h.am {
			n++
		}
	}
	return n
}

// asks are the AM's totals: its stand-in until it runs, its gang until
// that runs, then a worker per task left up to the gang and the elastic
// workers, at most maxAsks outstanding (the simulation's topUp).
func (a *am) asks() []*yarnpb.ResourceRequestProto {
	am := 0
	if !a.amHeld {
		am = 1
	}
	var workers int
	if !a.gang {
		workers = min(a.j.Min, len(a.j.Tasks)) - a.workers()
	} else {
		workers = min(len(a.todo), a.j.Min+a.j.Elastic-a.running(), maxAsks)
	}
	req := func(prio, n int, s sim.Size) *yarnpb.ResourceRequestProto {
		return &yarnpb.ResourceRequestProto{Priority: &yarnpb.PriorityProto{Priority: proto.Int32(int32(prio))}, ResourceName: proto.String("*"),
			Capability: resourceOf(s, a.b.profile), NumContainers: proto.Int32(int32(max(0, n))), RelaxLocality: proto.Bool(true)}
	}
	return []*yarnpb.ResourceRequestProto{req(amPriority, am, a.mix.AM), req(workerPriority, workers, a.mix.Worker)}
}

// heartbeat is one allocate: ends the tasks due, starts what was granted,
// and counts what the RM ended.
func (a *am) heartbeat(ctx context.Context) error {
	now := time.Now()
	for _, h := range a.held {
		if h.task > 0 && !now.Before(h.end) {
			h.task = 0
			if a.reuses(h) {
				a.run(h, now)
			}
		}
		if !h.am && h.task == 0 {
			a.drop(ctx, h, true)
		}
	}
	resp := &yarnpb.AllocateResponseProto{}
	err := call(ctx, a.conn, amProtocol, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.response), Ask: a.asks(),
		Release: a.release, Progress: proto.Float32(0.5)}, resp)
	if err != nil {
		return err
	}
	a.release = nil
	a.response = resp.GetResponseId()
	a.notice(resp.GetPreempt())
	for _, st := range resp.GetCompletedContainerStatuses() {
		id := wire.ContainerIDOf(st.GetContainerId()).String()
		h := a.held[id]
		if h == nil {
			continue
		}
		if h.task > 0 {
			at, state := a.b.clock.Sim(time.Now()), a.b.nodeState(h.node)
			cause := killCause(st.GetExitStatus(), st.GetDiagnostics(), h.byTide || tidal(state))
			a.b.meter.killedTask(at, cause)
			a.todo = append(a.todo, h.task)
			// Few enough to read one by one, and the only way to tell
			// whose choice each was.
			fmt.Printf("    kill %s  %s on %s (%s, noticed %t): %s; exit %d, %q\n", at.Format("15:04:05"), id, h.node, state, h.noticed, cause,
				st.GetExitStatus(), st.GetDiagnostics())
		}
		if h.am {
			a.amHeld = false
		}
		delete(a.held, id)
		a.deletePod(ctx, h.pod)
	}
	for _, c := range resp.GetAllocatedContainers() {
		if err := a.started(ctx, c); err != nil {
			return err
		}
	}
	if !a.gang && a.amHeld && a.workers() >= min(a.j.Min, len(a.j.Tasks)) {
		a.gang = true
	}
	return nil
}

// notice marks the containers msg names (weft-rm sends the same list as
// the strict contract and the contract) noticed.
func (a *am) notice(msg *yarnpb.PreemptionMessageProto) {
	for _, cs := range [][]*yarnpb.PreemptionContainerProto{msg.GetStrictContract().GetContainer(), msg.GetContract().GetContainer()} {
		for _, c := range cs {
			if h := a.held[wire.ContainerIDOf(c.GetId()).String()]; h != nil && !h.noticed {
				h.noticed, h.byTide = true, tidal(a.b.nodeState(h.node))
				a.b.meter.notice(a.b.clock.Sim(time.Now()))
			}
		}
	}
}

// reuses reports whether h, its task done, takes the job's next one: a
// Spark-like executor does unless it was told to go.
func (a *am) reuses(h *held) bool {
	return a.mix.ReuseContainers && !h.noticed && len(a.todo) > 0
}

// started takes a granted container: its pod, as the node plugin starts
// it, and a task, or back to the RM when none is left.
func (a *am) started(ctx context.Context, c *yarnpb.ContainerProto) error {
	node := fmt.Sprintf("%s:%d", c.GetNodeId().GetHost(), c.GetNodeId().GetPort())
	g, err := a.b.keys.VerifyContainerToken(c.GetContainerToken(), node)
	if err != nil {
		return fmt.Errorf("container token of %s: %w", wire.ContainerIDOf(c.GetId()), err)
	}
	isAM := c.GetPriority().GetPriority() == amPriority
	if isAM && a.amHeld || !isAM && len(a.todo) == 0 {
		a.release = append(a.release, c.GetId())
		return nil
	}
	size, ratioCPU, ratioMem := a.mix.Worker, a.mix.CPUUsageRatio, a.mix.MemoryUsageRatio
	if isAM {
		size, ratioCPU, ratioMem = a.mix.AM, amUsageRatio, amUsageRatio
	}
	pod, err := a.b.profile.Pod(translator.ContainerSpec{
		App: g.Container.Attempt.App.String(), Attempt: g.Container.Attempt.String(), Container: g.Container.String(),
		User: g.User, Queue: g.Queue, Tier: g.Tier, MemoryMB: g.Resource.MemoryMB, VCores: g.Resource.VCores,
		NodeName: c.GetNodeId().GetHost(), NMPort: a.b.nmPort, RM: a.b.clusterID, Namespace: a.b.namespace,
		// kwok runs any image: none is pulled.
		Runtime: translator.Runtime{Image: "fake"},
	})
	if err != nil {
		return fmt.Errorf("pod of %s: %w", g.Container, err)
	}
	pod.Spec.TerminationGracePeriodSeconds = new(int64)
	use := batchUse{MilliCPU: int64(float64(size.MilliCPU) * ratioCPU), Bytes: int64(size.MemoryGiB * ratioMem * (1 << 30))}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName == a.b.realNode {
		onRealNode(pod, use.MilliCPU)
	}
	a.b.uses.Store(pod.Name, use)
	if _, err := a.b.cl.CoreV1().Pods(a.b.namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod of %s: %w", g.Container, err)
	}
	h := &held{id: g.Container, pod: pod.Name, node: c.GetNodeId().GetHost(), am: isAM}
	a.held[g.Container.String()] = h
	if isAM {
		a.amHeld = true
		return nil
	}
	a.run(h, time.Now())
	return nil
}

// run gives container h the job's next task.
func (a *am) run(h *held, now time.Time) {
	h.task = a.todo[len(a.todo)-1]
	a.todo = a.todo[:len(a.todo)-1]
	h.end = now.Add(a.b.clock.Scale(time.Duration(h.task * float64(time.Second))))
	a.b.meter.started(a.b.clock.Sim(now))
}

// drop gives container h back: released to the RM, its pod stopped.
func (a *am) drop(ctx context.Context, h *held, release bool) {
	if release {
		a.release = append(a.release, wire.ContainerID(h.id))
	}
	delete(a.held, h.id.String())
	a.deletePod(ctx, h.pod)
}

func (a *am) deletePod(ctx context.Context, name string) {
	a.b.uses.Delete(name)
	err := a.b.cl.CoreV1().Pods(a.b.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		fmt.Printf("groundtruth: delete pod %s: %v\n", name, err)
	}
}

// finish gives back the AM stand-in and unregisters.
func (a *am) finish(ctx context.Context) error {
	for _, h := range a.held {
		a.drop(ctx, h, true)
	}
	if len(a.release) > 0 {
		resp := &yarnpb.AllocateResponseProto{}
		if err := call(ctx, a.conn, amProtocol, "allocate", &yarnpb.AllocateRequestProto{ResponseId: proto.Int32(a.response), Release: a.release}, resp); err != nil {
			return err
		}
		a.release = nil
	}
	return call(ctx, a.conn, amProtocol, "finishApplicationMaster", &yarnpb.FinishApplicationMasterRequestProto{
		FinalApplicationStatus: yarnpb.FinalApplicationStatusProto_APP_SUCCEEDED.Enum()}, &yarnpb.FinishApplicationMasterResponseProto{})
}

// cleanup stops the pods of whatever the AM still holds when it ends.
func (a *am) cleanup() {
	for _, h := range a.held {
		a.deletePod(context.Background(), h.pod)
	}
}

// batchUses are the batch pods among pods with what each would use.
func batchUses(pods []*corev1.Pod, uses *sync.Map) []batchUse {
	var out []batchUse
	for _, p := range pods {
		v, ok := uses.Load(p.Name)
		if !ok || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		u := v.(batchUse)
		u.UID = string(p.UID)
		out = append(out, u)
	}
	return out
}
