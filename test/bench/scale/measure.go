package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/test/e2e"
)

// result is what one revision did under the load; a phase it could not
// finish leaves its fields zero and says so in reached.
type result struct {
	label string
	// baseline marks the revision today's code is compared with (a gain
	// column follows it, and no target verdict).
	baseline bool
	// setup is submitting and registering every AM; fill, from their asks
	// to the last container granted to them.
	setup, fill time.Duration
	// held is how many containers the AMs hold after the fill; allocated,
	// how many the RM's application reports count.
	held, allocated int
	// granted and decisionTime are the RM's counters over the fill:
	// containers granted, and its cycles' time to a checked plan.
	granted      float64
	decisionTime time.Duration
	cycles       float64
	// cycleLog sums the RM's "granted containers" lines over the fill:
	// how long its cycles took to build the scheduler's view, and to
	// decide and check the plan.
	cycleLog cycleTimes
	// core is the scheduler core's decisions/s in memory (coreBench's
	// median), 0 if not measured.
	core float64
	// latencies are the steady phase's heartbeats' round trips.
	latencies []time.Duration
	// callRate is the heartbeats per second the AMs made while steady
	// (a probe's polling calls not counted).
	callRate float64
	// askToGrant on a heartbeating AM, and polled every 10 ms.
	askToGrant, askToGrantPolled []time.Duration
	// rssMax is the largest VmRSS sampled, rssSteady the largest while
	// steady.
	rssMax, rssSteady int64
	// rssParts is the resident set's make-up at the end.
	rssParts string
	// cpu is the cores weft-rm used while steady.
	cpu float64
	// reached says where a revision stopped, if it did.
	reached string
}

