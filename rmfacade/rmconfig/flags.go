package rmconfig

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/weft-sh/weft/quota"
)

// ConfigFlag names the configuration file's flag.
const ConfigFlag = "config"

// Parse returns the configuration args ask for: the defaults, then the
// file --config names, then each flag args gives, registered on fs. It
// neither validates the result (Validate) nor acts on it.
func Parse(fs *flag.FlagSet, args []string) (*Configuration, error) {
	c := Default()
	if file := configFile(args); file != "" {
		doc, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if c, err = Decode(doc); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	fs.String(ConfigFlag, "", "file of an "+Kind+" ("+APIVersion+"), laid under the flags given (see docs/operating.md)")
	c.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return c, nil
}

// configFile finds --config's value in args before they are parsed, so
// that the file's values can be the flags' defaults: by parsing args once
// with every flag registered (on a configuration thrown away), so that a
// flag's value is never taken for the end of the flags. Errors are left
// to the real parse.
func configFile(args []string) string {
	probe := flag.NewFlagSet("", flag.ContinueOnError)
	probe.SetOutput(io.Discard)
	file := probe.String(ConfigFlag, "", "")
	Default().AddFlags(probe)
	_ = probe.Parse(args)
	return *file
}

// AddFlags registers weft-rm's flags on fs, each filling its field of c,
// with c's values as their defaults.
func (c *Configuration) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ClusterID, "cluster-id", c.ClusterID, "this RM's name on its pods (yarn.resourcemanager.cluster-id); RMs sharing a namespace need different ones")
	fs.StringVar(&c.Addresses.Client, "client-address", c.Addresses.Client, "ApplicationClientProtocol address (yarn.resourcemanager.address)")
	fs.StringVar(&c.Addresses.Scheduler, "scheduler-address", c.Addresses.Scheduler, "ApplicationMasterProtocol address (yarn.resourcemanager.scheduler.address)")
	fs.StringVar(&c.Addresses.Webapp, "webapp-address", c.Addresses.Webapp, "REST API address (yarn.resourcemanager.webapp.address)")

	fs.StringVar(&c.State.DataDir, "data-dir", c.State.DataDir, "directory of the embedded state store")
	fs.StringVar(&c.State.Namespace, "state-namespace", c.State.Namespace, "keep the state store and master keys in Secrets of this namespace (with --kubeconfig) instead of --data-dir: they outlive the node, and HA needs it")
	fs.StringVar(&c.State.NMKeySecret, "nm-key-secret", c.State.NMKeySecret, "namespace/name of the Secret with the NM master key (created when missing; with --kubeconfig)")
	fs.StringVar(&c.State.NMKeyFile, "nm-key-file", c.State.NMKeyFile, "master key of container tokens and NMTokens, shared with node plugins (default: in --data-dir)")

	k := &c.Kubernetes
	fs.StringVar(&k.Kubeconfig, "kubeconfig", k.Kubeconfig, "kubeconfig of the cluster AMs run on; \"in-cluster\" for the pod's service account; empty: launch nothing")
	fs.Func("kube-api-qps", fmt.Sprintf("queries per second to the API server (as kube-scheduler's clientConnection.qps) (default %g)", k.QPS), func(s string) error {
		v, err := strconv.ParseFloat(s, 32)
		k.QPS = float32(v)
		return err
	})
	fs.IntVar(&k.Burst, "kube-api-burst", k.Burst, "burst of queries to the API server")
	fs.StringVar(&k.Namespace, "namespace", k.Namespace, "namespace of the pods of YARN applications")
	fs.StringVar(&k.SchedulerName, "scheduler-name", k.SchedulerName, "Weft's scheduler: AM pods name it, and it binds every pod that does")
	fs.StringVar(&k.Profile, "profile", k.Profile, "colocation profile for reclaimed resources: weft (Weft's node agent), katalyst, koordinator, plain")
	fs.Int64Var(&k.MilliCPUPerVCore, "milli-cpu-per-vcore", k.MilliCPUPerVCore, "CPU of one YARN vcore, in millicores")
	fs.BoolVar(&k.StrictCPU, "strict-cpu", k.StrictCPU, "cap each container's CPU at its vcores (a CPU limit), as YARN's cgroups strict-resource-usage; by default vcores are a share")
	k.ContainerRuntime.AddFlags(fs)

	n := &c.Nodes
	int32Var(fs, &n.NMPort, "nm-port", "the node plugin's NodeManager port")
	int32Var(fs, &n.NMHTTPPort, "nm-http-port", "the node plugin's HTTP port")
	fs.DurationVar(&n.Expiry.Duration, "nm-expiry", n.Expiry.Duration,
		"a node not Ready this long is LOST and its containers end, AM attempts failing (yarn.nm.liveness-monitor.expiry-interval-ms; negative: never)")
	fs.DurationVar(&n.Cooldown.Duration, "node-cooldown", n.Cooldown.Duration, "how long a node takes no new containers after the online load grew into Weft's capacity there (0: never)")
	fs.DurationVar(&n.CapacityStaleAfter.Duration, "capacity-stale-after", n.CapacityStaleAfter.Duration, "a node agent's published capacity older than this is read as none (weft profile)")
	fs.BoolVar(&n.LocalNode, "local-node", n.LocalNode, "register this machine as the cluster's node (embedded mode)")

	a := &c.Applications
	fs.DurationVar(&a.AMExpiry.Duration, "am-expiry", a.AMExpiry.Duration, "a registered AM silent this long fails its attempt (yarn.am.liveness-monitor.expiry-interval-ms)")
	fs.DurationVar(&a.ContainerAllocationExpiry.Duration, "container-allocation-expiry", a.ContainerAllocationExpiry.Duration,
		"a container its AM was given but never started is ended this long after it was granted (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms)")
	fs.Int64Var(&a.MaximumAllocationMB, "maximum-allocation-mb", a.MaximumAllocationMB, "largest container memory an AM may ask for (yarn.scheduler.maximum-allocation-mb)")
	int32Var(fs, &a.MaximumAllocationVCores, "maximum-allocation-vcores", "largest container vcores an AM may ask for (yarn.scheduler.maximum-allocation-vcores)")
	fs.IntVar(&a.MaxCompleted, "max-completed-applications", a.MaxCompleted,
		"completed applications kept, the most recently completed; older ones are removed with their attempts and containers; 0 keeps none "+
			"(yarn.resourcemanager.max-completed-applications, and …state-store.max-completed-applications: this RM's memory is its state store)")

	s := &c.Scheduling
	fs.DurationVar(&s.PreemptionGrace.Duration, "preemption-grace", s.PreemptionGrace.Duration, "advance notice a preempted container's AM gets (PreemptionMessage) before it is killed")
	fs.IntVar(&s.PercentageOfNodesToScore, "percentage-of-nodes-to-score", s.PercentageOfNodesToScore,
		"percentage of nodes each pod's node search looks at, at least 100 (kube-scheduler's percentageOfNodesToScore); 0: kube-scheduler's adaptive default, 5% of 10,000 nodes; 100: every node")
	fs.IntVar(&s.BindParallelism, "bind-parallelism", s.BindParallelism, "pod bindings in flight at once")

	fs.Func("queues", "JSON file with the queue tree (default: root.default)", func(file string) error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var qs []quota.QueueConfig
		if err := json.Unmarshal(b, &qs); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		c.Queues = qs
		return nil
	})

	h := &c.HA
	fs.StringVar(&h.ID, "ha-id", h.ID, "this replica's id among several (yarn.resourcemanager.ha.id): enables HA, one active by a Lease (needs --state-namespace)")
	fs.DurationVar(&h.LeaseDuration.Duration, "ha-lease-duration", h.LeaseDuration.Duration, "how long a standby waits on a silent active before taking over")
	fs.DurationVar(&h.RenewDeadline.Duration, "ha-renew-deadline", h.RenewDeadline.Duration, "how long the active tries to renew its Lease before it stops writing and exits")
	fs.DurationVar(&h.RetryPeriod.Duration, "ha-retry-period", h.RetryPeriod.Duration, "how often replicas try the Lease")
	fs.StringVar(&h.Pod, "ha-pod", h.Pod, "namespace/name of this replica's pod: labelled weft.io/rm-active=true while active, for the Service to select")

	m := &c.Memory
	gcDefault := "50"
	if m.GCPercent != nil {
		gcDefault = strconv.Itoa(*m.GCPercent)
	}
	fs.Func("gc-percent", "Go's GOGC for weft-rm: collect when the heap has grown by this percentage of what is live (negative: never; the GOGC environment variable applies when neither this flag nor the file sets it) (default "+gcDefault+")", func(s string) error {
		v, err := strconv.Atoi(s)
		m.GCPercent = &v
		return err
	})
	fs.StringVar(&m.HeapFloor, "gc-heap-floor", m.HeapFloor, "while the Go heap is under this quantity, weft-rm collects when it reaches it (GOGC raised, to at most 500) instead of at --gc-percent: less CPU collecting in a small cluster; at most half of --memory-limit; 0: none")
	fs.StringVar(&m.Limit, "memory-limit", m.Limit, "soft memory limit of the Go runtime (as GOMEMLIMIT, which applies when this is empty): a quantity such as 400Mi, or a percentage such as 90% of the container's memory limit (cgroup v2 memory.max); empty: none")

	fs.BoolVar(&c.Profiling, "profiling", c.Profiling, "serve Go profiles under /debug/pprof/ on the web address (as kube-scheduler's --profiling)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: DEBUG, INFO, WARN, ERROR")
}

// int32Var registers an int32 flag filling p, with p's value as default.
func int32Var(fs *flag.FlagSet, p *int32, name, usage string) {
	fs.Func(name, fmt.Sprintf("%s (default %d)", usage, *p), func(s string) error {
		v, err := strconv.ParseInt(s, 10, 32)
		*p = int32(v)
		return err
	})
}
