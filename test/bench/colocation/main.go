// Command colocation measures, on this machine's kernel cgroups (v1),
// what the colocation agent's big box is worth to an online service that
// shares the node with CPU-heavy batch work.
//
// An online HTTP service (a fixed amount of SHA-256 work per request) runs
// in a cgroup of its own (cpu.shares 1024) and is driven at a fixed
// open-loop rate by the benchmark itself, which stays in the root cgroup
// of every hierarchy but cpuset, where -load-cpus binds it, in every
// phase, to the CPUs the box takes first (tree.pinLoad says why); latency
// runs from each request's scheduled send time, so a slow server is not
// hidden by a slowed-down client. Each round has these phases,
// measured the same way:
//
//   - solo: the online service alone;
//   - box: batch burners (one process per CPU, spinning) in the big box,
//     set every second by the real agent code (Meter.Measure, Peaks,
//     Decide, Box.Enforce) with DefaultConfig: CFS quota of the
//     reclaimable CPU, the least cpu.shares, the memory limit, and the
//     box bound to the whole cores its quota fills (cpuset), the rest of
//     the CPUs left to online work;
//   - box-quota: the same without the cpuset (--box-cpuset=false);
//   - box-idle: the same without the cpuset, with the configuration's
//     cpuIdle (--box-cpu-idle): the idle scheduling class instead of the
//     least weight (only where the kernel has cpu.idle in v1, ≥ 5.15);
//   - box-idle-cpuset: the default's cpuset with cpuIdle instead of the
//     least weight (a CPU running only idle-class tasks counts as idle
//     where the kernel places a waking online thread);
//   - plain: the same burners bounded by nothing but cpu.shares of 1024
//     per burner, what Burstable pods requesting that many cores get when
//     the kubelet bounds nothing (the plain profile).
//
// It prints each phase's p99 against solo (target ≤ 1.10 for the box
// phases) and how much of the CPU the online service leaves idle the batch
// work got in the box (target ≥ 50%), and, to tell where latency comes
// from, the server's own wall time of a request's work, how late the load
// generator sent, run-queue waits (schedstat), and the CPU of everything
// else on the machine. It needs root and cgroup v1; elsewhere it says why
// and exits 0. Everything it makes lives under
// weft-bench-colocation-<pid> in the cpu, cpuacct, memory and cpuset hierarchies
// and is removed at the end (a run killed outright leaves empty cgroups
// that the next run removes).
//
//	go run ./test/bench/colocation [-duration 20s] [-rate 150] [-work 2ms] [-burners N] [-peak-window 10s]
//		[-rounds 3] [-load-cpus box] [-phases solo,box,plain] (or any of solo,box,box-quota,box-idle,box-idle-cpuset,plain) [-out result.json] [-trace-dir dir] [-v]
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
)

const (
	cgroupRoot = "/sys/fs/cgroup"
	procRoot   = "/proc"
	sysRoot    = "/sys"
	// The benchmark re-executes itself as the online server or a burner.
	roleEnv   = "WEFT_BENCH_COLOCATION_ROLE"
	roundsEnv = "WEFT_BENCH_COLOCATION_SHA_ROUNDS"
	// workHeader is the server's wall time of a request's work, in ns.
	workHeader = "X-Work-Ns"
	// treePrefix names the run's cgroup subtree, followed by its pid.
	treePrefix = "weft-bench-colocation-"
	// requestTimeout bounds one request; one that takes longer counts as
	// dropped, and as an infinite latency in the percentiles.
	requestTimeout = 5 * time.Second
	// maxInFlight bounds the load generator's outstanding requests; a
	// send beyond it is dropped.
	maxInFlight = 512
	// defaultPeriod is the CFS period of the box (Box's default).
	defaultPeriod = 100 * time.Millisecond
)

// allPhases are the phases a round can have.
var allPhases = []string{"solo", "box", "box-quota", "box-idle", "box-idle-cpuset", "plain"}

// defaultPhases are the ones the targets are about; box-quota and
// box-idle explain why the box has a cpuset (docs/colocation.md).
var defaultPhases = []string{"solo", "box", "plain"}

type options struct {
	duration, warmup, work, peakWindow time.Duration
	rate                               float64
	burners, rounds                    int
	out, traceDir, loadCPUs            string
	phases                             []string
	verbose                            bool
}

func main() {
	switch role := os.Getenv(roleEnv); role {
	case "":
	case "server", "burner":
		if err := child(role); err != nil {
			fmt.Fprintf(os.Stderr, "colocation %s: %v\n", role, err)
			os.Exit(1)
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "colocation: unknown %s=%q\n", roleEnv, role)
		os.Exit(2)
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "recorded time of each phase")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "unrecorded load before each phase's recording (in the box phase the agent runs through it, so the box has settled)")
	flag.Float64Var(&o.rate, "rate", 150, "online requests per second (open loop)")
	flag.DurationVar(&o.work, "work", 2*time.Millisecond, "CPU work per online request (SHA-256 rounds calibrated to this at start)")
	flag.IntVar(&o.burners, "burners", runtime.NumCPU(), "batch burner processes")
	flag.DurationVar(&o.peakWindow, "peak-window", 10*time.Second, "the agent's PeakWindow (online usage is taken at its peak over it)")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of all phases, interleaved so that the machine's drift reaches every phase alike; p99s are taken over the requests of all rounds, the other ratios are medians over rounds")
	phases := flag.String("phases", strings.Join(defaultPhases, ","), "phases of each round, in order, of "+strings.Join(allPhases, ",")+": solo (required), box (the agent's default config), box-quota (without its cpuset), box-idle (cpuIdle, without cpuset), box-idle-cpuset (cpuIdle with the cpuset), plain")
	flag.StringVar(&o.out, "out", "", "also write the numbers as JSON to this file")
	flag.BoolVar(&o.verbose, "v", false, "print every agent reconcile")
	flag.StringVar(&o.loadCPUs, "load-cpus", "box", "CPUs the load generator (this process) runs on in every phase: \"box\", those the box takes first (its highest core, which the box fills before any other); \"all\", unpinned; or a CPU list such as 1 or 2-3")
	flag.StringVar(&o.traceDir, "trace-dir", "", "write every recorded request and agent reconcile of each phase as CSV into this directory")
	flag.Parse()
	o.phases = strings.Split(*phases, ",")
	for _, p := range o.phases {
		if !slices.Contains(allPhases, p) {
			fmt.Fprintf(os.Stderr, "colocation: unknown phase %q (phases: %s)\n", p, strings.Join(allPhases, ", "))
			os.Exit(2)
		}
	}
	if !slices.Contains(o.phases, "solo") {
		fmt.Fprintln(os.Stderr, "colocation: -phases must hold solo, the baseline")
		os.Exit(2)
	}
	if o.rate <= 0 || o.duration <= 0 || o.warmup < 0 || o.work <= 0 || o.burners < 1 || o.rounds < 1 || o.peakWindow < 0 {
		fmt.Fprintln(os.Stderr, "colocation: -rate, -duration, -work, -burners, -rounds must be positive, -warmup and -peak-window not negative")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		var skip skipError
		if errors.As(err, &skip) {
			fmt.Println("colocation: skipped:", skip.why)
			return
		}
		if errors.Is(err, context.Canceled) {
			err = errors.New("interrupted")
		}
		fmt.Fprintln(os.Stderr, "colocation:", err)
		os.Exit(1)
	}
}