// measure runs one weft-rm binary through the load.
func measure(ctx context.Context, o options, kube *kubeAPI, bin, dir, label string) (*result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig, err := kube.kubeconfig(dir)
	if err != nil {
		return nil, err
	}
	queuesFile, names, err := writeQueues(dir, o.queues)
	if err != nil {
		return nil, err
	}
	addrs, err := e2e.FreeAddrs(3)
	if err != nil {
		return nil, err
	}
	rm := &e2e.RM{Bin: bin, DataDir: filepath.Join(dir, "data"), ClientAddr: addrs[0], SchedulerAddr: addrs[1], WebAddr: addrs[2],
		Args: []string{"--kubeconfig", kubeconfig, "--local-node=false", "--profile", "plain", "--queues", queuesFile,
			"--cluster-id", "bench", "--namespace", "weft-jobs",
			// The AMs hold containers they never start: not expired within the run.
			"--container-allocation-expiry", "1h", "--am-expiry", "1h"}}
	if o.profiles != "" {
		rm.Args = append(rm.Args, "--profiling")
	}
	rm.Args = append(rm.Args, o.rmArgs...)
	if err := rm.Start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		rm.Stop()
		if o.logs != "" {
			os.MkdirAll(o.logs, 0o755)
			os.WriteFile(filepath.Join(o.logs, "weft-rm-"+filepath.Base(dir)+".log"), []byte(rm.Logs()), 0o644)
		}
	}()
	res := &result{label: label}
	rss := startRSS(rm.PID())
	defer rss.stop()

	t0 := time.Now()
	if err := waitNodes(ctx, rm.WebAddr, o.nodes, o.phaseTimeout); err != nil {
		return nil, err
	}
	fmt.Printf("   %d nodes synced %.1fs after start\n", o.nodes, time.Since(t0).Seconds())

	// Setup: submit and register every AM.
	t0 = time.Now()
	ams := make([]*am, o.apps)
	defer func() {
		for _, a := range ams {
			if a != nil {
				a.close()
			}
		}
	}()
	err = parallel(ctx, o.apps, 16, func(ctx context.Context, worker *ipc.Client, i int) error {
		app, token, err := submitUnmanaged(ctx, worker, fmt.Sprintf("scale-%04d", i), names[i%len(names)])
		if err != nil {
			return err
		}
		ams[i], err = registerAM(ctx, rm.SchedulerAddr, app, token)
		return err
	}, rm.ClientAddr)
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	res.setup = time.Since(t0)
	fmt.Printf("   %d AMs submitted and registered in %.1fs\n", o.apps, res.setup.Seconds())

	// Fill: each AM asks for its containers and heartbeats until it holds them.
	before, err := scrape(rm.WebAddr)
	if err != nil {
		return nil, err
	}
	logFrom := len(rm.Logs())
	t0 = time.Now()
	fillCtx, cancel := context.WithTimeout(ctx, o.phaseTimeout)
	var granted atomic.Int64
	go progress(fillCtx, &granted, o.apps*o.containers)
	// fillProfiled is closed when the fill's CPU profile is saved: the
	// steady phase's waits for it (one CPU profile at a time).
	fillProfiled := make(chan struct{})
	if o.profiles != "" {
		// The fill's first ten seconds: the cycles that grant nearly
		// every container.
		go func() {
			defer close(fillProfiled)
			err := e2e.SaveProfile(ctx, rm.WebAddr, "profile?seconds=10", filepath.Join(o.profiles, "cpu-fill.pb.gz"))
			if err != nil {
				fmt.Println("   CPU profile of the fill:", err)
			}
		}()
	} else {
		close(fillProfiled)
	}
	err = eachAM(fillCtx, ams, func(ctx context.Context, a *am) error {
		asks := ask(int32(o.containers))
		for len(a.held) < o.containers {
			n, _, err := a.allocate(ctx, asks, nil)
			if err != nil {
				return err
			}
			granted.Add(int64(n))
			asks = nil
			if len(a.held) < o.containers {
				if err := sleep(ctx, o.heartbeat); err != nil {
					return err
				}
			}
		}
		return nil
	})
	cancel()
	for _, a := range ams {
		res.held += len(a.held)
	}
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("fill: %w", err)
		}
		res.reached = fmt.Sprintf("held %d of %d containers after %s", res.held, o.apps*o.containers, o.phaseTimeout)
		fmt.Printf("   NOT carried: %s\n", res.reached)
		res.rssMax = rss.max()
		return res, nil
	}
	res.fill = time.Since(t0)
	after, err := scrape(rm.WebAddr)
	if err != nil {
		return nil, err
	}
	res.granted = after.granted - before.granted
	res.decisionTime = time.Duration((after.decisionSum - before.decisionSum) * float64(time.Second))
	res.cycles = after.decisionCount - before.decisionCount
	res.cycleLog = parseCycles(rm.Logs()[logFrom:])
	if res.allocated, err = usedContainers(ctx, rm.ClientAddr); err != nil {
		return nil, err
	}
	fmt.Printf("   %d containers granted in %.1fs (%.0f granted over %.0f cycles: %.2fs to a plan, of which %.2fs building the view, %.2fs deciding); its applications' reports count %d\n",
		res.held, res.fill.Seconds(), res.granted, res.cycles, res.decisionTime.Seconds(), res.cycleLog.build.Seconds(), res.cycleLog.decide.Seconds(), res.allocated)
	if res.held != o.apps*o.containers || res.allocated != res.held {
		return nil, fmt.Errorf("the AMs hold %d containers and the RM counts %d, want %d", res.held, res.allocated, o.apps*o.containers)
	}

	if o.profiles != "" {
		// ?gc=1: the live heap, not garbage awaiting collection.
		if err := e2e.SaveProfile(ctx, rm.WebAddr, "heap?gc=1", filepath.Join(o.profiles, "heap-after-fill.pb.gz")); err != nil {
			return nil, err
		}
		<-fillProfiled
		go func() {
			secs := int(o.steady.Seconds() * 0.9)
			err := e2e.SaveProfile(ctx, rm.WebAddr, fmt.Sprintf("profile?seconds=%d", secs), filepath.Join(o.profiles, "cpu-steady.pb.gz"))
			if err != nil {
				fmt.Println("   CPU profile:", err)
			}
		}()
	}

	// Steady: every AM heartbeats; one probes ask→grant now and then.
	rss.mark()
	cpu0, err := e2e.ProcessCPU(rm.PID())
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	if err := steady(ctx, o, ams, res); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// What the AMs measured until then is still printed.
		res.reached = fmt.Sprintf("the heartbeats failed: %v", err)
		fmt.Printf("   NOT carried: %s\n", res.reached)
	}
	took := time.Since(t0)
	cpu1, err := e2e.ProcessCPU(rm.PID())
	if err != nil {
		return nil, err
	}
	res.cpu = (cpu1 - cpu0).Seconds() / took.Seconds()
	res.rssMax, res.rssSteady = rss.max(), rss.maxSinceMark()
	if o.profiles != "" {
		// Against heap-after-fill (pprof -base), what the steady phase
		// allocated and what it left live.
		if err := e2e.SaveProfile(ctx, rm.WebAddr, "heap?gc=1", filepath.Join(o.profiles, "heap-steady.pb.gz")); err != nil {
			return nil, err
		}
	}
	res.rssParts = rssParts(rm.PID())
	fmt.Printf("   steady %.0fs: %d heartbeats (%.0f/s), p50 %s p99 %s; ask→grant p50 %s (polled %s); RSS max %.0f MiB (at the end: %s); %.2f cores\n",
		took.Seconds(), len(res.latencies), res.callRate, ms(percentile(res.latencies, 50)), ms(percentile(res.latencies, 99)),
		ms(percentile(res.askToGrant, 50)), ms(percentile(res.askToGrantPolled, 50)), mib(res.rssSteady), res.rssParts, res.cpu)
	return res, nil
}

