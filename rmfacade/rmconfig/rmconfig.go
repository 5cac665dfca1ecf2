// Package rmconfig is weft-rm's configuration: one typed, versioned
// document (kind RMConfiguration) with documented defaults and
// validation, read from a file as kube-scheduler reads its
// KubeSchedulerConfiguration, and the command-line flags that fill the
// same fields. Defaults come first, then the file, then the flags given.
package rmconfig

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/translator"
)

// APIVersion and Kind name the document.
const (
	APIVersion = "rm.weft.io/v1alpha1"
	Kind       = "RMConfiguration"
)

// Configuration is weft-rm's configuration. Each field's flag is named
// beside it; the YARN property it stands for, where there is one, in its
// comment.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// ClusterID names this RM on its pods (yarn.resourcemanager.cluster-id;
	// --cluster-id, default weft). RMs sharing a namespace need different
	// ones.
	ClusterID string `json:"clusterID"`
	// Addresses are the RM's listeners.
	Addresses Addresses `json:"addresses"`
	// State is where the RM keeps what it acknowledged.
	State State `json:"state"`
	// Kubernetes is the cluster AMs and containers run on.
	Kubernetes Kubernetes `json:"kubernetes"`
	// Nodes are how the RM reads and judges its nodes.
	Nodes Nodes `json:"nodes"`
	// Applications are the application lifecycle's limits and timeouts.
	Applications Applications `json:"applications"`
	// Scheduling tunes the scheduler.
	Scheduling Scheduling `json:"scheduling"`
	// Queues is the queue tree; empty: the cluster's Queue objects (with
	// Kubernetes), else root.default. --queues names a JSON file of it.
	Queues []quota.QueueConfig `json:"queues,omitempty"`
	// HA runs several replicas, one active by a Lease.
	HA HA `json:"ha"`
	// Memory tunes the Go runtime's collector and limit.
	Memory Memory `json:"memory"`
	// Profiling serves Go's profiles under /debug/pprof/ on the web
	// address (--profiling, default false).
	Profiling bool `json:"profiling"`
	// LogLevel is DEBUG, INFO, WARN or ERROR (--log-level, default INFO).
	LogLevel string `json:"logLevel"`
}

// Addresses are the RM's listeners, on loopback by default.
type Addresses struct {
	// Client serves ApplicationClientProtocol (yarn.resourcemanager.address;
	// --client-address, default 127.0.0.1:8032).
	Client string `json:"client"`
	// Scheduler serves ApplicationMasterProtocol
	// (yarn.resourcemanager.scheduler.address; --scheduler-address,
	// default 127.0.0.1:8030).
	Scheduler string `json:"scheduler"`
	// Webapp serves REST and the web UI (yarn.resourcemanager.webapp.address;
	// --webapp-address, default 127.0.0.1:8088).
	Webapp string `json:"webapp"`
}

// State is where the RM keeps its records and master keys.
type State struct {
	// DataDir holds the embedded store (--data-dir, default .weft/data).
	DataDir string `json:"dataDir"`
	// Namespace, with Kubernetes, keeps them in Secrets there instead:
	// they outlive the node, and HA needs it (--state-namespace).
	Namespace string `json:"namespace,omitempty"`
	// NMKeySecret ("namespace/name") holds the master key of container
	// tokens and NMTokens, created when missing (--nm-key-secret).
	NMKeySecret string `json:"nmKeySecret,omitempty"`
	// NMKeyFile holds that key in a file instead (--nm-key-file; default:
	// a key in DataDir).
	NMKeyFile string `json:"nmKeyFile,omitempty"`
}

// Kubernetes is the cluster AMs and containers run on.
type Kubernetes struct {
	// Kubeconfig is the cluster's kubeconfig; "in-cluster" for the pod's
	// service account; empty: launch nothing, the embedded mode
	// (--kubeconfig).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// QPS and Burst bound the queries to the API server, as
	// kube-scheduler's clientConnection (--kube-api-qps 50,
	// --kube-api-burst 100).
	QPS   float32 `json:"qps"`
	Burst int     `json:"burst"`
	// Namespace holds the pods of YARN applications (--namespace,
	// default weft-jobs).
	Namespace string `json:"namespace"`
	// SchedulerName is Weft's scheduler: AM pods name it, and it binds
	// every pod that does (--scheduler-name, default weft-scheduler).
	SchedulerName string `json:"schedulerName"`
	// Profile is the colocation profile of reclaimed resources: weft,
	// katalyst, koordinator or plain (--profile, default weft).
	Profile string `json:"profile"`
	// MilliCPUPerVCore is the CPU of one YARN vcore
	// (--milli-cpu-per-vcore, default 1000).
	MilliCPUPerVCore int64 `json:"milliCPUPerVCore"`
	// StrictCPU caps each container's CPU at its vcores, as YARN's cgroups
	// strict-resource-usage (--strict-cpu, default false: a share).
	StrictCPU bool `json:"strictCPU"`
	// ContainerRuntime is what container pods run with (the
	// --container-image, --java-home, … flags).
	ContainerRuntime translator.Runtime `json:"containerRuntime"`
}

