package sim

import (
	"container/heap"
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler"
	"github.com/weft-sh/weft/scheduler/objects"
	"github.com/weft-sh/weft/scheduler/state"
	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"
)

const gib = int64(1) << 30

// amUsageRatio is what an ApplicationMaster uses of its request: it
// coordinates, the workers compute.
const amUsageRatio = 0.3

// maxAsks bounds the worker requests a job keeps pending in the scheduler
// at once. A real AM asks for all it could run; the cap keeps a saturated
// cluster's scheduling cycles from re-reading tens of thousands of asks
// that cannot be placed, and changes little else: as many workers are
// asked as capacity frees between two cycles.
const maxAsks = 8

// Kill causes, as the result counts them.
const (
	KillTide       = "tide"       // a lent node taken back past its notice
	KillEviction   = "eviction"   // the node agent's memory eviction
	KillPreemption = "preemption" // a queue's reclaim past the grace
	// Causes only the real run reports (test/bench/groundtruth reads
	// them from the RM's exit status and diagnostics): a container whose
	// pod went away under it, one the RM expired or aborted, anything
	// else.
	KillPodLost = "pod lost"
	KillAborted = "aborted"
	// KillRejected is a pod the kubelet refused at admission
	// (OutOf<resource>): the simulation places by the number the RM
	// reads, which the kubelet's never lags.
	KillRejected = "rejected"
	KillOther    = "other"
)

type eventKind uint8

const (
	evArrival eventKind = iota
	evTaskEnd
	evPreemptKill
	evDeadline
	evDrained
	evMeasure
	evSchedule
	evAgent
	evTide
	evScale
	evSample
)

// event is one thing that happens at a virtual instant. Events at the
// same instant happen in the order they were pushed (seq): the loop is
// deterministic.
type event struct {
	at   time.Time
	seq  uint64
	kind eventKind
	c    *container
	ver  uint32
	n    *node
	job  int
}

type events []event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if c := h[i].at.Compare(h[j].at); c != 0 {
		return c < 0
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(event)) }
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// node is one machine as the simulator sees it: its online pods, its
// place in the tide, the agent's memory, and the batch containers on it.
type node struct {
	i    int
	name string
	// alloc is its allocatable (Cluster.Extra differ from the others).
	alloc colocation.Amount
	// State is its tide state (Online for the policies without a tide).
	state    v1alpha1.NodeState
	deadline time.Time
	// batchOnly: the static split's batch partition.
	batchOnly bool
	online    int  // online replicas running on it
	next      bool // the tide's Next: its replicas go first on scale-in
	// The agent's state: recent usage, what it published, its cooldown.
	peaks    colocation.Peaks
	hyst     colocation.Hysteresis
	cooldown time.Time
	offer    colocation.Amount // published to the scheduler
	cordoned bool
	// Usage of online work (pods and the system) as last measured.
	onlineCPU, onlineMem float64
	conts                []*container
	// demand is what its batch containers would use at full speed.
	demandCPU, memUse float64
	rate              float64 // the speed batch work runs at (CPU share)
}

type job struct {
	spec    *Job
	mix     *Mix
	id      string
	todo    []float64 // tasks waiting for a worker
	running int       // workers running
	asks    int       // worker requests pending
	am      *container
	amAsk   bool
	started bool // the gang has run
	seq     int
	done    bool
	asked   map[string]bool // requests pending
}

type request struct {
	job  *job
	tier records.Tier
	am   bool
	res  quota.Resource
}

type container struct {
	id      string
	job     *job
	n       *node
	tier    records.Tier
	am      bool
	res     quota.Resource
	cpuUse  float64 // at full speed
	memUse  float64
	task    float64 // the task's full duration (workers)
	left    float64 // seconds of work left at full speed
	lastAt  time.Time
	rate    float64
	ver     uint32
	started time.Time
	noticed bool // preemption or tide notice given
	idx     int  // position in n.conts
}