// progress prints how many containers are granted every 15 s until ctx
// ends, so that a long fill shows it is moving.
func progress(ctx context.Context, granted *atomic.Int64, want int) {
	start := time.Now()
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fmt.Printf("   … %d of %d containers granted after %.0fs\n", granted.Load(), want, time.Since(start).Seconds())
		}
	}
}

// steady runs the heartbeat phase, recording into res.
func steady(ctx context.Context, o options, ams []*am, res *result) error {
	ctx, cancel := context.WithTimeout(ctx, o.steady)
	defer cancel()
	// A probe is a mode sent to one AM: ask on the next heartbeat, then
	// heartbeat (false) or poll every 10 ms (true) until granted. One
	// polling AM at a time, so that polling adds at most 100 calls/s to
	// the heartbeats' load.
	probes := make([]chan bool, len(ams))
	for i := range probes {
		probes[i] = make(chan bool, 1)
	}
	var polling atomic.Bool
	go func() {
		t := time.NewTicker(o.probe)
		defer t.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			poll := n%2 == 1
			if poll && !polling.CompareAndSwap(false, true) {
				continue
			}
			// Spread over the AMs.
			select {
			case probes[(n*7919)%len(ams)] <- poll:
			default:
				if poll {
					polling.Store(false)
				}
			}
		}
	}()
	var mu sync.Mutex
	var heartbeats atomic.Int64
	start := time.Now()
	err := eachAM(ctx, ams, func(ctx context.Context, a *am) error {
		i := indexOf(ams, a)
		// Heartbeats spread over the interval, as AMs started at random
		// times are.
		if err := sleep(ctx, time.Duration(int64(o.heartbeat)*int64(i)/int64(len(ams)))); err != nil {
			return nil
		}
		var lat, grants, polled []time.Duration
		defer func() {
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			res.askToGrant = append(res.askToGrant, grants...)
			res.askToGrantPolled = append(res.askToGrantPolled, polled...)
			mu.Unlock()
		}()
		// heartbeat is one allocate in the AM's rhythm, its latency a
		// sample; the polling calls of a probe are not samples.
		heartbeat := func(asks []*yarnpb.ResourceRequestProto, release []*yarnpb.ContainerIdProto, sample bool) (int, error) {
			n, took, err := a.allocate(ctx, asks, release)
			if err == nil && sample {
				lat = append(lat, took)
				heartbeats.Add(1)
			}
			return n, err
		}
		for {
			var asks []*yarnpb.ResourceRequestProto
			poll := false
			select {
			case poll = <-probes[i]:
				asks = ask(1)
			default:
			}
			asked := time.Now()
			n, err := heartbeat(asks, nil, true)
			for err == nil && asks != nil && n == 0 {
				wait := o.heartbeat
				if poll {
					wait = 10 * time.Millisecond
				}
				if sleep(ctx, wait) != nil {
					return nil // the phase ended before the grant
				}
				n, err = heartbeat(nil, nil, !poll)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if asks != nil {
				if poll {
					polled = append(polled, time.Since(asked))
					polling.Store(false)
				} else {
					grants = append(grants, time.Since(asked))
				}
				// Give the probe's container back on the next heartbeat:
				// the AM holds what it held.
				last := a.held[len(a.held)-n:]
				a.held = a.held[:len(a.held)-n]
				if sleep(ctx, o.heartbeat) != nil {
					return nil
				}
				if _, err := heartbeat(nil, last, true); err != nil {
					return nil
				}
			}
			if sleep(ctx, o.heartbeat) != nil {
				return nil
			}
		}
	})
	if err != nil {
		return err
	}
	took := time.Since(start)
	if took < o.steady/2 {
		return fmt.Errorf("the AMs stopped after %s", took)
	}
	res.callRate = float64(heartbeats.Load()) / took.Seconds()
	return nil
}