// Nodes are how the RM reads and judges its nodes.
type Nodes struct {
	// NMPort and NMHTTPPort are the node plugin's NodeManager and HTTP
	// ports (--nm-port 8041, --nm-http-port 8042).
	NMPort     int32 `json:"nmPort"`
	NMHTTPPort int32 `json:"nmHTTPPort"`
	// Expiry: a node not Ready this long is LOST and its containers end
	// (yarn.nm.liveness-monitor.expiry-interval-ms; --nm-expiry, default
	// 10m; negative: never).
	Expiry metav1.Duration `json:"expiry"`
	// Cooldown keeps new containers off a node this long after the online
	// load grew into Weft's capacity there (--node-cooldown, default 5m;
	// 0: never).
	Cooldown metav1.Duration `json:"cooldown"`
	// CapacityStaleAfter: a node agent's published capacity older than
	// this is read as none (--capacity-stale-after, default 1m).
	CapacityStaleAfter metav1.Duration `json:"capacityStaleAfter"`
	// LocalNode registers this machine as the cluster's node, in the
	// embedded mode (--local-node, default true).
	LocalNode bool `json:"localNode"`
}

// Applications are the application lifecycle's limits and timeouts.
type Applications struct {
	// AMExpiry: a registered AM silent this long fails its attempt
	// (yarn.am.liveness-monitor.expiry-interval-ms; --am-expiry, default 10m).
	AMExpiry metav1.Duration `json:"amExpiry"`
	// ContainerAllocationExpiry: a granted container never started ends
	// this long after its grant
	// (yarn.resourcemanager.rm.container-allocation.expiry-interval-ms;
	// --container-allocation-expiry, default 10m).
	ContainerAllocationExpiry metav1.Duration `json:"containerAllocationExpiry"`
	// MaximumAllocationMB and MaximumAllocationVCores bound what an AM may
	// ask for (yarn.scheduler.maximum-allocation-{mb,vcores};
	// --maximum-allocation-mb 8192, --maximum-allocation-vcores 4).
	MaximumAllocationMB     int64 `json:"maximumAllocationMB"`
	MaximumAllocationVCores int32 `json:"maximumAllocationVCores"`
	// MaxCompleted is how many completed applications are kept
	// (yarn.resourcemanager.max-completed-applications;
	// --max-completed-applications, default 1000; 0 keeps none).
	MaxCompleted int `json:"maxCompletedApplications"`
}

// Scheduling tunes the scheduler.
type Scheduling struct {
	// PreemptionGrace is the notice a preempted container's AM gets before
	// the kill (--preemption-grace, default 15s).
	PreemptionGrace metav1.Duration `json:"preemptionGrace"`
	// PercentageOfNodesToScore is the share of nodes each pod's search
	// looks at, as kube-scheduler's (--percentage-of-nodes-to-score;
	// default 0: adaptive; 100: every node).
	PercentageOfNodesToScore int `json:"percentageOfNodesToScore"`
	// BindParallelism is how many pod bindings are in flight at once
	// (--bind-parallelism, default 256).
	BindParallelism int `json:"bindParallelism"`
}

// HA runs several replicas, one active by a Lease in State.Namespace.
type HA struct {
	// ID is this replica's id (yarn.resourcemanager.ha.id; --ha-id);
	// empty: no HA.
	ID string `json:"id,omitempty"`
	// LeaseDuration, RenewDeadline and RetryPeriod time the election
	// (--ha-lease-duration 5s, --ha-renew-deadline 3s, --ha-retry-period 500ms).
	LeaseDuration metav1.Duration `json:"leaseDuration"`
	RenewDeadline metav1.Duration `json:"renewDeadline"`
	RetryPeriod   metav1.Duration `json:"retryPeriod"`
	// Pod ("namespace/name") is this replica's pod, labelled while active
	// for the Service to select (--ha-pod).
	Pod string `json:"pod,omitempty"`
}