type onlinePod struct{ created time.Time }

// engine runs one policy over one workload.
type engine struct {
	sc     *Scenario
	w      *Workload
	p      Policy
	now    time.Time
	end    time.Time
	seq    uint64
	ev     events
	store  *state.Store
	sched  *scheduler.Scheduler
	ops    []func(*state.Txn) error
	nodes  []*node
	byName map[string]*node
	cfg    colocation.Config
	spec   v1alpha1.TidePoolSpec

	pending []onlinePod
	waiting map[string][]int // jobs not yet submitted, per queue
	inGang  map[string]int   // jobs submitted whose gang waits, per queue
	active  map[string]int   // jobs submitted and not done, per queue
	maxApps map[string]int   // Queue.MaxParallelApps
	jobs    []*job
	reqs    map[string]*request
	conts   map[string]*container
	sample  int // agent sample index (noise key)

	r     *Result
	loops map[eventKind]loop
}

// loop is a periodic control loop of the simulated cluster.
type loop struct {
	run   func() error
	every time.Duration
}

func (e *engine) setLoops() {
	iv := e.sc.Intervals
	plain := func(f func()) func() error { return func() error { f(); return nil } }
	e.loops = map[eventKind]loop{
		evSchedule: {e.schedule, iv.Schedule.Duration},
		evAgent:    {plain(e.agents), iv.Agent.Duration},
		evTide:     {plain(e.tide), iv.Tide.Duration},
		evScale:    {plain(e.scale), iv.Scale.Duration},
		evSample:   {plain(e.record), iv.Sample.Duration},
	}
}

func newEngine(sc *Scenario, w *Workload, p Policy) (*engine, error) {
	e := &engine{sc: sc, w: w, p: p, now: sc.Start.Add(-sc.WarmUp.Duration), end: sc.Start.Add(sc.Duration.Duration),
		cfg: sc.Colocation, spec: sc.Tide, byName: map[string]*node{}, waiting: map[string][]int{}, inGang: map[string]int{},
		active: map[string]int{}, maxApps: map[string]int{},
		reqs: map[string]*request{}, conts: map[string]*container{},
		r: &Result{Policy: p, KillsBy: map[string]int{}, TasksKilledBy: map[string]int{}}}
	if p == TideNoNotice {
		spec := *e.spec.DeepCopy()
		spec.Notice = &metav1.Duration{}
		e.spec = spec
	}
	e.setLoops()
	c := sc.Cluster
	staticBatch := c.Nodes * sc.StaticBatchPercent / 100
	for i := range c.Nodes + len(c.Extra) {
		n := &node{i: i, name: fmt.Sprintf("node-%05d", i), alloc: c.alloc(i), state: v1alpha1.StateOnline, rate: 1}
		n.batchOnly = p == StaticSplit && i >= c.Nodes-staticBatch && i < c.Nodes
		e.nodes = append(e.nodes, n)
		e.byName[n.name] = n
	}
	if p.batch() {
		t := c.Total()
		total := quota.Resource{MilliCPU: t.MilliCPU, Memory: t.Memory}
		pct := func(v float64) quota.Resource {
			return quota.Resource{MilliCPU: int64(float64(total.MilliCPU) * v / 100), Memory: int64(float64(total.Memory) * v / 100)}
		}
		quotas := []quota.QueueQuota{{Path: "root"}}
		for _, q := range sc.Batch.Queues {
			e.maxApps[q.Name] = q.MaxParallelApps
			qq := quota.QueueQuota{Path: "root." + q.Name, Guaranteed: pct(q.GuaranteePercent), Weight: q.Weight}
			if q.MaxPercent > 0 {
				m := pct(q.MaxPercent)
				qq.Max = &m
			}
			quotas = append(quotas, qq)
		}
		h, err := quota.NewHierarchy(quotas)
		if err != nil {
			return nil, fmt.Errorf("sim: queues: %w", err)
		}
		if e.store, err = state.New(h); err != nil {
			return nil, fmt.Errorf("sim: store: %w", err)
		}
		e.sched = scheduler.New(scheduler.Options{NodesToScore: sc.NodesToScore})
		for _, n := range e.nodes {
			e.upsertNode(n)
		}
	}
	return e, nil
}