func indexOf(ams []*am, a *am) int {
	for i, x := range ams {
		if x == a {
			return i
		}
	}
	return -1
}

// writeQueues writes a tree of n leaves under root with equal shares
// (the weft-rm --queues file) and returns the file and the leaves' names.
func writeQueues(dir string, n int) (string, []string, error) {
	type queue struct {
		Path      string  `json:"path"`
		Capacity  float32 `json:"capacity"`
		SubmitACL string  `json:"submitACL,omitempty"`
		AdminACL  string  `json:"adminACL,omitempty"`
	}
	qs := []queue{{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"}}
	var names []string
	for i := range n {
		name := fmt.Sprintf("q%02d", i)
		names = append(names, name)
		// Shares in hundredths that add up to 100.
		share := float32(10000/n) / 100
		if i == n-1 {
			share = 100 - share*float32(n-1)
		}
		qs = append(qs, queue{Path: "root." + name, Capacity: share})
	}
	b, err := json.Marshal(qs)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "queues.json")
	return path, names, os.WriteFile(path, b, 0o644)
}

// waitNodes waits until the RM counts n active nodes.
func waitNodes(ctx context.Context, web string, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var m struct {
			ClusterMetrics struct {
				ActiveNodes int `json:"activeNodes"`
			} `json:"clusterMetrics"`
		}
		err := e2e.GetJSON("http://"+web+"/ws/v1/cluster/metrics", &m)
		if err == nil && m.ClusterMetrics.ActiveNodes >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d nodes active after %s (%v)", m.ClusterMetrics.ActiveNodes, n, timeout, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// usedContainers is what the RM reports its applications hold: their
// reports' numUsedContainers over the client protocol, summed (the REST
// cluster metrics count containers on nodes from their pods, and none
// are started here).
func usedContainers(ctx context.Context, addr string) (int, error) {
	c, err := ipc.Dial(ctx, addr, ipc.ClientOptions{User: "bench", Protocol: clientProtocol})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	resp := &yarnpb.GetApplicationsResponseProto{}
	if err := call(ctx, c, clientProtocol, "getApplications", &yarnpb.GetApplicationsRequestProto{}, resp); err != nil {
		return 0, err
	}
	n := 0
	for _, r := range resp.GetApplications() {
		n += int(r.GetAppResource_Usage().GetNumUsedContainers())
	}
	return n, nil
}

// counters are the RM's Prometheus series the benchmark reads.
type counters struct {
	granted                    float64 // weft_containers_granted_total, every tier
	decisionSum, decisionCount float64 // weft_scheduling_decision_seconds
}

// scrape reads the counters from the RM's /metrics.
func scrape(web string) (counters, error) {
	var c counters
	resp, err := http.Get("http://" + web + "/metrics")
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		return c, fmt.Errorf("GET /metrics: %s: %s", resp.Status, body)
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, "weft_containers_granted_total"):
			c.granted += v
		case name == "weft_scheduling_decision_seconds_sum":
			c.decisionSum, found = v, found+1
		case name == "weft_scheduling_decision_seconds_count":
			c.decisionCount, found = v, found+1
		}
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if found != 2 {
		return c, fmt.Errorf("/metrics has no weft_scheduling_decision_seconds")
	}
	return c, nil
}

