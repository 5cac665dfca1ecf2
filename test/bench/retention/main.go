// Command retention measures weft-rm's resident memory while applications
// are submitted and completed over time, under the default retention
// (yarn.resourcemanager.max-completed-applications, 1,000): the RM keeps
// the newest completed applications and drops the older ones from memory
// and store, so its RSS should stay flat however many have passed through
// it. (Without retention, each application holds about 7.5 KB at rest,
// growing without bound.)
//
// A weft-rm binary runs embedded (its bbolt state store in a temporary
// directory, no Kubernetes, no local node: applications wait in ACCEPTED
// until killed). Clients drive the real client protocol over Hadoop IPC:
// getNewApplication, submitApplication, forceKillApplication — each
// application is completed (KILLED) right after it is accepted, the
// completion that triggers retention. The process's VmRSS is sampled from
// /proc every -sample applications; the result is the largest sample over
// the smallest once the first -warmup applications have passed (the
// retained list full, the heap at its working size), against the target
// of within 10%. The RM's own answer is checked at the end: how many
// applications it still lists, and how many it removed.
//
//	go run ./test/bench/retention [-apps 200000] [-clients 8]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/rmfacade/clientrm"
	"github.com/weft-sh/weft/test/e2e"
)

func main() {
	apps := flag.Int("apps", 200000, "applications submitted and completed")
	clients := flag.Int("clients", 8, "client connections submitting at once")
	sample := flag.Int("sample", 10000, "sample the RSS every this many completed applications")
	warmup := flag.Int("warmup", 20000, "applications completed before the samples that count")
	flag.Parse()
	if err := run(*apps, *clients, *sample, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "retention:", err)
		os.Exit(1)
	}
}

func run(apps, clients, sample, warmup int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "weft-retention-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := e2e.BuildBinaries(ctx, dir+"/bin"); err != nil {
		return err
	}
	addrs, err := e2e.FreeAddrs(2)
	if err != nil {
		return err
	}
	rm := &e2e.RM{Bin: dir + "/bin/weft-rm", DataDir: dir + "/data", ClientAddr: addrs[0], WebAddr: addrs[1],
		Args: []string{"--local-node=false", "--log-level=WARN"}}
	if err := rm.Start(ctx); err != nil {
		return err
	}
	defer rm.Stop()

	type point struct {
		apps int
		rss  int64
		at   time.Duration
	}
	var (
		done    atomic.Int64
		next    atomic.Int64
		mu      sync.Mutex
		samples []point
		first   error
	)
	start := time.Now()
	record := func(n int) {
		rss, err := e2e.ProcessRSS(rm.PID())
		mu.Lock()
		defer mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
		samples = append(samples, point{n, rss, time.Since(start)})
		fmt.Printf("%8d applications  RSS %6.1f MiB  %5.0f s\n", n, float64(rss)/(1<<20), time.Since(start).Seconds())
	}
	record(0)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := ipc.Dial(ctx, rm.ClientAddr, ipc.ClientOptions{User: "bench", Protocol: clientrm.Protocol})
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
				return
			}
			defer c.Close()
			for next.Add(1) <= int64(apps) {
				if err := submitAndKill(ctx, c); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
				if n := done.Add(1); n%int64(sample) == 0 {
					record(int(n))
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	took := time.Since(start)

	// What the RM says it holds now.
	var metrics struct {
		ClusterMetrics struct {
			AppsSubmitted int `json:"appsSubmitted"`
			AppsKilled    int `json:"appsKilled"`
		} `json:"clusterMetrics"`
	}
	if err := e2e.GetJSON("http://"+rm.WebAddr+"/ws/v1/cluster/metrics", &metrics); err != nil {
		return err
	}
	var listed struct {
		Apps struct {
			App []struct{ ID string } `json:"app"`
		} `json:"apps"`
	}
	if err := e2e.GetJSON("http://"+rm.WebAddr+"/ws/v1/cluster/apps", &listed); err != nil {
		return err
	}

	var lo, hi int64
	counted := 0
	for _, p := range samples {
		if p.apps < warmup {
			continue
		}
		if counted == 0 || p.rss < lo {
			lo = p.rss
		}
		hi = max(hi, p.rss)
		counted++
	}
	fmt.Printf("\n%d applications submitted and killed in %.0f s (%.0f/s) by %d clients; the RM lists %d now (metrics: %d submitted, %d killed)\n",
		apps, took.Seconds(), float64(apps)/took.Seconds(), clients, len(listed.Apps.App), metrics.ClusterMetrics.AppsSubmitted, metrics.ClusterMetrics.AppsKilled)
	if counted < 2 {
		return fmt.Errorf("only %d samples after the first %d applications: run more (-apps) or sample more often (-sample)", counted, warmup)
	}
	ratio := float64(hi) / float64(lo)
	verdict := "met"
	if ratio > 1.10 {
		verdict = "NOT met"
	}
	fmt.Printf("weft-rm RSS after the first %d applications: %.1f–%.1f MiB over %d samples: max/min %.3f× (target ≤ 1.10×: %s)\n",
		warmup, float64(lo)/(1<<20), float64(hi)/(1<<20), counted, ratio, verdict)
	return nil
}

// submitAndKill passes one application through the RM: a new id, a
// submission, a kill.
func submitAndKill(ctx context.Context, c *ipc.Client) error {
	call := func(method string, req, resp proto.Message) error {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := c.Call(cctx, clientrm.Protocol, method, req, resp); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		return nil
	}
	na := &yarnpb.GetNewApplicationResponseProto{}
	if err := call("getNewApplication", &yarnpb.GetNewApplicationRequestProto{}, na); err != nil {
		return err
	}
	id := na.GetApplicationId()
	if err := call("submitApplication", &yarnpb.SubmitApplicationRequestProto{ApplicationSubmissionContext: &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, ApplicationName: proto.String("retention"), Queue: proto.String("default"), ApplicationType: proto.String("MAPREDUCE"),
		Resource:        &yarnpb.ResourceProto{Memory: proto.Int64(1024), VirtualCores: proto.Int32(1)},
		AmContainerSpec: &yarnpb.ContainerLaunchContextProto{Command: []string{"sleep 1"}},
	}}, &yarnpb.SubmitApplicationResponseProto{}); err != nil {
		return err
	}
	return call("forceKillApplication", &yarnpb.KillApplicationRequestProto{ApplicationId: id}, &yarnpb.KillApplicationResponseProto{})
}