func (e *engine) push(at time.Time, ev event) {
	e.seq++
	ev.at, ev.seq = at, e.seq
	heap.Push(&e.ev, ev)
}

// run plays the day.
func (e *engine) run(ctx context.Context) (*Result, error) {
	start := time.Now()
	iv := e.sc.Intervals
	e.push(e.now, event{kind: evScale})
	e.push(e.now, event{kind: evAgent})
	if e.p.batch() {
		for i, j := range e.w.Jobs {
			e.push(j.At, event{kind: evArrival, job: i})
		}
		e.push(e.now.Add(iv.Schedule.Duration/2), event{kind: evSchedule})
	}
	if e.p.tidal() {
		e.push(e.now.Add(iv.Tide.Duration/3), event{kind: evTide})
	}
	e.push(e.sc.Start.Time, event{kind: evMeasure})
	e.push(e.sc.Start.Time, event{kind: evSample})
	for steps := 0; len(e.ev) > 0; steps++ {
		if steps%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ev := heap.Pop(&e.ev).(event)
		if ev.at.After(e.end) {
			break
		}
		e.now = ev.at
		if err := e.handle(ev); err != nil {
			return nil, fmt.Errorf("sim: %s at %s: %w", e.p, e.now.Format(time.TimeOnly), err)
		}
	}
	e.now = e.end
	e.finish()
	e.r.Wall = time.Since(start)
	return e.r, nil
}

func (e *engine) handle(ev event) error {
	switch ev.kind {
	case evArrival:
		e.arrive(ev.job)
	case evTaskEnd:
		if c := ev.c; e.conts[c.id] == c && c.ver == ev.ver {
			e.complete(c)
		}
	case evPreemptKill:
		if c := ev.c; e.conts[c.id] == c {
			e.kill(c, KillPreemption)
		}
	case evDeadline:
		if n := ev.n; n.state == v1alpha1.StateOfflineToOnline && n.deadline.Equal(e.now) {
			for len(n.conts) > 0 {
				e.kill(n.conts[len(n.conts)-1], KillTide)
			}
			e.toOnline(n)
		}
	case evMeasure:
		// The warm-up is over: count from here.
		e.r = &Result{Policy: e.p, KillsBy: map[string]int{}, TasksKilledBy: map[string]int{}, running: e.r.running}
	case evDrained:
		if n := ev.n; n.state == v1alpha1.StateOnlineToOffline {
			e.move(n, v1alpha1.StateOffline)
		}
	default:
		// A control loop: it runs, then comes again after its interval.
		l := e.loops[ev.kind]
		if err := l.run(); err != nil {
			return err
		}
		e.push(e.now.Add(l.every), event{kind: ev.kind})
	}
	return nil
}

// --- online work: a ReplicaSet scaled to the curve, placed as
// kube-scheduler places pods (by requests, the emptiest node first).

// onlineNode reports whether online pods may be placed on n.
func (e *engine) onlineNode(n *node) bool {
	return !n.batchOnly && n.state == v1alpha1.StateOnline
}

