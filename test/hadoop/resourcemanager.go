package hadoop

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"time"
)

// ResourceManagerClass is the main class `yarn resourcemanager` runs.
const ResourceManagerClass = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"

// RMDaemonAddrs are the addresses a ResourceManager daemon listens on: the
// three clients use, and the NodeManagers' (resource tracker) and the
// admin protocol's, whose defaults are fixed ports (8031, 8033) another
// process on the machine may hold.
type RMDaemonAddrs struct {
	RMAddrs
	ResourceTracker, Admin string
}

// capacitySchedulerXML holds the values of the capacity-scheduler.xml a
// Hadoop distribution ships in etc/hadoop (from
// hadoop-yarn-server-resourcemanager/conf): one queue, root.default, with
// the whole cluster. The CapacityScheduler, YARN's default scheduler,
// needs a queue tree, and a deployment that sets nothing has this one.
var capacitySchedulerXML = map[string]string{
	"yarn.scheduler.capacity.maximum-applications":                             "10000",
	"yarn.scheduler.capacity.maximum-am-resource-percent":                      "0.1",
	"yarn.scheduler.capacity.resource-calculator":                              "org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator",
	"yarn.scheduler.capacity.root.queues":                                      "default",
	"yarn.scheduler.capacity.root.default.capacity":                            "100",
	"yarn.scheduler.capacity.root.default.user-limit-factor":                   "1",
	"yarn.scheduler.capacity.root.default.maximum-capacity":                    "100",
	"yarn.scheduler.capacity.root.default.state":                               "RUNNING",
	"yarn.scheduler.capacity.root.default.acl_submit_applications":             "*",
	"yarn.scheduler.capacity.root.default.acl_administer_queue":                "*",
	"yarn.scheduler.capacity.root.default.acl_application_max_priority":        "*",
	"yarn.scheduler.capacity.node-locality-delay":                              "40",
	"yarn.scheduler.capacity.queue-mappings":                                   "",
	"yarn.scheduler.capacity.queue-mappings-override.enable":                   "false",
	"yarn.scheduler.capacity.per-node-heartbeat.maximum-offswitch-assignments": "1",
}

// WriteRMDaemonConf writes the HADOOP_CONF_DIR of a ResourceManager daemon
// with nothing changed from Hadoop's defaults but where it listens
// (127.0.0.1, the given ports) and where it keeps scratch files under
// scratch instead of /tmp (hadoop.tmp.dir, and the node-attribute store,
// which defaults to file:///tmp/hadoop-yarn-${user}/node-attribute):
// yarn-default.xml's settings otherwise, and the distribution's
// capacity-scheduler.xml. Logging is writeSites' (WARN to standard error);
// getApplicationReport logs nothing on success at any level.
func WriteRMDaemonConf(dir string, addrs RMDaemonAddrs, scratch string) error {
	yarn := map[string]string{
		"yarn.resourcemanager.hostname":                 "127.0.0.1",
		"yarn.resourcemanager.address":                  addrs.Client,
		"yarn.resourcemanager.scheduler.address":        addrs.Scheduler,
		"yarn.resourcemanager.webapp.address":           addrs.Web,
		"yarn.resourcemanager.resource-tracker.address": addrs.ResourceTracker,
		"yarn.resourcemanager.admin.address":            addrs.Admin,
		"yarn.node-attribute.fs-store.root-dir":         "file://" + filepath.Join(scratch, "node-attribute"),
	}
	core := map[string]string{"hadoop.tmp.dir": scratch}
	return writeSites(dir, yarn, core, map[string]string{"capacity-scheduler.xml": siteXML(capacitySchedulerXML)})
}

// StartResourceManager runs a real ResourceManager alone, as `yarn
// resourcemanager` does: Hadoop's own main class (no test harness around
// it, no NodeManager in its process or anywhere), with
// WriteRMDaemonConf's configuration in dir/conf and the JVM flags of d's
// profile (DaemonJVM for a deployment's). It returns once the client port
// accepts and the REST API answers; Stop sends SIGTERM, on which the
// daemon's shutdown hook stops its services.
func (d *Dist) StartResourceManager(ctx context.Context, dir string, addrs RMDaemonAddrs) (*Service, error) {
	conf := filepath.Join(dir, "conf")
	if err := WriteRMDaemonConf(conf, addrs, filepath.Join(dir, "scratch")); err != nil {
		return nil, fmt.Errorf("resourcemanager configuration: %w", err)
	}
	cmd := d.Command(context.WithoutCancel(ctx), conf, "yarn", ResourceManagerClass)
	cmd.Dir = dir
	s, err := launch(cmd, func(s *Service) { s.cmd.Process.Signal(syscall.SIGTERM) })
	if err != nil {
		return nil, fmt.Errorf("start resourcemanager: %w", err)
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return nil, fmt.Errorf("resourcemanager exited before it served: %s", s.Logs())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("resourcemanager not serving: %w: %s", ctx.Err(), s.Logs())
		case <-tick.C:
		}
		if serving(addrs) {
			return s, nil
		}
	}
}

// serving says whether a ResourceManager at addrs accepts clients and
// answers its REST API's cluster info (which it serves once active).
func serving(addrs RMDaemonAddrs) bool {
	c, err := net.DialTimeout("tcp", addrs.Client, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	hc := http.Client{Timeout: time.Second}
	resp, err := hc.Get("http://" + addrs.Web + "/ws/v1/cluster/info")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