// cycleTimes are what the allocator's "granted containers" log lines say
// of its cycles: containers granted, time building the scheduler's view,
// time deciding (Schedule and ApplyPlan, the checked plan).
type cycleTimes struct {
	count         int
	build, decide time.Duration
}

// parseCycles sums the allocator's "granted containers" lines (slog's
// text format: count=N … build=D decide=D).
func parseCycles(logs string) cycleTimes {
	var t cycleTimes
	for _, line := range strings.Split(logs, "\n") {
		if !strings.Contains(line, `msg="granted containers"`) {
			continue
		}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "count":
				n, _ := strconv.Atoi(v)
				t.count += n
			case "build", "decide":
				d, err := time.ParseDuration(v)
				if err != nil {
					continue
				}
				if k == "build" {
					t.build += d
				} else {
					t.decide += d
				}
			}
		}
	}
	return t
}

// rssSampler samples a process's VmRSS every second.
type rssSampler struct {
	pid  int
	done chan struct{}
	mu   sync.Mutex
	// all is the largest sample; since, the largest since mark.
	all, since int64
	err        error
}

func startRSS(pid int) *rssSampler {
	s := &rssSampler{pid: pid, done: make(chan struct{})}
	s.sample()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *rssSampler) sample() {
	rss, err := e2e.ProcessRSS(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return
	}
	s.all, s.since = max(s.all, rss), max(s.since, rss)
}

// mark starts the "since" maximum afresh.
func (s *rssSampler) mark() {
	s.mu.Lock()
	s.since = 0
	s.mu.Unlock()
	s.sample()
}

func (s *rssSampler) max() int64 {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all
}

func (s *rssSampler) maxSinceMark() int64 {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.since
}

func (s *rssSampler) stop() { close(s.done) }

// parallel runs fn for 0..n-1 on width workers, each with its own client
// protocol connection to addr, and returns the first error.
func parallel(ctx context.Context, n, width int, fn func(context.Context, *ipc.Client, int) error, addr string) error {
	var next atomic.Int64
	errs := make(chan error, width)
	for range width {
		go func() {
			c, err := ipc.Dial(ctx, addr, ipc.ClientOptions{User: "bench", Protocol: clientProtocol})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					errs <- nil
					return
				}
				if err := fn(ctx, c, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range width {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// eachAM runs fn for every AM at once and returns the first error.
func eachAM(ctx context.Context, ams []*am, fn func(context.Context, *am) error) error {
	errs := make(chan error, len(ams))
	for _, a := range ams {
		go func() { errs <- fn(ctx, a) }()
	}
	var first error
	for range ams {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// percentile is the nearest-rank p-th percentile of ds (0 when empty).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// rssParts reads what a process's resident set is made of now: anonymous
// memory (the Go heap, stacks) and mapped files (bbolt maps its database
// file) — /proc/<pid>/status's RssAnon, RssFile and RssShmem lines.
func rssParts(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "Rss") {
			parts = append(parts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(parts, ", ")
}