func (e *engine) scale() {
	i := int(e.now.Sub(e.sc.Start.Add(-e.sc.WarmUp.Duration)) / e.sc.Intervals.Scale.Duration)
	target := e.w.Replicas[min(i, len(e.w.Replicas)-1)]
	running := 0
	for _, n := range e.nodes {
		running += n.online
	}
	switch have := running + len(e.pending); {
	case target > have:
		for range target - have {
			e.pending = append(e.pending, onlinePod{created: e.now})
		}
	case target < have:
		drop := have - target
		// The ReplicaSet deletes unscheduled pods first, then those of
		// the lowest pod-deletion-cost (the tide's next nodes), then
		// those on the nodes with the most replicas.
		k := min(drop, len(e.pending))
		e.pending = e.pending[:len(e.pending)-k]
		drop -= k
		for ; drop > 0; drop-- {
			var victim *node
			for _, n := range e.nodes {
				if n.online == 0 {
					continue
				}
				if victim == nil || n.next && !victim.next || n.next == victim.next && n.online > victim.online {
					victim = n
				}
			}
			if victim == nil {
				break
			}
			victim.online--
		}
	}
	e.placeOnline()
}

// placeOnline binds pending online pods, oldest first, each to the Online
// node with the fewest replicas that has room for its requests.
func (e *engine) placeOnline() {
	if len(e.pending) == 0 {
		return
	}
	o := e.sc.Online
	room := func(n *node) int { return o.Room(n.alloc) }
	maxPods := 0
	for _, n := range e.nodes {
		maxPods = max(maxPods, room(n))
	}
	// Buckets of nodes by replica count: the emptiest first, by index.
	buckets := make([][]*node, maxPods)
	for _, n := range e.nodes {
		if e.onlineNode(n) && n.online < room(n) {
			buckets[n.online] = append(buckets[n.online], n)
		}
	}
	placed := 0
	for b := 0; b < maxPods && placed < len(e.pending); b++ {
		// A node placed on moves to the next bucket: every node there
		// has no fewer replicas than any left in this one.
		for _, n := range buckets[b] {
			if placed == len(e.pending) {
				break
			}
			n.online++
			e.r.OnlineWaitMax = max(e.r.OnlineWaitMax, e.now.Sub(e.pending[placed].created))
			placed++
			if n.online < room(n) {
				buckets[n.online] = append(buckets[n.online], n)
			}
		}
	}
	e.pending = e.pending[placed:]
	e.r.OnlinePendingMax = max(e.r.OnlinePendingMax, len(e.pending))
}

// --- the node agents.

// measure is online usage on n at this sample: its replicas' requests
// times the usage ratio, with noise, plus the system's.
func (e *engine) measure(n *node) {
	o, c := e.sc.Online, e.sc.Cluster
	f := 1 + e.w.noise(n.i, e.sample, o.NoisePercent/100)
	n.onlineCPU = float64(n.online)*float64(o.PodMilliCPU)*o.CPUUsageRatio*max(0, f) + float64(c.SystemMilliCPU)
	n.onlineMem = float64(n.online)*o.PodMemoryGiB*float64(gib)*o.MemoryUsageRatio + float64(c.SystemMemoryGiB*gib)
}

// agents runs every node's agent: measure, decide (colocation.Decide), set
// the CPU share batch work runs at, evict under memory pressure
// (colocation.Victims), publish the offer through the hysteresis.
func (e *engine) agents() {
	e.sample++
	for _, n := range e.nodes {
		e.measure(n)
		if !e.p.batch() {
			continue
		}
		e.agent(n)
	}
}

