package rmconfig

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/scheduler"
)

func parse(t *testing.T, args ...string) (*Configuration, error) {
	t.Helper()
	fs := flag.NewFlagSet("weft-rm", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return Parse(fs, args)
}

func writeFile(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rm.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The defaults are valid and are the ones weft-rm's flags always had:
// YARN's ports on loopback, its timeouts and its largest container.
func TestDefaults(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	cfg, ha, err := c.Server(nil)
	if err != nil || ha != nil {
		t.Fatalf("server config: %v, HA %v", err, ha)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"the client protocol is on 8032", cfg.ClientAddr, "127.0.0.1:8032"},
		{"the AM protocol is on 8030", cfg.SchedulerAddr, "127.0.0.1:8030"},
		{"REST is on 8088", cfg.WebAddr, "127.0.0.1:8088"},
		{"a node is lost after 10 minutes", cfg.NodeExpiry, 10 * time.Minute},
		{"an AM is expired after 10 minutes", cfg.AMExpiry, 10 * time.Minute},
		{"the largest container is YARN's", cfg.RM.MaximumAllocation, records.Resource{MemoryMB: 8192, VCores: 4}},
		{"1000 completed applications are kept", *cfg.RM.MaxCompletedApplications, 1000},
		{"the node search is kube-scheduler's adaptive one", cfg.Allocator.Scheduler.PercentageOfNodesToScore, scheduler.AdaptivePercentage},
		{"containers run in the node's network", cfg.Launcher.Runtime.HostNetwork, true},
		{"the embedded mode registers this machine", cfg.LocalNode, true},
		{"nothing is launched without a kubeconfig", cfg.Kubernetes == nil, true},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// A file lays its values under the flags: what it sets is the default of
// each flag, a flag given wins, and both spellings of --config work.
func TestFileUnderFlags(t *testing.T) {
	file := writeFile(t, `apiVersion: rm.weft.io/v1alpha1
kind: RMConfiguration
clusterID: prod
nodes:
  nmPort: 9041
  expiry: 90s
kubernetes:
  containerRuntime:
    hostPaths: [/usr/lib/jvm]
scheduling:
  percentageOfNodesToScore: 50
queues:
  - {path: root, capacity: 100}
  - {path: root.etl, capacity: 100, submitACL: "*"}
`)
	for _, args := range [][]string{
		{"--config", file, "--nm-port", "9042", "--host-path", "/opt/hadoop"},
		{"-config=" + file, "-nm-port=9042", "-host-path=/opt/hadoop"},
		{"--nm-port", "9042", "--config", file, "--host-path", "/opt/hadoop"},
	} {
		c, err := parse(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		checks := []struct {
			name      string
			got, want any
		}{
			{"the file's value stands where no flag is given", c.ClusterID, "prod"},
			{"a duration reads as Go writes it", c.Nodes.Expiry.Duration, 90 * time.Second},
			{"a flag given wins over the file", c.Nodes.NMPort, int32(9042)},
			{"a repeatable flag adds to the file's list", c.Kubernetes.ContainerRuntime.HostPaths, []string{"/usr/lib/jvm", "/opt/hadoop"}},
			{"what the file leaves out keeps its default", c.Nodes.NMHTTPPort, int32(8042)},
			{"a nested default beside a field the file sets stands", c.Scheduling.BindParallelism, 256},
			{"the queue tree is read", len(c.Queues), 2},
		}
		for _, tc := range checks {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("%v: %s: got %v, want %v", args, tc.name, tc.got, tc.want)
			}
		}
	}
}

// A document that is not an RMConfiguration, or has a key no field has,
// is refused, naming what is wrong: a misspelt key ignored would leave
// its default silently in force.
func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"an unknown key", "apiVersion: rm.weft.io/v1alpha1\nkind: RMConfiguration\nnodes:\n  nmport: 9041\n", `unknown field "nodes.nmport"`},
		{"another kind", "apiVersion: rm.weft.io/v1alpha1\nkind: KubeSchedulerConfiguration\n", "want rm.weft.io/v1alpha1, RMConfiguration"},
		{"no apiVersion", "kind: RMConfiguration\n", `apiVersion ""`},
		{"a duration that is not one", "apiVersion: rm.weft.io/v1alpha1\nkind: RMConfiguration\nnodes:\n  expiry: ten minutes\n", "invalid duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if _, err := parse(t, "--config", writeFile(t, tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("through --config: got %v, want %q", err, tc.want)
			}
		})
	}
}