// skipError is a machine this benchmark cannot run on: not an error.
type skipError struct{ why string }

func (e skipError) Error() string { return e.why }

func run(o options) (err error) {
	if os.Geteuid() != 0 {
		return skipError{"needs root, to make cgroups and move processes into them"}
	}
	cgfs, err := cgroups.Open(cgroupRoot, cgroups.Cgroupfs)
	if err != nil {
		return skipError{fmt.Sprintf("no usable cgroup filesystem at %s: %v", cgroupRoot, err)}
	}
	if cgfs.Version() != cgroups.V1 {
		return skipError{fmt.Sprintf("cgroup %s at %s; this benchmark is written for cgroup v1", cgfs.Version(), cgroupRoot)}
	}
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, 30*time.Minute)
	defer cancel()

	numCPU, err := procstat.NumCPU(sysRoot)
	if err != nil {
		return err
	}
	mem, err := procstat.Memory(procRoot)
	if err != nil {
		return err
	}
	cleanStale()
	t, err := newTree(fmt.Sprintf("%s%d", treePrefix, os.Getpid()))
	if err != nil {
		return err
	}
	defer func() {
		if rerr := t.remove(); rerr != nil && err == nil {
			err = rerr
		}
	}()
	online, batch := t.base+"/online", t.base+"/batch"
	if err := cgfs.SetCPUShares(online, 1024); err != nil {
		return err
	}
	idleSupported := true
	if err := cgfs.SetCPUIdle(batch, false); errors.Is(err, cgroups.ErrUnsupported) {
		idleSupported = false
	} else if err != nil {
		return err
	}

	if !idleSupported && (slices.Contains(o.phases, "box-idle") || slices.Contains(o.phases, "box-idle-cpuset")) {
		o.phases = slices.DeleteFunc(o.phases, func(p string) bool { return p == "box-idle" || p == "box-idle-cpuset" })
		fmt.Println("this kernel has no cpu.idle in cgroup v1: no box-idle phase")
	}
	rounds, perRound := calibrate(o.work)
	fmt.Printf("machine: %d CPUs, %d MiB; kernel %s; cpu.idle %s\n", numCPU, mem.Total>>20, kernelRelease(), map[bool]string{true: "supported", false: "NOT supported (box runs without it)"}[idleSupported])
	fmt.Printf("online work: %d SHA-256 rounds per request (%.0f ns each, ≈ %s); load %.0f req/s open loop ≈ %.2f cores\n",
		rounds, float64(perRound.Nanoseconds()), (time.Duration(rounds) * perRound).Round(10*time.Microsecond), o.rate,
		o.rate*float64(time.Duration(rounds)*perRound)/float64(time.Second))
	if load := loadAverage(); load != "" {
		fmt.Printf("load average before the run: %s (other work on the machine makes the numbers noisier)\n", load)
	}

	var kids children
	defer kids.killAll()
	server, err := kids.start("server", []string{roundsEnv + "=" + strconv.Itoa(rounds)})
	if err != nil {
		return err
	}
	if err := t.attach(server.cmd.Process.Pid, "online"); err != nil {
		return err
	}
	if err := server.goAhead(); err != nil {
		return err
	}
	url := "http://" + server.ready + "/"

	cfg := colocation.DefaultConfig()
	cfg.PeakWindow = metav1.Duration{Duration: o.peakWindow}
	if err := cfg.Validate(); err != nil {
		return err
	}
	alloc := colocation.Amount{MilliCPU: int64(numCPU) * 1000, Memory: int64(mem.Total)}
	cores, err := procstat.Topology(sysRoot)
	if err != nil {
		return err
	}
	loadCPUs, err := t.pinLoad(o.loadCPUs, cores)
	if err != nil {
		return err
	}
	b := &bench{o: o, fs: cgfs, tree: t, url: url, numCPU: numCPU, online: online, batch: batch, serverPID: server.cmd.Process.Pid, cores: cores,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: maxInFlight, DisableCompression: true}}}
	fmt.Printf("agent: DefaultConfig (CPU watermark %g%%, interval %s) with PeakWindow %s; allocatable %dm CPU, %d MiB\n",
		cfg.CPUWatermark, cfg.Interval.Duration, cfg.PeakWindow.Duration, alloc.MilliCPU, alloc.Memory>>20)
	fmt.Printf("each phase: %s warm-up, %s recorded; %d burners; load generator on CPUs %s (-load-cpus %s)\n\n", o.warmup, o.duration, o.burners, loadCPUs, o.loadCPUs)

	var all []phaseResult
	for round := 1; round <= o.rounds; round++ {
		for _, name := range o.phases {
			r, err := b.phase(ctx, &kids, round, name, cfg, alloc)
			if err != nil {
				return err
			}
			all = append(all, r)
			if round == 1 && name == "solo" && r.Completed > 0 {
				fmt.Printf("         server CPU per request: %.2f ms\n", r.OnlineCores*o.duration.Seconds()*1000/float64(r.Completed))
			}
		}
		if err := b.stopBurners(); err != nil {
			return err
		}
	}
	rep := summarize(o, numCPU, all)
	if o.out != "" {
		js, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.out, append(js, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Println("\nwrote", o.out)
	}
	return nil
}

// phase sets the node up for one phase and measures it.
func (b *bench) phase(ctx context.Context, kids *children, round int, name string, cfg colocation.Config, alloc colocation.Amount) (phaseResult, error) {
	if name == "solo" {
		if err := b.stopBurners(); err != nil {
			return phaseResult{}, err
		}
		return b.measure(ctx, round, name, nil)
	}
	// The batch job: burners in the batch cgroup, which starts each phase
	// as a plain child cgroup.
	shares := uint64(1024)
	if name == "plain" {
		// What the plain profile's Burstable pods requesting a core per
		// burner get: their weight, nothing else.
		shares = uint64(1024 * b.o.burners)
	}
	if err := resetBatch(b.fs, b.batch, shares, b.cores); err != nil {
		return phaseResult{}, err
	}
	if len(b.burners) == 0 {
		if err := b.startBurners(kids); err != nil {
			return phaseResult{}, err
		}
	}
	if name == "plain" {
		return b.measure(ctx, round, name, nil)
	}
	// box, box-idle: the agent's code reconciles the batch cgroup every
	// interval, from the warm-up on; box-idle with the configuration's
	// cpuIdle (the node plugin's --box-cpu-idle).
	cfg.CPUIdle = name == "box-idle" || name == "box-idle-cpuset"
	cfg.CPUSet = name == "box" || name == "box-idle-cpuset"
	ag := &agent{cfg: cfg, alloc: alloc, verbose: b.o.verbose,
		meter: colocation.Meter{FS: b.fs, ProcRoot: procRoot, NumCPU: b.numCPU},
		box:   colocation.Box{FS: b.fs, Cgroup: b.batch, Cores: b.cores},
		pods:  []colocation.PodCgroup{{UID: "batch", Path: b.batch}}}
	agentCtx, stopAgent := context.WithCancel(ctx)
	agentDone := make(chan struct{})
	go func() { defer close(agentDone); ag.run(agentCtx) }()
	r, err := b.measure(ctx, round, name, ag)
	stopAgent()
	<-agentDone
	return r, err
}