func (e *engine) agent(n *node) {
	u := colocation.Usage{At: e.now, Online: colocation.Amount{MilliCPU: int64(n.onlineCPU), Memory: int64(n.onlineMem)},
		Batch: colocation.Amount{MilliCPU: int64(n.demandCPU * n.rate), Memory: int64(n.memUse)}}
	u.NodeMemory = u.Online.Memory + u.Batch.Memory
	cfg := e.cfg
	lent := n.batchOnly || n.state == v1alpha1.StateOffline
	if lent {
		cfg = cfg.LentWhole()
	}
	n.peaks.Observe(u, cfg.PeakWindow.Duration)
	d := colocation.Decide(cfg, e.now, n.alloc, &n.peaks, n.cooldown)
	// What batch work may use of the CPU: what online work leaves, and
	// within the big box where the agent holds one.
	avail := float64(n.alloc.MilliCPU) - n.onlineCPU
	if lent || e.p.usageReclaim() {
		avail = min(avail, float64(d.Box.MilliCPU))
	}
	e.setRate(n, avail)
	if d.EvictMemory > 0 && len(n.conts) > 0 {
		pods := make([]colocation.BatchPod, len(n.conts))
		for i, c := range n.conts {
			pods[i] = colocation.BatchPod{Name: c.id, UID: c.id, Tier: c.tier, Started: c.started, WorkingSet: int64(c.memUse)}
		}
		victims := colocation.Victims(pods, d.EvictMemory)
		for _, v := range victims {
			if c := e.conts[v.UID]; c != nil {
				e.kill(c, KillEviction)
			}
		}
		if len(victims) > 0 {
			n.cooldown = e.now.Add(cfg.Cooldown.Duration)
			d.Offer = colocation.Amount{}
		}
	}
	offer := colocation.Amount{}
	switch {
	case n.state == v1alpha1.StateOnlineToOffline || n.state == v1alpha1.StateOfflineToOnline:
	case lent:
		offer = d.Offer
	case e.p == RequestGap:
		o := e.sc.Online
		offer = colocation.Amount{MilliCPU: max(0, n.alloc.MilliCPU-int64(n.online)*o.PodMilliCPU),
			Memory: max(0, n.alloc.Memory-int64(float64(n.online)*o.PodMemoryGiB*float64(gib)))}
		if e.now.Before(n.cooldown) {
			offer = colocation.Amount{}
		}
	case e.p.usageReclaim():
		offer = d.Offer
	}
	pub, changed := n.hyst.Next(offer, n.alloc, cfg.Hysteresis)
	if changed || pub != n.offer {
		n.offer = pub
		e.upsertNode(n)
	}
}

// setRate sets the speed of n's batch work from the CPU it may use, and
// moves its containers' ends accordingly.
func (e *engine) setRate(n *node, avail float64) {
	rate := 1.0
	if n.demandCPU > 0 && avail < n.demandCPU {
		rate = max(avail, 0) / n.demandCPU
	}
	rate = max(1.0/64, float64(int(rate*64))/64) // in 64ths: no churn for noise
	if rate == n.rate {
		return
	}
	n.rate = rate
	for _, c := range n.conts {
		e.progress(c)
		c.rate = rate
		e.scheduleEnd(c)
	}
}

// progress brings c's work left up to now.
func (e *engine) progress(c *container) {
	if !c.am {
		c.left = max(0, c.left-e.now.Sub(c.lastAt).Seconds()*c.rate)
	}
	c.lastAt = e.now
}

func (e *engine) scheduleEnd(c *container) {
	if c.am {
		return
	}
	c.ver++
	e.push(e.now.Add(time.Duration(c.left/c.rate*float64(time.Second))), event{kind: evTaskEnd, c: c, ver: c.ver})
}

// upsertNode publishes n's offer to the scheduler's store.
func (e *engine) upsertNode(n *node) {
	on := &objects.Node{ID: n.name, Allocatable: quota.Resource{MilliCPU: n.offer.MilliCPU, Memory: n.offer.Memory}, Cordoned: n.cordoned}
	e.ops = append(e.ops, func(w *state.Txn) error { return w.UpsertNode(on) })
}

// --- the tide.