// What Encode writes, Decode reads back as it was.
func TestEncodeDecode(t *testing.T) {
	c, err := parse(t, "--ha-id", "rm1", "--state-namespace", "weft-system", "--kubeconfig", "in-cluster", "--gc-percent", "80",
		"--host-path", "/usr/lib/jvm", "--strict-cpu", "--nm-expiry", "-1s")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, back) {
		t.Errorf("read back otherwise:\n%s", doc)
	}
}

// Validate names every wrong field by its path in the document, all at
// once.
func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(c *Configuration)
		want  string
	}{
		{"an address without a port", func(c *Configuration) { c.Addresses.Client = "127.0.0.1" }, "addresses.client"},
		{"a port beyond 65535", func(c *Configuration) { c.Addresses.Webapp = "127.0.0.1:80880" }, "addresses.webapp"},
		{"a cluster id that cannot label a pod", func(c *Configuration) { c.ClusterID = "prod/east" }, "clusterID"},
		{"no data dir and no state namespace", func(c *Configuration) { c.State.DataDir = "" }, "state.dataDir"},
		{"a state namespace without a cluster", func(c *Configuration) { c.State.Namespace = "weft-system" }, "state.namespace: needs kubernetes.kubeconfig"},
		{"an unknown profile", func(c *Configuration) { c.Kubernetes.Profile = "volcano" }, "kubernetes.profile"},
		{"a namespace that is not a name", func(c *Configuration) { c.Kubernetes.Namespace = "Weft_Jobs" }, "kubernetes.namespace"},
		{"no queries to the API server", func(c *Configuration) { c.Kubernetes.QPS = 0 }, "kubernetes.qps"},
		{"a vcore of no CPU", func(c *Configuration) { c.Kubernetes.MilliCPUPerVCore = 0 }, "kubernetes.milliCPUPerVCore"},
		{"an NM port of 0", func(c *Configuration) { c.Nodes.NMPort = 0 }, "nodes.nmPort"},
		{"a negative cooldown", func(c *Configuration) { c.Nodes.Cooldown.Duration = -time.Second }, "nodes.cooldown"},
		{"a largest container of nothing", func(c *Configuration) { c.Applications.MaximumAllocationMB = 0 }, "applications.maximumAllocationMB"},
		{"a negative number of completed applications", func(c *Configuration) { c.Applications.MaxCompleted = -1 }, "applications.maxCompletedApplications"},
		{"a percentage over 100", func(c *Configuration) { c.Scheduling.PercentageOfNodesToScore = 101 }, "scheduling.percentageOfNodesToScore"},
		{"no bindings in flight", func(c *Configuration) { c.Scheduling.BindParallelism = 0 }, "scheduling.bindParallelism"},
		{"HA without shared state", func(c *Configuration) { c.HA.ID = "rm1" }, "ha.id: needs state.namespace"},
		{"a lease renewed no sooner than it lapses", func(c *Configuration) {
			c.Kubernetes.Kubeconfig, c.State.Namespace, c.HA.ID = "in-cluster", "weft-system", "rm1"
			c.HA.RenewDeadline = c.HA.LeaseDuration
		}, "ha.leaseDuration"},
		{"a log level slog has not", func(c *Configuration) { c.LogLevel = "VERBOSE" }, "logLevel"},
		{"a queue tree that is no tree", func(c *Configuration) {
			c.Queues = []quota.QueueConfig{{Path: "root.a", Capacity: 100}}
		}, "queues"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.spoil(c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	c := Default()
	c.Nodes.NMPort, c.LogLevel = 0, "VERBOSE"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "nodes.nmPort") || !strings.Contains(err.Error(), "logLevel") {
		t.Errorf("two wrong fields, not both named: %v", err)
	}
}

// The example in the operating guide is a document weft-rm takes.
func TestOperatingGuideExample(t *testing.T) {
	guide, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(guide), "```yaml\napiVersion: "+APIVersion)
	doc, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/operating.md has no RMConfiguration example")
	}
	c, err := Decode([]byte("apiVersion: " + APIVersion + doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