// Memory tunes the Go runtime.
type Memory struct {
	// GCPercent is GOGC (--gc-percent, default 50; negative: never). Unset
	// in the file and on the command line, a GOGC in the environment
	// applies.
	GCPercent *int `json:"gcPercent,omitempty"`
	// HeapFloor is the heap grown to before collecting at GCPercent
	// (--gc-heap-floor, default 256Mi; 0: none).
	HeapFloor string `json:"heapFloor"`
	// Limit is the runtime's soft memory limit, a quantity or a percentage
	// of the container's (--memory-limit; empty: GOMEMLIMIT or none).
	Limit string `json:"limit,omitempty"`
}

// Default returns the configuration with every default set.
func Default() *Configuration {
	return &Configuration{
		TypeMeta:  metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ClusterID: "weft",
		Addresses: Addresses{Client: "127.0.0.1:8032", Scheduler: "127.0.0.1:8030", Webapp: "127.0.0.1:8088"},
		State:     State{DataDir: ".weft/data"},
		Kubernetes: Kubernetes{QPS: 50, Burst: 100, Namespace: "weft-jobs", SchedulerName: podbinder.DefaultSchedulerName,
			Profile: translator.Weft.Name, MilliCPUPerVCore: 1000, ContainerRuntime: translator.DefaultRuntime()},
		Nodes: Nodes{NMPort: 8041, NMHTTPPort: 8042, Expiry: minutes(10), Cooldown: minutes(5),
			CapacityStaleAfter: minutes(1), LocalNode: true},
		Applications: Applications{AMExpiry: minutes(10), ContainerAllocationExpiry: minutes(10),
			MaximumAllocationMB: 8192, MaximumAllocationVCores: 4, MaxCompleted: rm.DefaultMaxCompletedApplications},
		Scheduling: Scheduling{PreemptionGrace: metav1.Duration{Duration: 15 * time.Second}, BindParallelism: 256},
		HA: HA{LeaseDuration: metav1.Duration{Duration: 5 * time.Second}, RenewDeadline: metav1.Duration{Duration: 3 * time.Second},
			RetryPeriod: metav1.Duration{Duration: 500 * time.Millisecond}},
		Memory:   Memory{HeapFloor: "256Mi"},
		LogLevel: "INFO",
	}
}

func minutes(n int) metav1.Duration { return metav1.Duration{Duration: time.Duration(n) * time.Minute} }

// Decode reads a configuration document over the defaults. Unknown fields
// are errors, as a misspelt key silently ignored would leave its default
// in force; so are another apiVersion or kind.
func Decode(doc []byte) (*Configuration, error) {
	var meta metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, fmt.Errorf("rmconfig: %w", err)
	}
	if meta.APIVersion != APIVersion || meta.Kind != Kind {
		return nil, fmt.Errorf("rmconfig: apiVersion %q, kind %q: want %s, %s", meta.APIVersion, meta.Kind, APIVersion, Kind)
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("rmconfig: %w", err)
	}
	// Case-sensitive, as Kubernetes decodes its own configuration files:
	// encoding/json would take "nmport" for nmPort.
	c := Default()
	strict, err := kjson.UnmarshalStrict(js, c)
	if err != nil {
		return nil, fmt.Errorf("rmconfig: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("rmconfig: %w", errors.Join(strict...))
	}
	return c, nil
}

// Encode writes c as a document Decode reads back.
func Encode(c *Configuration) ([]byte, error) {
	out := *c
	out.TypeMeta = metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}
	return yaml.Marshal(&out)
}