func (e *engine) tide() {
	views := make([]tide.NodeView, len(e.nodes))
	o := e.sc.Online
	for i, n := range e.nodes {
		views[i] = tide.NodeView{Name: n.name, State: n.state, Ready: true, MilliCPU: n.alloc.MilliCPU,
			OnlineMilliCPU: int64(n.online) * o.PodMilliCPU, OnlinePods: n.online, BatchPods: len(n.conts)}
	}
	unbound := int64(len(e.pending)) * o.PodMilliCPU
	plan := tide.Decide(e.spec, views, tide.Pending{MilliCPU: unbound, WaitingMilliCPU: unbound}, e.now)
	for _, n := range e.nodes {
		n.next = false
	}
	for _, name := range plan.Next {
		e.byName[name].next = true
	}
	for _, name := range plan.Lend {
		n := e.byName[name]
		e.move(n, v1alpha1.StateOnlineToOffline)
		// Its replicas are evicted; the ReplicaSet makes new ones, which
		// kube-scheduler places on the Online nodes.
		for range n.online {
			e.pending = append(e.pending, onlinePod{created: e.now})
		}
		n.online = 0
		e.push(e.now.Add(min(e.sc.Intervals.Drain.Duration, tide.DrainTimeout(e.spec))), event{kind: evDrained, n: n})
	}
	for _, name := range plan.Abort {
		e.move(e.byName[name], v1alpha1.StateOnline)
	}
	notice := tide.Notice(e.spec)
	for _, name := range plan.Reclaim {
		n := e.byName[name]
		e.move(n, v1alpha1.StateOfflineToOnline)
		n.deadline = e.now.Add(notice)
		e.r.TakenBack++
		e.r.Noticed += len(n.conts)
		for _, c := range n.conts {
			c.noticed = true
		}
		if len(n.conts) == 0 {
			// Nothing to give notice to: the node is back at once.
			n.deadline = e.now
		}
		e.push(n.deadline, event{kind: evDeadline, n: n})
	}
	e.placeOnline()
}

// move changes n's tide state, counted as a transition; the store sees
// the node cordoned in the intermediate states and its offer gone.
func (e *engine) move(n *node, s v1alpha1.NodeState) {
	if n.state == s {
		return
	}
	n.state = s
	e.r.Transitions++
	if !e.p.batch() {
		return
	}
	// Cordoned on the way either side; the offer starts again from
	// nothing, and the agent publishes the new state's at its next look.
	n.cordoned = s == v1alpha1.StateOnlineToOffline || s == v1alpha1.StateOfflineToOnline
	n.offer = colocation.Amount{}
	n.hyst.Reset()
	e.upsertNode(n)
}

func (e *engine) toOnline(n *node) {
	e.move(n, v1alpha1.StateOnline)
	e.placeOnline()
}

// --- batch work.

func (e *engine) arrive(i int) {
	q := e.w.Jobs[i].Queue
	e.waiting[q] = append(e.waiting[q], i)
	e.admit(q)
}

func (e *engine) submit(i int) {
	spec := &e.w.Jobs[i]
	j := &job{spec: spec, mix: &e.sc.Batch.Mixes[spec.Mix], id: "job-" + strconv.Itoa(i), todo: append([]float64(nil), spec.Tasks...),
		asked: map[string]bool{}}
	e.jobs = append(e.jobs, j)
	e.inGang[spec.Queue]++
	e.active[spec.Queue]++
	e.r.JobsSubmitted++
	app := &objects.Application{ID: j.id, Queue: "root." + spec.Queue, User: spec.Queue, Submitted: spec.At, MinMembers: 1 + min(spec.Min, len(spec.Tasks))}
	e.ops = append(e.ops, func(w *state.Txn) error { return w.UpsertApplication(app) })
	e.ask(j, records.TierHigh, true)
	for range min(spec.Min, len(spec.Tasks)) {
		e.ask(j, records.TierMedium, false)
	}
}

func (e *engine) ask(j *job, tier records.Tier, am bool) {
	j.seq++
	id := j.id + "-" + strconv.Itoa(j.seq)
	size := j.mix.Worker
	if am {
		size = j.mix.AM
		j.amAsk = true
	} else {
		j.asks++
	}
	r := &request{job: j, tier: tier, am: am, res: quota.Resource{MilliCPU: size.MilliCPU, Memory: int64(size.MemoryGiB * float64(gib))}}
	e.reqs[id] = r
	j.asked[id] = true
	rq := &objects.Request{ID: id, AppID: j.id, Tier: tier, Resource: r.res}
	e.ops = append(e.ops, func(w *state.Txn) error { return w.AddRequest(rq) })
}