// bench is the running benchmark.
type bench struct {
	o             options
	fs            *cgroups.FS
	tree          *tree
	client        *http.Client
	url           string
	numCPU        int
	online, batch string
	serverPID     int
	burners       []*proc
	// cores is the machine's CPU topology, for the box-cpuset phase.
	cores []procstat.Core
}

// resetBatch makes the batch cgroup a plain one: not idle (first: the
// kernel refuses cpu.shares while cpu.idle is 1), no quota, the given
// shares, no memory limit.
func resetBatch(f *cgroups.FS, path string, shares uint64, cores []procstat.Core) error {
	if err := f.SetCPUIdle(path, false); err != nil && !errors.Is(err, cgroups.ErrUnsupported) {
		return err
	}
	var all []int
	for _, c := range cores {
		all = append(all, c...)
	}
	return errors.Join(f.SetCPUQuota(path, cgroups.Unlimited, defaultPeriod), f.SetCPUShares(path, shares), f.SetMemoryLimit(path, cgroups.Unlimited),
		f.SetCPUSetTree(path, procstat.FormatCPUList(all)))
}

func (b *bench) startBurners(kids *children) error {
	for range b.o.burners {
		p, err := kids.start("burner", nil)
		if err != nil {
			return err
		}
		b.burners = append(b.burners, p)
		if err := b.tree.attach(p.cmd.Process.Pid, "batch"); err != nil {
			return err
		}
	}
	for _, p := range b.burners {
		if err := p.goAhead(); err != nil {
			return err
		}
	}
	return nil
}

// stopBurners ends the batch job and makes its cgroup plain again.
func (b *bench) stopBurners() error {
	if len(b.burners) == 0 {
		return nil
	}
	for _, p := range b.burners {
		p.kill()
	}
	b.burners = nil
	return resetBatch(b.fs, b.batch, 1024, b.cores)
}

// snapshot is the counters at one instant.
type snapshot struct {
	at            time.Time
	online, batch time.Duration // cpuacct.usage
	nodeBusy      time.Duration // /proc/stat
	iterations    uint64        // burners' loops
	// Time the server's and the benchmark's (the load generator's)
	// threads waited on a run queue, from schedstat.
	serverWait, clientWait time.Duration
	steal                  time.Duration // /proc/stat
}

// steal is the time the hypervisor ran others while this machine's CPUs
// wanted to run (/proc/stat's eighth field, in USER_HZ ticks of 10ms);
// procstat.CPU counts it as busy without telling it apart.
func steal() time.Duration {
	b, _ := os.ReadFile(filepath.Join(procRoot, "stat"))
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	n, _ := strconv.ParseInt(f[8], 10, 64)
	return time.Duration(n) * 10 * time.Millisecond
}

// runQueueWait is the time pid's threads have waited on a run queue
// (/proc/<pid>/task/*/schedstat, second field): threads that ended are
// no longer counted, which Go's runtime seldom does.
func runQueueWait(pid int) time.Duration {
	tasks, _ := filepath.Glob(filepath.Join(procRoot, strconv.Itoa(pid), "task", "*", "schedstat"))
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				sum += time.Duration(ns)
			}
		}
	}
	return sum
}

// snapshot reads every counter, at a recording's start and end.
func (b *bench) snapshot() (snapshot, error) {
	s, err := b.cpuSnapshot()
	if err != nil {
		return s, err
	}
	s.steal = steal()
	s.serverWait, s.clientWait = runQueueWait(b.serverPID), runQueueWait(os.Getpid())
	for _, p := range b.burners {
		s.iterations += p.count.Load()
	}
	return s, nil
}

// cpuSnapshot reads only what restCores needs, for the samples taken
// every second while requests are recorded: the benchmark shares the
// CPUs with the service it measures, and reading every thread's
// schedstat each second would delay the requests due at that instant
// (about 40% of the box phase's slowest 1% would fall within 3 ms after a
// sample).
func (b *bench) cpuSnapshot() (snapshot, error) {
	s := snapshot{at: time.Now()}
	var err error
	if s.online, err = b.fs.CPUUsage(b.online); err != nil {
		return s, err
	}
	if s.batch, err = b.fs.CPUUsage(b.batch); err != nil {
		return s, err
	}
	cpu, err := procstat.CPU(procRoot)
	if err != nil {
		return s, err
	}
	s.nodeBusy = cpu.Busy
	return s, nil
}

// phaseResult is one phase of one round.
type phaseResult struct {
	Round     int    `json:"round"`
	Phase     string `json:"phase"`
	Requests  int    `json:"requests"`
	Completed int    `json:"completed"`
	Dropped   int    `json:"dropped"`
	// Latencies in milliseconds; null when beyond the request timeout
	// (dropped requests count as infinitely slow).
	P50ms  *float64 `json:"p50Ms"`
	P99ms  *float64 `json:"p99Ms"`
	P999ms *float64 `json:"p999Ms"`
	// CPU in cores over the recorded window: the online and batch
	// cgroups' cpuacct.usage, the node's busy time from /proc/stat, and
	// the rest (node − online − batch: the load generator, the system,
	// anything else running on the machine).
	OnlineCores   float64 `json:"onlineCores"`
	BatchCores    float64 `json:"batchCores"`
	NodeBusyCores float64 `json:"nodeBusyCores"`
	RestCores     float64 `json:"restCores"`
	BatchIterPerS float64 `json:"batchIterationsPerSec"`
	// Run-queue wait per recorded request, in milliseconds, of the
	// server's threads and of the load generator's (schedstat).
	ServerWaitMs float64 `json:"serverRunQueueWaitMsPerRequest"`
	ClientWaitMs float64 `json:"clientRunQueueWaitMsPerRequest"`
	// Of the completed requests: how late the load generator sent them
	// (p99), and the wall time of the server's work (p50, p99).
	LateP99ms *float64 `json:"sendLateP99Ms"`
	WorkP50ms *float64 `json:"serverWorkP50Ms"`
	WorkP99ms *float64 `json:"serverWorkP99Ms"`
	// StealCores is CPU time the hypervisor gave to others (/proc/stat).
	StealCores float64     `json:"stealCores"`
	Agent      *agentStats `json:"agent,omitempty"`
	FirstError string      `json:"firstError,omitempty"`

	// QuietP99ms is the p99 of the requests due in quiet seconds (the
	// rest of the machine used less than quietRest cores in that second
	// and the one before): the same phase without the bursts of other
	// work that share this machine.
	Seconds       int      `json:"seconds"`
	QuietSeconds  int      `json:"quietSeconds"`
	QuietRequests int      `json:"quietRequests"`
	QuietP99ms    *float64 `json:"quietP99Ms"`

	p99, quietP99 time.Duration
	// lat is every recorded request's latency, sorted (a dropped one is
	// math.MaxInt64), for the p99 over all rounds of a phase.
	lat, quietLat []time.Duration
}

// quietRest is the most CPU, in cores, everything but the online and
// batch cgroups (the load generator included) may use in a second for it
// to count as quiet.
const quietRest = 0.2