// Validate returns every field that is wrong, each named by its path in
// the document, joined; nil when all are right.
func (c *Configuration) Validate() error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
	}
	// It is a label value on every pod the RM makes.
	if msgs := validation.IsValidLabelValue(c.ClusterID); c.ClusterID == "" || len(msgs) > 0 {
		bad("clusterID", "%q is not a label value: %s", c.ClusterID, strings.Join(append(msgs, "required")[:1], ""))
	}
	for _, a := range []struct{ path, addr string }{{"addresses.client", c.Addresses.Client},
		{"addresses.scheduler", c.Addresses.Scheduler}, {"addresses.webapp", c.Addresses.Webapp}} {
		path, addr := a.path, a.addr
		if _, port, err := net.SplitHostPort(addr); err != nil {
			bad(path, "%q is not host:port", addr)
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			bad(path, "%q: port is not within 0-65535", addr)
		}
	}
	if c.State.DataDir == "" && c.State.Namespace == "" {
		bad("state.dataDir", "required without state.namespace")
	}
	if c.State.Namespace != "" && c.Kubernetes.Kubeconfig == "" {
		bad("state.namespace", "needs kubernetes.kubeconfig")
	}
	if c.State.NMKeySecret != "" && c.Kubernetes.Kubeconfig == "" {
		bad("state.nmKeySecret", "needs kubernetes.kubeconfig")
	}
	if c.Kubernetes.QPS <= 0 || c.Kubernetes.Burst <= 0 {
		bad("kubernetes.qps", "qps and burst must be positive (%g, %d)", c.Kubernetes.QPS, c.Kubernetes.Burst)
	}
	if msgs := validation.IsDNS1123Label(c.Kubernetes.Namespace); len(msgs) > 0 {
		bad("kubernetes.namespace", "%q: %s", c.Kubernetes.Namespace, msgs[0])
	}
	if _, err := translator.ProfileByName(c.Kubernetes.Profile); err != nil {
		bad("kubernetes.profile", "%q is not weft, katalyst, koordinator or plain", c.Kubernetes.Profile)
	}
	if c.Kubernetes.MilliCPUPerVCore <= 0 {
		bad("kubernetes.milliCPUPerVCore", "must be positive (%d)", c.Kubernetes.MilliCPUPerVCore)
	}
	for _, p := range []struct {
		path string
		port int32
	}{{"nodes.nmPort", c.Nodes.NMPort}, {"nodes.nmHTTPPort", c.Nodes.NMHTTPPort}} {
		path, port := p.path, p.port
		if port < 1 || port > 65535 {
			bad(path, "%d is not within 1-65535", port)
		}
	}
	for _, d := range []struct {
		path string
		d    metav1.Duration
	}{{"nodes.cooldown", c.Nodes.Cooldown}, {"nodes.capacityStaleAfter", c.Nodes.CapacityStaleAfter},
		{"applications.amExpiry", c.Applications.AMExpiry}, {"applications.containerAllocationExpiry", c.Applications.ContainerAllocationExpiry},
		{"scheduling.preemptionGrace", c.Scheduling.PreemptionGrace}} {
		if d.d.Duration < 0 {
			bad(d.path, "must not be negative (%s)", d.d.Duration)
		}
	}
	if c.Applications.MaximumAllocationMB <= 0 || c.Applications.MaximumAllocationVCores <= 0 {
		bad("applications.maximumAllocationMB", "the maximum allocation must be positive (%d MB, %d vcores)",
			c.Applications.MaximumAllocationMB, c.Applications.MaximumAllocationVCores)
	}
	if c.Applications.MaxCompleted < 0 {
		bad("applications.maxCompletedApplications", "must not be negative (%d)", c.Applications.MaxCompleted)
	}
	if p := c.Scheduling.PercentageOfNodesToScore; p < 0 || p > 100 {
		bad("scheduling.percentageOfNodesToScore", "%d is not within 0-100", p)
	}
	if c.Scheduling.BindParallelism < 1 {
		bad("scheduling.bindParallelism", "must be at least 1 (%d)", c.Scheduling.BindParallelism)
	}
	if c.HA.ID != "" {
		if c.State.Namespace == "" {
			bad("ha.id", "needs state.namespace: replicas share their state through the API server")
		}
		// client-go's leader election refuses these, later and less clearly.
		if c.HA.RetryPeriod.Duration <= 0 || c.HA.RenewDeadline.Duration <= c.HA.RetryPeriod.Duration ||
			c.HA.LeaseDuration.Duration <= c.HA.RenewDeadline.Duration {
			bad("ha.leaseDuration", "want leaseDuration > renewDeadline > retryPeriod > 0 (%s, %s, %s)",
				c.HA.LeaseDuration.Duration, c.HA.RenewDeadline.Duration, c.HA.RetryPeriod.Duration)
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		bad("logLevel", "%q is not DEBUG, INFO, WARN or ERROR", c.LogLevel)
	}
	if len(c.Queues) > 0 {
		if _, err := quota.NewTree(c.Queues); err != nil {
			bad("queues", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// Level is LogLevel's slog level (INFO when it does not parse; Validate
// says so).
func (c *Configuration) Level() slog.Level {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cmp.Or(c.LogLevel, "INFO"))); err != nil {
		return slog.LevelInfo
	}
	return level
}