// topUp asks for workers while the job has tasks no worker or ask covers,
// up to its gang plus elastic workers at once.
func (e *engine) topUp(j *job) {
	if j.done || j.am == nil || !j.started {
		return
	}
	want := min(len(j.todo), j.spec.Min+j.spec.Elastic-j.running) - j.asks
	want = min(want, maxAsks-j.asks)
	for range max(0, want) {
		e.ask(j, records.TierLow, false)
	}
}

func (e *engine) schedule() error {
	if err := e.flush(); err != nil {
		return err
	}
	if len(e.reqs) == 0 {
		return nil
	}
	plan, err := e.sched.Schedule(context.Background(), e.store.Snapshot())
	if err != nil {
		return err
	}
	res, err := e.store.ApplyPlan(plan)
	if err != nil {
		return err
	}
	for _, u := range res.Applied {
		for _, pl := range u.Placements {
			e.start(pl.RequestID, e.byName[pl.NodeID])
		}
	}
	for _, pr := range res.Preempted {
		c := e.conts[pr.AllocationID]
		if c == nil || c.noticed {
			continue
		}
		c.noticed = true
		e.r.Preempted++
		e.push(e.now.Add(e.sc.Intervals.PreemptionGrace.Duration), event{kind: evPreemptKill, c: c})
	}
	return e.flush()
}

func (e *engine) flush() error {
	if len(e.ops) == 0 {
		return nil
	}
	ops := e.ops
	e.ops = nil
	return e.store.Update(func(w *state.Txn) error {
		for _, op := range ops {
			if err := op(w); err != nil {
				return err
			}
		}
		return nil
	})
}

// start runs a placed request's container on n.
func (e *engine) start(id string, n *node) {
	r := e.reqs[id]
	delete(e.reqs, id)
	j := r.job
	delete(j.asked, id)
	c := &container{id: id, job: j, n: n, tier: r.tier, am: r.am, res: r.res, started: e.now, lastAt: e.now, rate: n.rate}
	if r.am {
		j.amAsk = false
		j.am = c
		c.cpuUse = float64(r.res.MilliCPU) * amUsageRatio
		c.memUse = float64(r.res.Memory) * amUsageRatio
	} else {
		j.asks--
		if len(j.todo) == 0 {
			// Nothing left to run: the AM gives the container back.
			e.ops = append(e.ops, func(w *state.Txn) error { return w.ReleaseAllocation(id) })
			e.maybeDone(j)
			return
		}
		e.runTask(c)
		c.cpuUse = float64(r.res.MilliCPU) * j.mix.CPUUsageRatio
		c.memUse = float64(r.res.Memory) * j.mix.MemoryUsageRatio
		j.running++
	}
	c.idx = len(n.conts)
	n.conts = append(n.conts, c)
	n.demandCPU += c.cpuUse
	n.memUse += c.memUse
	e.conts[id] = c
	e.r.Started++
	e.r.running[c.tier]++
	if !j.started && j.am != nil && r.tier != records.TierLow && j.gangPlaced(e) {
		j.started = true
		e.inGang[j.spec.Queue]--
		// The gang runs: what the job asks for from now on is placed one
		// by one (MinMembers 0: the gang is whatever high and medium
		// requests are pending, e.g. a replacement AM).
		app := &objects.Application{ID: j.id, Queue: "root." + j.spec.Queue, User: j.spec.Queue, Submitted: j.spec.At}
		e.ops = append(e.ops, func(w *state.Txn) error { return w.UpsertApplication(app) })
		e.admit(j.spec.Queue)
	}
	if !c.am {
		e.scheduleEnd(c)
	}
	if !e.maybeDone(j) {
		e.topUp(j)
	}
}