// restCores is the CPU, in cores, that everything but the online and
// batch cgroups used between two snapshots.
func restCores(a, b snapshot) float64 {
	busy := (b.nodeBusy - a.nodeBusy) - (b.online - a.online) - (b.batch - a.batch)
	return max(0, busy.Seconds()/b.at.Sub(a.at).Seconds())
}

// measure drives the online service for the warm-up and the recorded
// duration and reads the counters at the recording's start and end.
func (b *bench) measure(ctx context.Context, round int, name string, ag *agent) (phaseResult, error) {
	var before, after snapshot
	var snapErr error
	var rest []float64 // the rest of the machine's CPU, each recorded second
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	sampling := false
	mark := func(end bool) {
		s, err := b.snapshot()
		if err != nil && snapErr == nil {
			snapErr = err
		}
		if end {
			if sampling {
				close(stopSampling)
				<-sampled
			}
			after = s
			return
		}
		before, sampling = s, true
		go func() {
			defer close(sampled)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for prev := s; ; {
				select {
				case <-stopSampling:
					return
				case <-t.C:
				}
				cur, err := b.cpuSnapshot()
				if err != nil {
					return
				}
				rest = append(rest, restCores(prev, cur))
				prev = cur
			}
		}()
	}
	d := b.drive(ctx, mark)
	if err := ctx.Err(); err != nil {
		return phaseResult{}, err
	}
	if snapErr != nil {
		return phaseResult{}, snapErr
	}
	for _, p := range b.burners {
		if p.exited() {
			return phaseResult{}, fmt.Errorf("%s phase: a burner (pid %d) exited", name, p.cmd.Process.Pid)
		}
	}
	lat, late, work, dropped := d.completed()
	r := phaseResult{Round: round, Phase: name, Requests: len(lat), Dropped: dropped, Completed: len(lat) - dropped}
	if d.firstErr != nil {
		r.FirstError = d.firstErr.Error()
	}
	if b.o.traceDir != "" {
		if err := d.writeCSV(filepath.Join(b.o.traceDir, fmt.Sprintf("round%d-%s-requests.csv", round, name))); err != nil {
			return r, err
		}
		if ag != nil {
			if err := ag.writeCSV(filepath.Join(b.o.traceDir, fmt.Sprintf("round%d-%s-agent.csv", round, name)), d.start); err != nil {
				return r, err
			}
		}
	}
	ms := func(d time.Duration) *float64 {
		if d >= requestTimeout {
			return nil
		}
		v := float64(d) / float64(time.Millisecond)
		return &v
	}
	r.p99, r.lat = percentile(lat, 0.99), lat
	quietLat, quiet := d.quiet(rest, quietRest)
	r.Seconds, r.QuietSeconds = len(rest), quiet
	r.quietP99, r.quietLat = percentile(quietLat, 0.99), quietLat
	r.QuietRequests, r.QuietP99ms = len(quietLat), ms(r.quietP99)
	r.P50ms, r.P99ms, r.P999ms = ms(percentile(lat, 0.50)), ms(r.p99), ms(percentile(lat, 0.999))
	r.LateP99ms, r.WorkP50ms, r.WorkP99ms = ms(percentile(late, 0.99)), ms(percentile(work, 0.50)), ms(percentile(work, 0.99))
	secs := after.at.Sub(before.at).Seconds()
	cores := func(d time.Duration) float64 { return d.Seconds() / secs }
	r.OnlineCores = cores(after.online - before.online)
	r.BatchCores = cores(after.batch - before.batch)
	r.NodeBusyCores = cores(after.nodeBusy - before.nodeBusy)
	r.RestCores = max(0, r.NodeBusyCores-r.OnlineCores-r.BatchCores)
	r.StealCores = cores(after.steal - before.steal)
	r.BatchIterPerS = float64(after.iterations-before.iterations) / secs
	perReq := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(1, len(lat))) }
	r.ServerWaitMs, r.ClientWaitMs = perReq(after.serverWait-before.serverWait), perReq(after.clientWait-before.clientWait)
	if ag != nil {
		st, err := ag.stats(before.at, after.at)
		if err != nil {
			return r, err
		}
		r.Agent = &st
	}
	fmt.Printf("round %d  %-8s  p50 %9s  p99 %9s  p99.9 %9s  %5d done %4d dropped  online %.2f  batch %.2f  rest %.2f cores  batch %.2fM it/s\n",
		round, name, fmtMs(r.P50ms), fmtMs(r.P99ms), fmtMs(r.P999ms), r.Completed, r.Dropped,
		r.OnlineCores, r.BatchCores, r.RestCores, r.BatchIterPerS/1e6)
	quietP99 := "n/a"
	if r.QuietRequests > 0 {
		quietP99 = fmtMs(r.QuietP99ms)
	}
	fmt.Printf("         quiet seconds (rest < %.1f cores): %d of %d, p99 over their %d requests %s\n", quietRest, r.QuietSeconds, r.Seconds, r.QuietRequests, quietP99)
	fmt.Printf("         server work p50 %s p99 %s (wall); sent late p99 %s; run-queue wait per request: server %.2f ms, load generator %.2f ms; steal %.2f cores\n",
		fmtMs(r.WorkP50ms), fmtMs(r.WorkP99ms), fmtMs(r.LateP99ms), r.ServerWaitMs, r.ClientWaitMs, r.StealCores)
	if r.FirstError != "" {
		fmt.Printf("         first failed request: %s\n", r.FirstError)
	}
	if a := r.Agent; a != nil {
		fmt.Printf("         agent: %d reconciles; online measured avg %dm, its peak over the window avg %dm; box avg %dm (min %dm, max %dm), CFS quota written avg %dm; batch used %.0f%% of the quota\n",
			a.Reconciles, a.OnlineAvgMilli, a.PeakAvgMilli, a.BoxAvgMilli, a.BoxMinMilli, a.BoxMaxMilli, a.QuotaAvgMilli, 100*r.BatchCores*1000/float64(max(1, a.QuotaAvgMilli)))
		fmt.Printf("         box cgroup at the end: %s; longest reconcile %.2f ms\n", a.State, a.ReconcileMaxMs)
		if a.EnforceErrors > 0 {
			fmt.Printf("         WARNING: Box.Enforce returned an error on %d of %d reconciles (the rest of its writes still applied), first: %s\n",
				a.EnforceErrors, a.Reconciles, a.FirstEnforceError)
		}
	}
	return r, nil
}

