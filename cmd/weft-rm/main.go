// Command weft-rm runs Weft's ResourceManager facade: YARN's client
// protocol on 8032 and REST API on 8088, over an embedded state store.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/server"
	"github.com/weft-sh/weft/scheduler"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/kubeclient"
)

func main() {
	var cfg server.Config
	var queuesFile, kubeconfig, profile string
	flag.StringVar(&cfg.ClientAddr, "client-address", "127.0.0.1:8032", "ApplicationClientProtocol address (yarn.resourcemanager.address)")
	flag.StringVar(&cfg.SchedulerAddr, "scheduler-address", "127.0.0.1:8030", "ApplicationMasterProtocol address (yarn.resourcemanager.scheduler.address)")
	flag.StringVar(&cfg.WebAddr, "webapp-address", "127.0.0.1:8088", "REST API address (yarn.resourcemanager.webapp.address)")
	flag.StringVar(&cfg.DataDir, "data-dir", ".weft/data", "directory of the embedded state store")
	flag.StringVar(&queuesFile, "queues", "", "JSON file with the queue tree (default: root.default)")
	flag.BoolVar(&cfg.LocalNode, "local-node", true, "register this machine as the cluster's node (embedded mode)")
	flag.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster AMs run on; \"in-cluster\" for the pod's service account; empty: launch nothing")
	flag.StringVar(&cfg.Launcher.ClusterID, "cluster-id", "weft", "this RM's name on its pods (yarn.resourcemanager.cluster-id); RMs sharing a namespace need different ones")
	flag.StringVar(&cfg.Launcher.Namespace, "namespace", "weft-jobs", "namespace of the pods of YARN applications")
	flag.StringVar(&profile, "profile", "weft", "colocation profile for reclaimed resources: weft (Weft's node agent), katalyst, koordinator, plain")
	flag.DurationVar(&cfg.CapacityStaleAfter, "capacity-stale-after", time.Minute, "a node agent's published capacity older than this is read as none (weft profile)")
	cfg.Launcher.Runtime.AddFlags(flag.CommandLine)
	flag.StringVar(&cfg.Launcher.SchedulerName, "scheduler-name", podbinder.DefaultSchedulerName, "Weft's scheduler: AM pods name it, and it binds every pod that does")
	kubeQPS := flag.Float64("kube-api-qps", 50, "queries per second to the API server (as kube-scheduler's clientConnection.qps)")
	kubeBurst := flag.Int("kube-api-burst", 100, "burst of queries to the API server")
	flag.DurationVar(&cfg.NodeCooldown, "node-cooldown", 5*time.Minute, "how long a node takes no new containers after the online load grew into Weft's capacity there (0: never)")
	flag.IntVar(&cfg.BindParallelism, "bind-parallelism", 256, "pod bindings in flight at once")
	flag.StringVar(&cfg.NMKeySecret, "nm-key-secret", "", "namespace/name of the Secret with the NM master key (created when missing; with --kubeconfig)")
	flag.StringVar(&cfg.NMKeyFile, "nm-key-file", "", "master key of container tokens and NMTokens, shared with node plugins (default: in --data-dir)")
	flag.DurationVar(&cfg.Allocator.PreemptionGrace, "preemption-grace", 15*time.Second, "advance notice a preempted container's AM gets (PreemptionMessage) before it is killed")
	vcoreMilli := flag.Int64("milli-cpu-per-vcore", 1000, "CPU of one YARN vcore, in millicores")
	nodesPct := flag.Int("percentage-of-nodes-to-score", 0, "percentage of nodes each pod's node search looks at, at least 100 (kube-scheduler's percentageOfNodesToScore); 0: kube-scheduler's adaptive default, 5% of 10,000 nodes; 100: every node")
	strictCPU := flag.Bool("strict-cpu", false, "cap each container's CPU at its vcores (a CPU limit), as YARN's cgroups strict-resource-usage; by default vcores are a share")
	nmPort := flag.Int("nm-port", 8041, "the node plugin's NodeManager port")
	nmHTTPPort := flag.Int("nm-http-port", 8042, "the node plugin's HTTP port")
	flag.DurationVar(&cfg.NodeExpiry, "nm-expiry", 10*time.Minute,
		"a node not Ready this long is LOST and its containers end, AM attempts failing (yarn.nm.liveness-monitor.expiry-interval-ms; negative: never)")
	flag.DurationVar(&cfg.AMExpiry, "am-expiry", 10*time.Minute, "a registered AM silent this long fails its attempt (yarn.am.liveness-monitor.expiry-interval-ms)")
	flag.DurationVar(&cfg.Launcher.ContainerAllocationExpiry, "container-allocation-expiry", 10*time.Minute,
		"a container its AM was given but never started is ended this long after it was granted (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms)")
	// 0 keeps the RM's default (YARN's: 8192 MB, 4 vcores).
	maxAllocMB := flag.Int64("maximum-allocation-mb", 0, "largest container memory an AM may ask for (yarn.scheduler.maximum-allocation-mb; 0: 8192)")
	maxAllocVCores := flag.Int("maximum-allocation-vcores", 0, "largest container vcores an AM may ask for (yarn.scheduler.maximum-allocation-vcores; 0: 4)")
	maxCompleted := flag.Int("max-completed-applications", rm.DefaultMaxCompletedApplications,
		"completed applications kept, the most recently completed; older ones are removed with their attempts and containers; 0 keeps none "+
			"(yarn.resourcemanager.max-completed-applications, and …state-store.max-completed-applications: this RM's memory is its state store)")
	flag.StringVar(&cfg.StateNamespace, "state-namespace", "", "keep the state store and master keys in Secrets of this namespace (with --kubeconfig) instead of --data-dir: they outlive the node, and HA needs it")
	var ha server.HA
	flag.StringVar(&ha.ID, "ha-id", "", "this replica's id among several (yarn.resourcemanager.ha.id): enables HA, one active by a Lease (needs --state-namespace)")
	flag.DurationVar(&ha.LeaseDuration, "ha-lease-duration", 5*time.Second, "how long a standby waits on a silent active before taking over")
	flag.DurationVar(&ha.RenewDeadline, "ha-renew-deadline", 3*time.Second, "how long the active tries to renew its Lease before it stops writing and exits")
	flag.DurationVar(&ha.RetryPeriod, "ha-retry-period", 500*time.Millisecond, "how often replicas try the Lease")
	flag.StringVar(&ha.Pod, "ha-pod", "", "namespace/name of this replica's pod: labelled weft.io/rm-active=true while active, for the Service to select")
	gcPct := flag.Int("gc-percent", defaultGCPercent, "Go's GOGC for weft-rm: collect when the heap has grown by this percentage of what is live (negative: never; the GOGC environment variable applies when this flag is not given and it is set)")
	gcFloor := flag.String("gc-heap-floor", defaultHeapFloor, "while the Go heap is under this quantity, weft-rm collects when it reaches it (GOGC raised, to at most 500) instead of at --gc-percent: less CPU collecting in a small cluster; at most half of --memory-limit; 0: none")
	memLimit := flag.String("memory-limit", "", "soft memory limit of the Go runtime (as GOMEMLIMIT, which applies when this is empty): a quantity such as 400Mi, or a percentage such as 90% of the container's memory limit (cgroup v2 memory.max); empty: none")
	var logLevel slog.Level
	flag.BoolVar(&cfg.Profiling, "profiling", false, "serve Go profiles under /debug/pprof/ on the web address (as kube-scheduler's --profiling)")
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level: DEBUG, INFO, WARN, ERROR")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	cfg.Logger = logger
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "gc-percent" })
	floor, err := heapFloor(*gcFloor)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(2)
	}
	limit, err := setMemoryLimit(*memLimit)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(2)
	} else if limit > 0 {
		logger.Info("soft memory limit set", "bytes", limit, "flag", *memLimit)
	}
	setGC(*gcPct, given, floorUnder(floor, limit))
	if queuesFile != "" {
		b, err := os.ReadFile(queuesFile)
		if err == nil {
			var qs []quota.QueueConfig
			if err = json.Unmarshal(b, &qs); err == nil {
				cfg.Queues = qs
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "weft-rm: queues %s: %v\n", queuesFile, err)
			os.Exit(2)
		}
	}
	cfg.RM.MaxCompletedApplications = maxCompleted
	if *maxAllocMB > 0 || *maxAllocVCores > 0 {
		cfg.RM.MaximumAllocation = records.Resource{MemoryMB: cmp.Or(*maxAllocMB, 8192), VCores: int32(cmp.Or(*maxAllocVCores, 4))}
	}
	if *nodesPct < 0 || *nodesPct > 100 {
		fmt.Fprintf(os.Stderr, "weft-rm: --percentage-of-nodes-to-score %d is not within 0-100\n", *nodesPct)
		os.Exit(2)
	}
	cfg.Allocator.Scheduler.PercentageOfNodesToScore = *nodesPct
	if *nodesPct == 0 {
		cfg.Allocator.Scheduler.PercentageOfNodesToScore = scheduler.AdaptivePercentage
	}
	cfg.Launcher.NMPort, cfg.Launcher.NMHTTPPort = int32(*nmPort), int32(*nmHTTPPort)
	p, err := translator.ProfileByName(profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(2)
	}
	p.MilliCPUPerVCore = *vcoreMilli
	p.StrictCPU = *strictCPU
	cfg.Launcher.Profile = p
	switch kubeconfig {
	case "":
	case "in-cluster":
		cfg.Kubernetes, err = rest.InClusterConfig()
	default:
		cfg.Kubernetes, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: kubernetes: %v\n", err)
		os.Exit(2)
	}
	if cfg.Kubernetes != nil {
		cfg.Kubernetes.QPS, cfg.Kubernetes.Burst = float32(*kubeQPS), *kubeBurst
		kubeclient.Uncompressed(cfg.Kubernetes) // as kube-scheduler's (controller-runtime's lists too)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if ha.ID != "" {
		// A replica that lost the Lease exits non-zero, to come back as a
		// standby (the kubelet restarts it).
		if err := server.RunHA(ctx, cfg, ha); err != nil {
			fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
			os.Exit(1)
		}
		return
	}
	srv, err := server.New(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(1)
	}
	if err := srv.Serve(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "weft-rm: %v\n", err)
		os.Exit(1)
	}
}