// runTask gives worker c the job's next task.
func (e *engine) runTask(c *container) {
	j := c.job
	c.task = j.todo[len(j.todo)-1]
	j.todo = j.todo[:len(j.todo)-1]
	c.left, c.lastAt = c.task, e.now
	e.r.TaskAttempts++
	if c.cpuUse > 0 {
		e.scheduleEnd(c)
	}
}

// gangPlaced reports whether the job's AM and minimum workers all run.
func (j *job) gangPlaced(e *engine) bool {
	return !j.amAsk && j.am != nil && j.asks == 0
}

// admit submits the queue's next waiting job, if the queue has room.
func (e *engine) admit(q string) {
	for len(e.waiting[q]) > 0 && e.inGang[q] < e.sc.Batch.MaxPendingJobs && (e.maxApps[q] == 0 || e.active[q] < e.maxApps[q]) {
		i := e.waiting[q][0]
		e.waiting[q] = e.waiting[q][1:]
		e.submit(i)
	}
}

// detach takes c off its node and out of the store.
func (e *engine) detach(c *container, release bool) {
	n := c.n
	last := n.conts[len(n.conts)-1]
	n.conts[c.idx] = last
	last.idx = c.idx
	n.conts = n.conts[:len(n.conts)-1]
	n.demandCPU -= c.cpuUse
	n.memUse -= c.memUse
	if len(n.conts) == 0 {
		n.demandCPU, n.memUse = 0, 0
	}
	delete(e.conts, c.id)
	e.r.running[c.tier]--
	if release {
		id := c.id
		e.ops = append(e.ops, func(w *state.Txn) error { return w.ReleaseAllocation(id) })
	}
	if n.state == v1alpha1.StateOfflineToOnline && len(n.conts) == 0 {
		// Every batch pod left within the notice: the node is back.
		e.toOnline(n)
	}
}

// complete is a worker's task done: a Spark-like executor takes the
// job's next task; otherwise the container ends.
func (e *engine) complete(c *container) {
	j := c.job
	e.r.TasksDone++
	e.r.WorkCoreSeconds += c.task * float64(c.res.MilliCPU) / 1000
	if j.mix.ReuseContainers && !c.noticed && len(j.todo) > 0 {
		e.runTask(c)
		return
	}
	if c.noticed {
		e.r.SavedByNotice++
	}
	j.running--
	e.detach(c, true)
	if !e.maybeDone(j) {
		e.topUp(j)
	}
}

// maybeDone ends a job whose tasks all ran, once its AM runs: the AM
// unregisters, and the application goes with its asks.
func (e *engine) maybeDone(j *job) bool {
	if j.done || len(j.todo) > 0 || j.running > 0 || j.am == nil {
		return j.done
	}
	j.done = true
	e.r.JobsDone++
	e.active[j.spec.Queue]--
	defer e.admit(j.spec.Queue)
	if am := j.am; e.conts[am.id] == am {
		e.detach(am, false)
	}
	for id := range j.asked {
		delete(e.reqs, id)
	}
	id := j.id
	e.ops = append(e.ops, func(w *state.Txn) error { return w.DeleteApplication(id) })
	return true
}

// kill ends c before its work is done: its progress is lost, its task
// runs again, an AM is asked for anew (its workers keep running, as with
// YARN's work-preserving AM restart).
func (e *engine) kill(c *container, why string) {
	j := c.job
	e.r.Killed++
	e.r.KillsBy[why]++
	if c.am {
		e.r.AMsKilled++
		j.am = nil
		e.detach(c, true)
		e.ask(j, records.TierHigh, true)
		return
	}
	e.progress(c)
	e.r.TasksKilled++
	e.r.TasksKilledBy[why]++
	e.r.LostCoreSeconds += (c.task - c.left) * float64(c.res.MilliCPU) / 1000
	j.todo = append(j.todo, c.task)
	j.running--
	e.detach(c, true)
	e.topUp(j)
}