// drive sends requests at o.rate for warm-up plus duration, open loop:
// request i is due at start + i/rate whatever happened to the earlier
// ones, and its latency runs from then. mark is called when the recorded
// window starts (false) and ends (true). It returns the latencies of the
// recorded requests.
func (b *bench) drive(ctx context.Context, mark func(end bool)) driven {
	interval := time.Duration(float64(time.Second) / b.o.rate)
	nWarm, nRec := int(b.o.warmup/interval), int(b.o.duration/interval)
	results := make([]time.Duration, nWarm+nRec)
	lateness := make([]time.Duration, nWarm+nRec)
	works := make([]time.Duration, nWarm+nRec)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		inFlight = make(chan struct{}, maxInFlight)
	)
	var firstErr error
	fail := func(i int, err error) {
		results[i] = math.MaxInt64
		mu.Lock()
		if firstErr == nil && i >= nWarm {
			firstErr = err
		}
		mu.Unlock()
	}
	start := time.Now().Add(10 * time.Millisecond)
	timer := time.NewTimer(0)
	defer timer.Stop()
	sleepUntil := func(t time.Time) {
		if d := time.Until(t); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
	}
	for i := range nWarm + nRec {
		if ctx.Err() != nil {
			break
		}
		due := start.Add(time.Duration(i) * interval)
		sleepUntil(due)
		if i == nWarm {
			mark(false)
		}
		select {
		case inFlight <- struct{}{}:
		default:
			fail(i, fmt.Errorf("%d requests in flight", maxInFlight))
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-inFlight; wg.Done() }()
			lateness[i] = time.Since(due)
			w, err := b.request(ctx, due)
			if err != nil {
				fail(i, err)
				return
			}
			results[i], works[i] = time.Since(due), w
		}()
	}
	sleepUntil(start.Add(time.Duration(nWarm+nRec) * interval))
	mark(true)
	wg.Wait()
	return driven{start: start.Add(time.Duration(nWarm) * interval), interval: interval,
		lat: results[nWarm:], late: lateness[nWarm:], work: works[nWarm:], firstErr: firstErr}
}

