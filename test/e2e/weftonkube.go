package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// WeftOnKube is Weft run as processes beside a local cluster, the way a
// developer runs it: weft-rm and one node plugin on loopback, pods on the
// cluster's node in its network (YARN's host networking), HDFS a
// MiniDFSCluster, Java, Hadoop and Spark the node's own (host paths into
// the node-runtime image). On a kind-style cluster (Nodes), MiniDFS and
// weft-rm run in the control plane's network namespace on its address and
// a node plugin in each node's, on the node's address, as a DaemonSet's
// host-network pods would: every address is one the nodes reach.
type WeftOnKube struct {
	// RM is the first weft-rm; with HA, RMs are all replicas (rm1, rm2, ...).
	RM  *RM
	RMs []*RM
	// Conf is the clients' HADOOP_CONF_DIR.
	Conf string
	Dist *hadoop.Dist
	// NMHTTP is the (first) node plugin's web address (containers' logs).
	NMHTTP string
	// DefaultFS is the MiniDFSCluster's URI (fs.defaultFS).
	DefaultFS string
	// DFSDir is the MiniDFSCluster's base directory.
	DFSDir string
	// LocalRoot and LogRoot are the node's applications' local and log
	// directories.
	LocalRoot, LogRoot string

	plugins   []*nodePlugin
	pluginBin string
	// cluster and clusterID find this run's pods and Secrets, to remove.
	cluster   *kube.Cluster
	clusterID string
	logsMu    sync.Mutex
	logs      bytes.Buffer
	dfs       *hadoop.Service
}

// WeftOnKubeOptions configures StartWeftOnKube.
type WeftOnKubeOptions struct {
	Cluster *kube.Cluster
	// Version is the Hadoop release of clients and containers.
	Version string
	// Work holds everything the run writes.
	Work string
	// BinDir holds weft-rm and weft-nodeplugin (BuildBinaries).
	BinDir string
	// RMArgs are weft-rm's extra flags (--queues, --preemption-grace).
	RMArgs []string
	// Profile is the colocation profile of weft-rm and the node plugin
	// (default plain: capacity from requests, no agent).
	Profile string
	// PluginArgs are the node plugin's extra flags.
	PluginArgs []string
	// HA, when 2 or more, runs that many weft-rm replicas under leader
	// election with their state in the API server (namespace weft-system),
	// and writes the clients' and containers' configuration with YARN's HA
	// rm-ids; rm1 is started first and is the active.
	HA int
	// Nodes, when not zero, says Cluster is the kind-style cluster of that
	// many nodes (kube.UpNodes): Weft's peers run in its network
	// namespaces, a node plugin on each node, its NodeManager, web and
	// shuffle ports YARN's defaults (8041, 8042, 13562) on every node's
	// own address; weft-rm's are YARN's (8032, 8030, 8088), rm<i>'s plus
	// 10000·(i-1), on the control plane's.
	Nodes int
	// SparkShuffle runs Spark's external shuffle service (spark_shuffle,
	// on Spark's port 7337) on every node, as a YARN cluster for Spark's
	// dynamic allocation has it. Only on the kind-style cluster: the
	// service listens on all of its node's addresses.
	SparkShuffle bool
}

// nodePlugin is one node's weft-nodeplugin process.
type nodePlugin struct {
	node  string
	netns string // empty: this machine's network
	args  []string
	cmd   *exec.Cmd
}

// jobsNamespace holds the pods of YARN applications.
const jobsNamespace = "weft-jobs"