// request sends one request due at due and returns how long the server's
// handler took, by the server's clock (its X-Work-Ns header).
func (b *bench) request(ctx context.Context, due time.Time) (time.Duration, error) {
	ctx, cancel := context.WithDeadline(ctx, due.Add(requestTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %s", resp.Status)
	}
	ns, _ := strconv.ParseInt(resp.Header.Get(workHeader), 10, 64)
	return time.Duration(ns), nil
}

// driven is what drive measured of the recorded requests, in the order
// they were due, from start every interval: each one's latency
// (math.MaxInt64 when dropped), how late the load generator sent it, and
// the wall time of the server's work on it.
type driven struct {
	start           time.Time
	interval        time.Duration
	lat, late, work []time.Duration
	firstErr        error
}

// quiet returns the sorted latencies of the requests due in quiet
// seconds (rest[k] is the rest's CPU in second k: quiet when below limit,
// and the second before too), dropped ones included, and how many seconds
// were quiet.
func (d driven) quiet(rest []float64, limit float64) (lat []time.Duration, quietSeconds int) {
	calm := func(k int) bool { return k >= 0 && k < len(rest) && rest[k] < limit }
	for k := range rest {
		if calm(k) {
			quietSeconds++
		}
	}
	for i, l := range d.lat {
		k := int(time.Duration(i) * d.interval / time.Second)
		if calm(k) && (k == 0 || calm(k-1)) {
			lat = append(lat, l)
		}
	}
	slices.Sort(lat)
	return lat, quietSeconds
}

// completed returns the latencies, sorted, how many were dropped, and
// the sorted lateness and server work of the completed ones.
func (d driven) completed() (lat, late, work []time.Duration, dropped int) {
	lat = slices.Clone(d.lat)
	for i, l := range d.lat {
		if l == math.MaxInt64 {
			dropped++
			continue
		}
		late, work = append(late, d.late[i]), append(work, d.work[i])
	}
	slices.Sort(lat)
	slices.Sort(late)
	slices.Sort(work)
	return lat, late, work, dropped
}

// writeCSV writes one line per recorded request: when it was due (ms
// after the recording started), its latency, how late it was sent, and
// the server's work; a dropped request's latency is empty.
func (d driven) writeCSV(name string) error {
	var b strings.Builder
	b.WriteString("due_ms,latency_ms,late_ms,work_ms\n")
	ms := func(v time.Duration) string { return strconv.FormatFloat(float64(v)/1e6, 'f', 3, 64) }
	for i, l := range d.lat {
		lat := ""
		if l != math.MaxInt64 {
			lat = ms(l)
		}
		fmt.Fprintf(&b, "%s,%s,%s,%s\n", ms(time.Duration(i)*d.interval), lat, ms(d.late[i]), ms(d.work[i]))
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

// percentile is the q-quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return math.MaxInt64
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func fmtMs(v *float64) string {
	if v == nil {
		return "timeout"
	}
	return fmt.Sprintf("%.2fms", *v)
}

// agent runs the colocation agent's measuring and enforcing code on the
// batch cgroup, as the node plugin's agent does on the kubelet's
// BestEffort cgroup, without the Kubernetes parts (publishing the offer,
// eviction).
type agent struct {
	cfg     colocation.Config
	alloc   colocation.Amount
	meter   colocation.Meter
	peaks   colocation.Peaks
	box     colocation.Box
	pods    []colocation.PodCgroup
	verbose bool

	mu      sync.Mutex
	samples []agentSample
	err     error
}

type agentSample struct {
	at                            time.Time
	took                          time.Duration // the reconcile's wall time
	online, peak, batch, boxMilli int64
	quota                         time.Duration
	enforceErr                    error
}

// writeCSV writes the agent's reconciles: when (ms after start), how
// long each took, what it measured and what it set.
func (a *agent) writeCSV(name string, start time.Time) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var b strings.Builder
	b.WriteString("at_ms,took_ms,online_m,peak_m,batch_m,box_m,quota_us,error\n")
	for _, s := range a.samples {
		errText := ""
		if s.enforceErr != nil {
			errText = strconv.Quote(s.enforceErr.Error())
		}
		fmt.Fprintf(&b, "%.3f,%.3f,%d,%d,%d,%d,%d,%s\n", float64(s.at.Sub(start))/1e6, float64(s.took)/1e6,
			s.online, s.peak, s.batch, s.boxMilli, s.quota.Microseconds(), errText)
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

// agentStats is what the agent did over a recorded window.
type agentStats struct {
	Reconciles     int   `json:"reconciles"`
	OnlineAvgMilli int64 `json:"onlineAvgMilliCPU"`
	PeakAvgMilli   int64 `json:"onlinePeakAvgMilliCPU"`
	BoxAvgMilli    int64 `json:"boxAvgMilliCPU"`
	BoxMinMilli    int64 `json:"boxMinMilliCPU"`
	BoxMaxMilli    int64 `json:"boxMaxMilliCPU"`
	// ReconcileMaxMs is the longest reconcile (measure to enforce).
	ReconcileMaxMs float64 `json:"reconcileMaxMs"`
	// QuotaAvgMilli is the CFS quota written, in millicores: the box,
	// but never below the kernel's least quota of 1ms per period.
	QuotaAvgMilli     int64  `json:"quotaAvgMilliCPU"`
	EnforceErrors     int    `json:"enforceErrors"`
	FirstEnforceError string `json:"firstEnforceError,omitempty"`
	State             string `json:"cgroupState"`
}

func (a *agent) run(ctx context.Context) {
	t := time.NewTicker(a.cfg.Interval.Duration)
	defer t.Stop()
	for {
		if err := a.reconcile(time.Now()); err != nil {
			a.mu.Lock()
			a.err = err
			a.mu.Unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reconcile is Agent.Reconcile's measuring and enforcing: measure, keep
// the peak, decide, enforce. Only a failed measurement stops the agent
// (the real one goes blind); an Enforce error is recorded, as the real
// one tells it in an Event while the writes that succeeded stay.
func (a *agent) reconcile(now time.Time) error {
	u, _, ok, err := a.meter.Measure(now, a.pods)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if !ok {
		return nil
	}
	a.peaks.Observe(u, a.cfg.PeakWindow.Duration)
	d := colocation.Decide(a.cfg, now, a.alloc, &a.peaks, time.Time{})
	a.box.Idle = a.cfg.CPUIdle
	// The bench's batch work is processes in cgroups, granted no memory.
	l, err := a.box.Enforce(d.Box, 0, a.cfg.CPUSet)
	s := agentSample{at: now, took: time.Since(now), online: u.Online.MilliCPU, peak: a.peaks.Online().MilliCPU, batch: u.Batch.MilliCPU,
		boxMilli: d.Box.MilliCPU, quota: l.CPUQuota, enforceErr: err}
	if a.verbose {
		fmt.Printf("           agent %s online %4dm peak %4dm batch %4dm → box %4dm (quota %s/%s) err=%v\n",
			now.Format("15:04:05.000"), s.online, s.peak, s.batch, s.boxMilli, l.CPUQuota, l.Period, err)
	}
	a.mu.Lock()
	a.samples = append(a.samples, s)
	a.mu.Unlock()
	return nil
}

func (a *agent) stats(from, to time.Time) (agentStats, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return agentStats{}, a.err
	}
	st := agentStats{BoxMinMilli: math.MaxInt64}
	var online, peak, box, quota int64
	for _, s := range a.samples {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		st.Reconciles++
		online += s.online
		peak += s.peak
		box += s.boxMilli
		quota += int64(s.quota * 1000 / defaultPeriod)
		st.BoxMinMilli = min(st.BoxMinMilli, s.boxMilli)
		st.BoxMaxMilli = max(st.BoxMaxMilli, s.boxMilli)
		st.ReconcileMaxMs = max(st.ReconcileMaxMs, float64(s.took)/1e6)
		if s.enforceErr != nil {
			if st.EnforceErrors == 0 {
				st.FirstEnforceError = s.enforceErr.Error()
			}
			st.EnforceErrors++
		}
	}
	if st.Reconciles == 0 {
		return st, errors.New("agent: no reconcile in the recorded window")
	}
	n := int64(st.Reconciles)
	st.OnlineAvgMilli, st.PeakAvgMilli, st.BoxAvgMilli, st.QuotaAvgMilli = online/n, peak/n, box/n, quota/n
	st.State = a.cgroupState()
	return st, nil
}

// cgroupState reads back what the box's cgroup holds.
func (a *agent) cgroupState() string {
	f, path := a.box.FS, a.box.Path()
	var parts []string
	if q, p, err := f.CPUQuota(path); err == nil {
		parts = append(parts, fmt.Sprintf("cfs quota %s per %s", q, p))
	}
	if s, err := f.CPUShares(path); err == nil {
		parts = append(parts, fmt.Sprintf("cpu.shares %d", s))
	}
	// FS has no reader of cpu.idle.
	if dir, ok := hierarchyDir("cpu"); ok {
		if b, err := os.ReadFile(filepath.Join(dir, path, "cpu.idle")); err == nil {
			parts = append(parts, "cpu.idle "+strings.TrimSpace(string(b)))
		}
	}
	if m, err := f.MemoryLimit(path); err == nil {
		parts = append(parts, fmt.Sprintf("memory limit %d MiB", m>>20))
	}
	return strings.Join(parts, ", ")
}

// report is what -out writes.
type report struct {
	Options struct {
		Duration   string   `json:"duration"`
		Warmup     string   `json:"warmup"`
		Work       string   `json:"work"`
		PeakWindow string   `json:"peakWindow"`
		Rate       float64  `json:"rate"`
		Burners    int      `json:"burners"`
		Rounds     int      `json:"rounds"`
		CPUs       int      `json:"cpus"`
		Phases     []string `json:"phases"`
	} `json:"options"`
	Phases []phaseResult `json:"phases"`
	// Comparisons of each phase with batch work against solo: p99s over
	// all rounds' requests, the rest medians over rounds.
	Comparisons []comparison `json:"comparisons"`
}

// comparison is one phase against solo; numbers are null when not finite
// (a p99 timed out) or not measured.
type comparison struct {
	Phase string `json:"phase"`
	// P99OverSolo is the p99 over all rounds' requests against solo's;
	// P99OverSoloPerRound each round's (+Inf as null).
	P99OverSolo         *float64   `json:"p99OverSolo"`
	P99OverSoloPerRound []*float64 `json:"p99OverSoloPerRound"`
	// QuietP99OverSolo compares the p99s over quiet seconds.
	QuietP99OverSolo *float64 `json:"quietP99OverSolo"`
	// BatchShareOfIdle is the batch CPU over the CPU the online service
	// left idle (CPUs − the online cgroup's CPU); BatchShareOfNodeIdle
	// over what the whole rest of the node left idle (CPUs − (node busy −
	// batch)), as the agent's Meter counts online usage.
	BatchShareOfIdle     *float64 `json:"batchShareOfIdle"`
	BatchShareOfNodeIdle *float64 `json:"batchShareOfNodeIdle"`
	// BatchShareOfQuota is the batch CPU over the CFS quota the agent
	// wrote (box phases).
	BatchShareOfQuota *float64 `json:"batchShareOfQuota,omitempty"`
	// BatchWorkOverPlain is the burners' iterations against plain's.
	BatchWorkOverPlain *float64 `json:"batchWorkOverPlain,omitempty"`
	// Targets of the box phases: p99 ≤ 1.10× solo, batch ≥ 50% of idle.
	P99TargetMet        *bool `json:"p99TargetMet,omitempty"`
	BatchShareTargetMet *bool `json:"batchShareTargetMet,omitempty"`
}

func summarize(o options, numCPU int, all []phaseResult) report {
	var rep report
	rep.Options.Duration, rep.Options.Warmup, rep.Options.Work, rep.Options.PeakWindow = o.duration.String(), o.warmup.String(), o.work.String(), o.peakWindow.String()
	rep.Options.Rate, rep.Options.Burners, rep.Options.Rounds, rep.Options.CPUs, rep.Options.Phases = o.rate, o.burners, o.rounds, numCPU, o.phases
	rep.Phases = all
	byRound := map[int]map[string]phaseResult{}
	for _, r := range all {
		if byRound[r.Round] == nil {
			byRound[r.Round] = map[string]phaseResult{}
		}
		byRound[r.Round][r.Phase] = r
	}
	ratio := func(a, b time.Duration) float64 {
		if a >= requestTimeout || b >= requestTimeout {
			return math.Inf(1)
		}
		return float64(a) / float64(b)
	}
	of := ""
	if o.rounds > 1 {
		of = fmt.Sprintf(" (p99 over the requests of all %d rounds, other ratios medians of rounds)", o.rounds)
	}
	// pooled is a phase's p99 over the requests of every round: one
	// round's p99 is its 30-odd slowest requests, and moves by ±10% from
	// round to round on this machine in solo alone.
	pooled := func(phase string, quiet bool) time.Duration {
		var lat []time.Duration
		for round := 1; round <= o.rounds; round++ {
			r := byRound[round][phase]
			if quiet {
				lat = append(lat, r.quietLat...)
			} else {
				lat = append(lat, r.lat...)
			}
		}
		slices.Sort(lat)
		return percentile(lat, 0.99)
	}
	met := map[bool]string{true: "MET", false: "NOT MET"}
	what := map[string]string{"box": "the agent's default config: the whole cores the quota fills, the rest to online work",
		"box-quota": "cpuset off: quota and least CPU weight only", "box-idle": "cpuset off, cpuIdle: the idle scheduling class", "box-idle-cpuset": "cpuset and cpuIdle",
		"plain": "no box: cpu.shares of the pods' requests"}
	fmt.Printf("\nonline service at %.0f req/s, %d burners, %d CPUs%s:\n", o.rate, o.burners, numCPU, of)
	var lines, quietLines []string
	for _, name := range o.phases {
		if name == "solo" {
			continue
		}
		var perRound, shareIdle, shareNode, shareQuota, work []float64
		quietRounds := 0
		for round := 1; round <= o.rounds; round++ {
			solo, ph, plain := byRound[round]["solo"], byRound[round][name], byRound[round]["plain"]
			perRound = append(perRound, ratio(ph.p99, solo.p99))
			if ph.QuietRequests > 0 && solo.QuietRequests > 0 {
				quietRounds++
			}
			shareIdle = append(shareIdle, ph.BatchCores/(float64(numCPU)-ph.OnlineCores))
			shareNode = append(shareNode, ph.BatchCores/(float64(numCPU)-(ph.NodeBusyCores-ph.BatchCores)))
			if ph.Agent != nil && ph.Agent.QuotaAvgMilli > 0 {
				shareQuota = append(shareQuota, ph.BatchCores*1000/float64(ph.Agent.QuotaAvgMilli))
			}
			if plain.BatchIterPerS > 0 && name != "plain" {
				work = append(work, ph.BatchIterPerS/plain.BatchIterPerS)
			}
		}
		p99 := ratio(pooled(name, false), pooled("solo", false))
		quietP99 := math.NaN()
		if quietRounds > 0 {
			quietP99 = ratio(pooled(name, true), pooled("solo", true))
		}
		c := comparison{Phase: name, P99OverSolo: finite(p99), P99OverSoloPerRound: finiteAll(perRound), QuietP99OverSolo: finite(quietP99), BatchShareOfIdle: finite(median(shareIdle)),
			BatchShareOfNodeIdle: finite(median(shareNode)), BatchShareOfQuota: finite(median(shareQuota)), BatchWorkOverPlain: finite(median(work))}
		target := ""
		if name != "plain" {
			p99Met, idleMet := p99 <= 1.10, median(shareIdle) >= 0.50
			c.P99TargetMet, c.BatchShareTargetMet = &p99Met, &idleMet
			target = " (target ≤ 1.10) " + met[p99Met]
			lines = append(lines, fmt.Sprintf("  batch CPU in %s = %.0f%% of the CPU the online service leaves idle (target ≥ 50%%) %s; %.0f%% of what the whole rest of the node leaves idle; %.0f%% of the CFS quota the agent wrote",
				name, 100*median(shareIdle), met[idleMet], 100*median(shareNode), 100*median(shareQuota)))
			if len(work) > 0 {
				lines = append(lines, fmt.Sprintf("  batch work done in %s = %.0f%% of what it did in plain", name, 100*median(work)))
			}
		}
		rounds := ""
		if o.rounds > 1 {
			var each []string
			for _, v := range perRound {
				each = append(each, fmt.Sprintf("%.2f", v))
			}
			rounds = " (round by round " + strings.Join(each, ", ") + ")"
		}
		fmt.Printf("  p99 %-14s = %6.2f×%s%s  [%s]\n", name+"/solo", p99, target, rounds, what[name])
		if quietRounds > 0 {
			quietLines = append(quietLines, fmt.Sprintf("  p99 %-14s = %6.2f× over quiet seconds only", name+"/solo", quietP99))
		} else {
			quietLines = append(quietLines, fmt.Sprintf("  p99 %-14s = n/a: no quiet second in solo or %s", name+"/solo", name))
		}
		rep.Comparisons = append(rep.Comparisons, c)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	fmt.Printf("  other work on this machine, for comparison (seconds in which it used < %.1f cores, and the one before):\n", quietRest)
	for _, l := range quietLines {
		fmt.Println(l)
	}
	return rep
}

// finite is v for JSON, which has no infinities: nil when v is not
// finite.
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

func finiteAll(v []float64) []*float64 {
	out := make([]*float64, len(v))
	for i, x := range v {
		out[i] = finite(x)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// calibrate finds how many SHA-256 rounds take work on this machine: the
// least time of several trials, so that other work on the machine does
// not inflate the cost of a round.
func calibrate(work time.Duration) (rounds int, perRound time.Duration) {
	const n = 20000
	best := time.Duration(math.MaxInt64)
	for range 9 {
		start := time.Now()
		shaRounds(n)
		best = min(best, time.Since(start))
	}
	per := float64(best) / n
	return max(1, int(float64(work)/per)), time.Duration(math.Round(per))
}

func shaRounds(n int) [32]byte {
	var sum [32]byte
	for range n {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

// child is the re-executed binary: the online server or a burner. It
// prints "ready <info>", waits for a line on stdin (the parent has moved
// it into its cgroup), works, and exits when stdin closes (the parent is
// gone).
func child(role string) error {
	in := bufio.NewReader(os.Stdin)
	var ready string
	var work func() error
	switch role {
	case "server":
		rounds, err := strconv.Atoi(os.Getenv(roundsEnv))
		if err != nil || rounds < 1 {
			return fmt.Errorf("%s=%q", roundsEnv, os.Getenv(roundsEnv))
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		ready = ln.Addr().String()
		srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sum := shaRounds(rounds)
			w.Header().Set(workHeader, strconv.FormatInt(time.Since(start).Nanoseconds(), 10))
			_, _ = io.WriteString(w, hex.EncodeToString(sum[:8]))
		})}
		work = func() error { return srv.Serve(ln) }
	case "burner":
		ready = "burner"
		var count atomic.Uint64
		work = func() error {
			go func() {
				var sum [32]byte
				for {
					for range 1024 {
						sum = sha256.Sum256(sum[:])
					}
					count.Add(1024)
				}
			}()
			for {
				time.Sleep(50 * time.Millisecond)
				if _, err := fmt.Printf("%d\n", count.Load()); err != nil {
					return err // the parent is gone
				}
			}
		}
	}
	fmt.Println("ready", ready)
	if _, err := in.ReadString('\n'); err != nil {
		return nil
	}
	go func() {
		_, _ = io.Copy(io.Discard, in)
		os.Exit(0)
	}()
	return work()
}

// proc is a child process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	ready string
	count atomic.Uint64 // a burner's last reported iterations
	done  chan struct{}
}

func (p *proc) goAhead() error {
	_, err := io.WriteString(p.stdin, "go\n")
	return err
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// children are the processes the benchmark started.
type children struct{ procs []*proc }

// start re-executes this binary as role, and waits until it is ready.
func (c *children) start(role string, env []string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	// Its own process group, so that Ctrl-C reaches only the benchmark,
	// which cleans up in order; killed if the benchmark dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	c.procs = append(c.procs, p)
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ready ") {
		p.kill()
		return nil, fmt.Errorf("%s (pid %d) did not start: %q", role, cmd.Process.Pid, lines.Text())
	}
	p.ready = strings.TrimPrefix(lines.Text(), "ready ")
	go func() {
		for lines.Scan() {
			if n, err := strconv.ParseUint(lines.Text(), 10, 64); err == nil {
				p.count.Store(n)
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (c *children) killAll() {
	for _, p := range c.procs {
		p.kill()
	}
}

// tree is the run's private cgroups, with children online and batch, in
// the cpu, cpuacct and memory hierarchies. cgroups.FS reads and writes
// their files but neither makes nor removes cgroups nor moves processes,
// so tree does, in the hierarchies' directories.
type tree struct {
	base string   // relative to each hierarchy's root
	dirs []string // the hierarchies' directories, each once
}

var treeChildren = []string{"online", "batch", "load"}

// hierarchyDir is the directory of a v1 controller's hierarchy: named
// after it, or after a combination holding it ("cpu,cpuacct").
func hierarchyDir(ctl string) (string, bool) {
	entries, err := os.ReadDir(cgroupRoot)
	if err != nil {
		return "", false
	}
	var names []string
	for _, e := range entries {
		if e.Name() == ctl {
			names = append([]string{e.Name()}, names...)
		} else if slices.Contains(strings.Split(e.Name(), ","), ctl) {
			names = append(names, e.Name())
		}
	}
	for _, n := range names {
		if dir, err := filepath.EvalSymlinks(filepath.Join(cgroupRoot, n)); err == nil {
			return dir, true
		}
	}
	return "", false
}

func hierarchyDirs() ([]string, error) {
	var dirs []string
	for _, ctl := range []string{"cpu", "cpuacct", "memory", "cpuset"} {
		dir, ok := hierarchyDir(ctl)
		if !ok {
			return nil, skipError{fmt.Sprintf("no cgroup v1 %s hierarchy under %s", ctl, cgroupRoot)}
		}
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

func newTree(base string) (*tree, error) {
	dirs, err := hierarchyDirs()
	if err != nil {
		return nil, err
	}
	t := &tree{base: base}
	for _, d := range dirs {
		if err := os.Mkdir(filepath.Join(d, base), 0o755); err != nil {
			if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
				_ = t.remove()
				return nil, skipError{fmt.Sprintf("cannot make a cgroup in %s: %v", d, err)}
			}
			_ = t.remove()
			return nil, err
		}
		t.dirs = append(t.dirs, d)
		if err := inheritCPUSet(d, base); err != nil {
			_ = t.remove()
			return nil, err
		}
		for _, c := range treeChildren {
			if err := os.Mkdir(filepath.Join(d, base, c), 0o755); err != nil {
				_ = t.remove()
				return nil, err
			}
			if err := inheritCPUSet(d, filepath.Join(base, c)); err != nil {
				_ = t.remove()
				return nil, err
			}
		}
	}
	return t, nil
}

// inheritCPUSet gives a new cgroup of the v1 cpuset hierarchy its
// parent's CPUs and memory nodes: a cpuset cgroup starts with none, and
// takes no process until it has them. Other hierarchies have no such file.
func inheritCPUSet(hierarchy, path string) error {
	dir := filepath.Join(hierarchy, path)
	if _, err := os.Stat(filepath.Join(dir, "cpuset.cpus")); err != nil {
		return nil
	}
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, f), strings.TrimSpace(string(v))); err != nil {
			return err
		}
	}
	return nil
}

// attach moves pid into the tree's child cgroup in every hierarchy.
func (t *tree) attach(pid int, child string) error {
	for _, d := range t.dirs {
		if err := writeFile(filepath.Join(d, t.base, child, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("move pid %d into %s: %w", pid, filepath.Join(d, t.base, child), err)
		}
	}
	return nil
}

// pinLoad moves this process — the load generator, and the agent's code
// it runs — into the tree's "load" cgroup of the cpuset hierarchy, bound
// to the CPUs spec names (options.loadCPUs), and returns them; "all"
// leaves it where it is. Only the cpuset hierarchy: its CPU time stays
// in the root's accounts, the rest of the machine's (restCores).
//
// Why "box" by default: the online service's clients are elsewhere on a
// real node, but here the generator shares the machine, and on two CPUs
// the box's cpuset leaves online work one core that the generator would
// share with the server. On the box's core it takes its CPU from the
// batch burners instead (cpu.shares 1024 against the box's 2), and every
// phase, solo included, has it in the same place. Its own delays still
// count: latency runs from each request's scheduled send time.
func (t *tree) pinLoad(spec string, cores []procstat.Core) (string, error) {
	var cpus string
	switch spec {
	case "all":
		return "all (unpinned)", nil
	case "box":
		cpus = procstat.FormatCPUList(procstat.FilledCores(cores, 1))
	default:
		cpus = spec
	}
	dir, ok := hierarchyDir("cpuset")
	if !ok {
		return "", errors.New("-load-cpus: no cgroup v1 cpuset hierarchy")
	}
	load := filepath.Join(dir, t.base, "load")
	if err := writeFile(filepath.Join(load, "cpuset.cpus"), cpus); err != nil {
		return "", fmt.Errorf("-load-cpus %q: %w", spec, err)
	}
	if err := writeFile(filepath.Join(load, "cgroup.procs"), strconv.Itoa(os.Getpid())); err != nil {
		return "", fmt.Errorf("move the load generator into %s: %w", load, err)
	}
	return cpus, nil
}

// remove removes the tree bottom-up. Any process still in it (the
// benchmark kills its children first) is moved to the hierarchy's root
// first.
func (t *tree) remove() error {
	var errs []error
	for _, d := range t.dirs {
		errs = append(errs, removeCgroups(d, t.base))
	}
	return errors.Join(errs...)
}

func removeCgroups(hier, base string) error {
	var errs []error
	for _, c := range append(slices.Clone(treeChildren), "") {
		dir := filepath.Join(hier, base, c)
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var err error
		for try := 0; try < 50; try++ {
			if b, rerr := os.ReadFile(filepath.Join(dir, "cgroup.procs")); rerr == nil {
				for _, pid := range strings.Fields(string(b)) {
					_ = writeFile(filepath.Join(hier, "cgroup.procs"), pid)
				}
			}
			if err = os.Remove(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond) // a killed process may take a moment to leave
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}

// cleanStale removes the trees of earlier runs whose process is gone
// (killed before it could clean up); their cgroups are empty then, as
// their children died with them.
func cleanStale() {
	dirs, err := hierarchyDirs()
	if err != nil {
		return
	}
	for _, d := range dirs {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), treePrefix))
			if !e.IsDir() || !strings.HasPrefix(e.Name(), treePrefix) || err != nil || pid <= 0 {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				if err := removeCgroups(d, e.Name()); err == nil {
					fmt.Printf("removed a stale cgroup tree %s\n", filepath.Join(d, e.Name()))
				}
			}
		}
	}
}

// writeFile writes value to an existing kernel file in one write.
func writeFile(name, value string) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func kernelRelease() string {
	b, _ := os.ReadFile(filepath.Join(procRoot, "sys/kernel/osrelease"))
	return strings.TrimSpace(string(b))
}

func loadAverage() string {
	b, _ := os.ReadFile(filepath.Join(procRoot, "loadavg"))
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