// StartWeftOnKube starts a MiniDFSCluster, weft-rm and a node plugin for
// opts.Cluster's node. Weft's image must be in the node's containerd.
func StartWeftOnKube(ctx context.Context, opts WeftOnKubeOptions) (_ *WeftOnKube, err error) {
	if err := os.MkdirAll(opts.Work, 0o755); err != nil {
		return nil, err
	}
	w := &WeftOnKube{DFSDir: filepath.Join(opts.Work, "dfs"), LocalRoot: filepath.Join(opts.Work, "container-local"), LogRoot: filepath.Join(opts.Work, "container-logs")}
	defer func() {
		if err != nil {
			w.Stop()
		}
	}()
	mini, err := hadoop.MiniCluster(ctx, "3.4.1")
	if err != nil {
		return nil, err
	}
	if opts.Nodes > 0 {
		w.dfs, err = mini.StartServiceWith(ctx, kube.InControlPlane, opts.Work, "sh.weft.interop.MiniDFS", w.DFSDir, "0", kube.ControlPlaneIP)
	} else {
		w.dfs, err = mini.StartService(ctx, opts.Work, "sh.weft.interop.MiniDFS", w.DFSDir)
	}
	if err != nil {
		return nil, fmt.Errorf("MiniDFSCluster: %w", err)
	}
	defaultFS := w.dfs.Ready[0]
	w.DefaultFS = defaultFS
	if w.Dist, err = hadoop.Client(ctx, opts.Version); err != nil {
		return nil, err
	}
	home, err := w.Dist.Home()
	if err != nil {
		return nil, err
	}
	// Spark's jars are on the node, as spark.yarn.jars=local:... expects.
	spark, err := hadoop.SparkDist(ctx)
	if err != nil {
		return nil, err
	}
	replicas := max(opts.HA, 1)
	var nm, nmHTTP, shuffle string
	rms := map[string]hadoop.RMAddrs{}
	if opts.Nodes > 0 {
		// Every node serves on the same ports, each on its own address.
		nm, nmHTTP, shuffle = ":8041", ":8042", ":13562"
		for i := range replicas {
			at := func(port int) string { return fmt.Sprintf("%s:%d", kube.ControlPlaneIP, port+10000*i) }
			rms[fmt.Sprintf("rm%d", i+1)] = hadoop.RMAddrs{Client: at(8032), Scheduler: at(8030), Web: at(8088)}
		}
	} else {
		addrs, err := FreeAddrs(3 + 3*replicas)
		if err != nil {
			return nil, err
		}
		nm, nmHTTP, shuffle = addrs[0], addrs[1], addrs[2]
		for i := range replicas {
			rms[fmt.Sprintf("rm%d", i+1)] = hadoop.RMAddrs{Client: addrs[3+3*i], Scheduler: addrs[4+3*i], Web: addrs[5+3*i]}
		}
	}
	port := func(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
	w.NMHTTP = nmHTTP
	w.Conf = filepath.Join(opts.Work, "conf")
	clusterID := "e2e-" + filepath.Base(opts.Work)
	w.cluster, w.clusterID = opts.Cluster, clusterID
	if opts.HA >= 2 {
		err = hadoop.WriteHAConf(w.Conf, clusterID, rms, defaultFS)
	} else {
		err = hadoop.WriteConfWithFS(w.Conf, rms["rm1"].Client, rms["rm1"].Scheduler, rms["rm1"].Web, defaultFS)
	}
	if err != nil {
		return nil, err
	}

	// The containers' HADOOP_CONF_DIR: the same site files, as a ConfigMap.
	data := map[string]string{}
	for _, f := range []string{"core-site.xml", "yarn-site.xml", "mapred-site.xml", "log4j.properties", "container-log4j.properties"} {
		b, err := os.ReadFile(filepath.Join(w.Conf, f))
		if err != nil {
			return nil, err
		}
		data[f] = string(b)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hadoop-conf-" + opts.Version, Namespace: jobsNamespace}, Data: data}
	_ = opts.Cluster.Client.CoreV1().ConfigMaps(jobsNamespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	if _, err := opts.Cluster.Client.CoreV1().ConfigMaps(jobsNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("hadoop conf configmap: %w", err)
	}

	key := filepath.Join(opts.Work, "nm-master.key")
	// Its own cluster id: a Weft deployed in the cluster may share the namespace.
	if opts.Profile == "" {
		opts.Profile = "plain"
	}
	// A kind-style node is a share of this machine (a third of its CPUs
	// on three nodes): smaller vcores let an AM and its tasks run on one.
	milliPerVCore := "250"
	if opts.Nodes > 0 {
		milliPerVCore = "100"
	}
	runtimeFlags := []string{"--profile", opts.Profile, "--kubeconfig", opts.Cluster.Kubeconfig, "--namespace", jobsNamespace, "--cluster-id", clusterID,
		"--container-image", images.NodeRuntimeRef, "--java-home", "/usr/lib/jvm/java-17-openjdk-amd64",
		"--host-path", "/usr", "--host-path", "/etc/java-17-openjdk", "--host-path", home, "--host-path", spark.Home,
		"--hadoop-home", home, "--hadoop-conf-configmap", cm.Name,
		"--milli-cpu-per-vcore", milliPerVCore, "--localizer-image", images.WeftRef, "--localizer-cache-dir", filepath.Join(opts.Work, "filecache"), "--nm-key-file", key,
		"--container-log-root", w.LogRoot, "--container-local-root", w.LocalRoot}
	for i := range replicas {
		id := fmt.Sprintf("rm%d", i+1)
		a := rms[id]
		rm := &RM{Bin: filepath.Join(opts.BinDir, "weft-rm"), DataDir: filepath.Join(opts.Work, id), ClientAddr: a.Client, SchedulerAddr: a.Scheduler,
			WebAddr: a.Web, Args: append(append([]string{"--local-node=false", "--nm-port", port(nm), "--nm-http-port", port(nmHTTP), "--log-level", "DEBUG"},
				opts.RMArgs...), runtimeFlags...)}
		if opts.Nodes > 0 {
			rm.Netns = kube.ControlPlaneNetns
		}
		if opts.HA >= 2 {
			rm.HA = true
			rm.Args = append(rm.Args, "--ha-id", id, "--state-namespace", "weft-system")
		}
		w.RMs = append(w.RMs, rm)
		if err := rm.Start(ctx); err != nil {
			return nil, err
		}
		// The first replica leads before the next starts.
		for deadline := time.Now().Add(time.Minute); rm.HA && i == 0 && !rm.Active(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s did not become active: %s", id, rm.Logs())
			}
		}
	}
	w.RM = w.RMs[0]
	var webs []string
	for _, rm := range w.RMs {
		webs = append(webs, rm.WebAddr)
	}
	w.pluginBin = filepath.Join(opts.BinDir, "weft-nodeplugin")
	common := append([]string{"--rm-webapp-address", strings.Join(webs, ","), "--cleanup-interval", "3s"}, append(runtimeFlags, opts.PluginArgs...)...)
	if opts.Nodes == 0 {
		w.plugins = []*nodePlugin{{args: append([]string{"--address", nm, "--http-address", nmHTTP, "--shuffle-address", shuffle}, common...)}}
	}
	if opts.SparkShuffle {
		if opts.Nodes == 0 {
			return nil, errors.New("the Spark shuffle service runs on the kind-style cluster's nodes only")
		}
		cp, err := hadoop.SparkShuffleClasspath(ctx)
		if err != nil {
			return nil, fmt.Errorf("Spark's shuffle service: %w", err)
		}
		common = append(common, "--aux-service", "spark_shuffle="+hadoop.SparkShuffleClass, "--aux-service-classpath", "spark_shuffle="+cp,
			"--aux-services-jvm-opts", "-Xmx192m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
	}
	for i := 1; i <= opts.Nodes; i++ {
		name, ip := kube.NodeName(i), kube.NodeIP(i)
		w.plugins = append(w.plugins, &nodePlugin{node: name, netns: name, args: append([]string{"--node-name", name, "--node-cgroup", "/" + name,
			"--address", ip + nm, "--http-address", ip + nmHTTP, "--shuffle-address", ip + shuffle,
			"--recovery-dir", filepath.Join(opts.Work, "recovery", name)}, common...)})
	}
	if opts.Nodes > 0 {
		w.NMHTTP = kube.NodeIP(1) + nmHTTP
	}
	if err := w.StartPlugin(); err != nil {
		return nil, err
	}
	return w, nil
}

// StartPlugin starts every node's plugin (again, after KillPlugin: as the
// kubelet restarts its DaemonSet pod's container).
func (w *WeftOnKube) StartPlugin() error {
	for _, p := range w.plugins {
		p.cmd = exec.Command(w.pluginBin, p.args...)
		if p.netns != "" {
			kube.InNetns(p.cmd, p.netns)
		}
		p.cmd.Stdout = &lockedWriter{mu: &w.logsMu, w: &w.logs}
		p.cmd.Stderr = p.cmd.Stdout
		if err := p.cmd.Start(); err != nil {
			return fmt.Errorf("weft-nodeplugin %s: %w", p.node, err)
		}
	}
	return nil
}

// KillPlugin kills every node's plugin outright (SIGKILL): its listeners
// close mid-request, nothing is flushed.
func (w *WeftOnKube) KillPlugin() error {
	for _, p := range w.plugins {
		if err := p.cmd.Process.Kill(); err != nil {
			return err
		}
		p.cmd.Wait()
	}
	return nil
}

// PluginLogs is what the node plugin printed.
func (w *WeftOnKube) PluginLogs() string {
	w.logsMu.Lock()
	defer w.logsMu.Unlock()
	return w.logs.String()
}

// Stop stops the processes it started, by PID.
func (w *WeftOnKube) Stop() error {
	var errs []error
	for _, rm := range w.RMs {
		errs = append(errs, rm.Stop())
	}
	for _, p := range w.plugins {
		if p.cmd != nil && p.cmd.Process != nil && p.cmd.ProcessState == nil {
			p.cmd.Process.Signal(os.Interrupt)
			p.cmd.Wait()
		}
	}
	if w.dfs != nil {
		w.dfs.Stop()
	}
	// What the run left in the cluster (pods of applications it did not
	// finish, their launch Secrets) would show up under `make run`.
	if w.cluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		errs = append(errs, kube.RemoveContainers(ctx, w.cluster, w.clusterID))
	}
	return errors.Join(errs...)
}

// PodReport is, for a failed spec's output, each pod of this Weft's
// containers as the kubelet last told of it (phase, conditions not met,
// each container's state) and the Events about them: why an AM never
// registered or a container never ran is there, not in Weft's logs.
func (w *WeftOnKube) PodReport() string {
	if w.cluster == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	core := w.cluster.Client.CoreV1()
	pods, err := core.Pods(jobsNamespace).List(ctx, metav1.ListOptions{LabelSelector: translator.Selector(w.clusterID)})
	if err != nil {
		return "pods: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pods of %s (%d):\n", w.clusterID, len(pods.Items))
	names := map[string]bool{}
	for _, p := range pods.Items {
		names[p.Name] = true
		fmt.Fprintf(&b, "  %s %s tier=%s node=%q %s\n", p.Name, p.Status.Phase, p.Labels[wellknown.LabelTier], p.Spec.NodeName, p.Status.Reason)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, "    %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			switch st := cs.State; {
			case st.Waiting != nil:
				fmt.Fprintf(&b, "    %s waiting: %s %s\n", cs.Name, st.Waiting.Reason, st.Waiting.Message)
			case st.Running != nil:
				fmt.Fprintf(&b, "    %s running since %s\n", cs.Name, st.Running.StartedAt.Format(time.RFC3339))
			case st.Terminated != nil:
				fmt.Fprintf(&b, "    %s terminated: exit %d %s %s\n", cs.Name, st.Terminated.ExitCode, st.Terminated.Reason, st.Terminated.Message)
			}
		}
	}
	events, err := core.Events(jobsNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return b.String() + "events: " + err.Error()
	}
	b.WriteString("their events:\n")
	for _, e := range events.Items {
		if names[e.InvolvedObject.Name] {
			fmt.Fprintf(&b, "  %s %s %s: %s (x%d)\n", e.LastTimestamp.Format(time.RFC3339), e.InvolvedObject.Name, e.Reason, e.Message, max(e.Count, 1))
		}
	}
	return b.String()
}

// BuildWeftImage builds Weft's image and imports it into the local
// node's containerd when it changed.
func BuildWeftImage(ctx context.Context) error {
	return importWeftImage(ctx, kube.ContainerdAddress(), filepath.Join(kube.Cache(), "kube", "images"))
}

// BuildWeftImageOnNodes is BuildWeftImage for each of the kind-style
// cluster's n nodes, whose containerds hold images of their own.
func BuildWeftImageOnNodes(ctx context.Context, n int) error {
	for i := 1; i <= n; i++ {
		dir := filepath.Join(kube.NodesStateDir(), "nodes", kube.NodeName(i), "images")
		if err := importWeftImage(ctx, kube.NodeContainerdAddress(i), dir); err != nil {
			return fmt.Errorf("%s: %w", kube.NodeName(i), err)
		}
	}
	return nil
}

func importWeftImage(ctx context.Context, address, dir string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	imgs := exec.CommandContext(ctx, "go", "run", "./cmd/kube-images", "-address", address, "-dir", dir, "-weft")
	imgs.Dir = root
	if out, err := imgs.CombinedOutput(); err != nil {
		return fmt.Errorf("kube-images: %v\n%s", err, out)
	}
	return nil
}
