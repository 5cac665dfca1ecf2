// Command weft-demo is `make run`: on this machine it brings up the
// kind-style cluster of three real nodes (test/kube/up.sh --nodes 3), a
// MiniDFSCluster beside its control plane, and Weft deployed from deploy/
// (its Helm chart with deploy/nodes.yaml, Weft's image built here and
// imported into each node's containerd), then runs an unmodified
// DistributedShell job through Weft with Hadoop's own client, prints on
// which nodes its containers ran and where to look, and keeps HDFS up
// until Ctrl-C. The cluster and Weft stay up afterwards.
//
// weft-demo -stop is `make stop`: it ends a running demo, takes Weft out
// of the cluster and stops the cluster (test/kube/down.sh --nodes), then
// checks that nothing of the run is left.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

const (
	// nodeCount is the kind-style cluster's size, which deploy/nodes.yaml
	// is written for.
	nodeCount = 3
	// hdfsPort is the NameNode's, HDFS's default, so the printed commands
	// and the client configuration hold from one run to the next.
	hdfsPort = "8020"
	// workers is how many containers the demo's DistributedShell asks for:
	// two for each node, so that the spread shows.
	workers = 6
)

func main() {
	stopMode := flag.Bool("stop", false, "stop what make run started (make stop)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *stopMode {
		if err := stopAll(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "weft-demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("== "+format+"\n", args...) }

// workDir is where the demo keeps its PID, HDFS and client configuration.
func workDir() (root, work string, err error) {
	root, err = os.Getwd()
	return root, filepath.Join(root, ".weft", "demo"), err
}

// demoPID is a running demo's process, or 0. A PID file a killed demo
// left may name another process by now: the process must be a weft-demo.
func demoPID(work string) int {
	b, err := os.ReadFile(filepath.Join(work, "weft-demo.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid == os.Getpid() {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "weft-demo") {
		return 0
	}
	return pid
}

func run(ctx context.Context) error {
	start := time.Now()
	root, work, err := workDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	// One demo at a time: a second would take the first's HDFS port and
	// replace its Weft under it.
	if pid := demoPID(work); pid != 0 {
		return fmt.Errorf("an earlier make run still runs (PID %d): make stop first", pid)
	}
	// make stop ends this process (and so HDFS) by its PID.
	pidFile := filepath.Join(work, "weft-demo.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidFile)

	// Weft's binaries build while the cluster starts: neither waits for
	// the other, and both take tens of seconds.
	imgc := make(chan imageResult, 1)
	go func() { imgc <- weftImage() }()

	step("the kind-style cluster: a control plane and %d nodes, each in a network namespace of its own with its own address (test/kube/up.sh --nodes %d; the first run builds Kubernetes, a few minutes)", nodeCount, nodeCount)
	cluster, err := kube.UpNodes(ctx, nodeCount)
	if err != nil {
		return err
	}
	nodes, err := cluster.Kubectl(ctx, "get", "nodes", "-o", "wide")
	if err != nil {
		return err
	}
	fmt.Println("   kubectl get nodes -o wide")
	fmt.Print(indent(nodes))

	// What the chart renders decides the addresses clients use: weft-rm
	// listens where deploy/nodes.yaml binds it.
	objs, err := kube.RenderChart(ctx, []string{filepath.Join(root, "deploy", "nodes.yaml")})
	if err != nil {
		return err
	}
	rm, err := rmAddrs(objs)
	if err != nil {
		return err
	}
	defaultFS := "hdfs://" + net.JoinHostPort(kube.ControlPlaneIP, hdfsPort)
	conf := filepath.Join(work, "conf")
	if err := hadoop.WriteConfWithFS(conf, rm.Client, rm.Scheduler, rm.Web, defaultFS); err != nil {
		return err
	}
	dist, err := hadoop.Client(ctx, "3.4.1")
	if err != nil {
		return err
	}
	home, err := dist.Home()
	if err != nil {
		return err
	}

	// HDFS starts beside the deploy, which does not need it; the job does.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(kube.ControlPlaneIP, hdfsPort), time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s:%s is taken in the control plane's network: stop what holds it first", kube.ControlPlaneIP, hdfsPort)
	}
	type dfsResult struct {
		svc *hadoop.Service
		err error
	}
	dfsc := make(chan dfsResult, 1)
	go func() {
		mini, err := hadoop.MiniCluster(ctx, "3.4.1")
		if err != nil {
			dfsc <- dfsResult{err: err}
			return
		}
		os.RemoveAll(filepath.Join(work, "dfs"))
		svc, err := mini.StartServiceWith(ctx, kube.InControlPlane, work,
			"sh.weft.interop.MiniDFS", filepath.Join(work, "dfs"), hdfsPort, kube.ControlPlaneIP)
		dfsc <- dfsResult{svc, err}
	}()
	var dfs *hadoop.Service
	defer func() {
		if dfs == nil {
			// Started after all, while the run failed: it must not outlive it.
			if r := <-dfsc; r.svc != nil {
				r.svc.Stop()
			}
			return
		}
		dfs.Stop()
	}()

	step("Weft's image (weft.local/weft:dev) into each node's containerd")
	img := <-imgc
	if img.err != nil {
		return img.err
	}
	defer os.RemoveAll(img.dir)
	if err := importImage(ctx, img.img); err != nil {
		return err
	}

	step("Weft afresh: an earlier run's weft-rm, its applications and pods removed")
	if err := fresh(ctx, cluster); err != nil {
		return err
	}
	step("Weft from its Helm chart (deploy/chart/weft with deploy/nodes.yaml, the weft profile): weft-rm on %s at %s, a node plugin on every node at the node's address", kube.NodeName(1), rm.host())
	deployed := time.Now()
	if err := deploy(ctx, cluster, objs, conf, home, rm); err != nil {
		return err
	}

	step("HDFS: a MiniDFSCluster (Hadoop 3.4.1) in the control plane's network")
	r := <-dfsc
	if r.err != nil {
		return r.err
	}
	dfs = r.svc
	fmt.Printf("   NameNode %s\n", dfs.Ready[0])

	step("What each node lends to batch work (its colocation agent's measurement of the node; at most 4 minutes while it settles)")
	if err := lending(ctx, cluster, deployed); err != nil {
		return err
	}

	step("DistributedShell, unmodified, through Weft: %d containers", workers)
	jar, err := dist.Jar("hadoop-yarn-applications-distributedshell-")
	if err != nil {
		return err
	}
	who := "weft"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	ds := dist.Command(ctx, conf, who, "org.apache.hadoop.yarn.applications.distributedshell.Client",
		"-jar", jar, "-appname", "weft-demo", "-num_containers", strconv.Itoa(workers),
		// DistributedShell appends its redirections to the command, so they
		// bind to the last one: the echo, which goes to the container's
		// stdout log (an echo first would go to no log, as on a NodeManager).
		// The sleep keeps the containers running together, as work would.
		"-shell_command", "sleep 5; echo hello from Weft",
		"-master_memory", "512", "-container_memory", "256", "-timeout", "300000")
	var errOut bytes.Buffer
	ds.Stdout, ds.Stderr = os.Stdout, &errOut
	watchCtx, endWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { watch(watchCtx, cluster); close(watched) }()
	err = ds.Run()
	endWatch()
	<-watched
	if err != nil {
		return fmt.Errorf("DistributedShell: %w\n%s", err, errOut.String())
	}
	app, err := demoApp(ctx, rm.Web)
	if err != nil {
		return err
	}
	attempt := strings.Replace(app, "application_", "appattempt_", 1) + "_000001"
	if err := where(ctx, dist, conf, who, attempt); err != nil {
		return err
	}

	kubectl := filepath.Join(kube.Cache(), "bin", "kubectl") + " --kubeconfig " + cluster.Kubeconfig
	rel, err := filepath.Rel(root, conf)
	if err != nil {
		rel = conf
	}
	client := "go run ./test/hadoop/cmd/hadoop-client -conf " + rel
	fmt.Printf(`
Ready in %[7]s. Run a job (the client configuration is %[4]s: yarn-site.xml with weft-rm's addresses, core-site.xml with fs.defaultFS=%[3]s):
  %[5]s jar examples pi 4 1000
  %[5]s jar examples wordcount /user/%[6]s/in /user/%[6]s/out    (input: %[5]s java org.apache.hadoop.fs.FsShell -put <files> /user/%[6]s/in)
  %[5]s jar distributedshell -num_containers %[10]d -shell_command 'echo hello from DistributedShell'
  %[5]s spark-submit --master yarn --deploy-mode cluster --class sh.weft.spark.SparkPi examples 10
  %[5]s yarn application -list -appStates ALL
  %[5]s yarn node -list -all
  %[5]s yarn container -list %[8]s    (where the demo's containers ran)
Look:
  REST   http://%[1]s/ws/v1/cluster/apps   http://%[1]s/ws/v1/cluster/nodes   UI http://%[1]s/cluster
  nodes  %[2]s get nodes -o wide
  pods   %[2]s get pods -n weft-jobs -o wide -L weft.io/tier,weft.io/app
  Weft   %[2]s get pods -n weft-system -o wide
  logs   http://<node>:8042/node/containerlogs/<container id>/%[6]s    (the node that ran it: weft-node-1 to -%[9]d, named in /etc/hosts)
HDFS (%[3]s) serves until Ctrl-C; the cluster and Weft stay up until "make stop", which stops all of it.
`, rm.Web, kubectl, defaultFS, rel, client, who, time.Since(start).Round(time.Second), attempt, nodeCount, workers)
	<-ctx.Done()
	return nil
}

// addrs are weft-rm's client, scheduler and web addresses.
type addrs struct{ Client, Scheduler, Web string }

func (a addrs) host() string { h, _, _ := net.SplitHostPort(a.Client); return h }

// rmAddrs reads weft-rm's addresses from its rendered Deployment's flags.
func rmAddrs(objs []*unstructured.Unstructured) (addrs, error) {
	var a addrs
	for _, u := range objs {
		if u.GetKind() != "Deployment" || u.GetName() != "weft-rm" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		args, _ := containers[0].(map[string]any)["args"].([]any)
		for _, arg := range args {
			s, _ := arg.(string)
			for name, to := range map[string]*string{"--client-address=": &a.Client, "--scheduler-address=": &a.Scheduler, "--webapp-address=": &a.Web} {
				if v, ok := strings.CutPrefix(s, name); ok {
					*to = v
				}
			}
		}
	}
	if a.Client == "" || a.Scheduler == "" || a.Web == "" {
		return a, fmt.Errorf("the chart's weft-rm has no --client-address, --scheduler-address and --webapp-address: %+v", a)
	}
	return a, nil
}

type imageResult struct {
	img images.Image
	// dir holds the binaries the image is made of.
	dir string
	err error
}

// weftImage builds Weft's binaries and the image made of them once for
// every node.
func weftImage() imageResult {
	dir, err := os.MkdirTemp("", "weft-demo-image-")
	if err != nil {
		return imageResult{err: err}
	}
	img, err := images.BuildWeft(dir)
	if err != nil {
		os.RemoveAll(dir)
		return imageResult{err: err}
	}
	return imageResult{img: img, dir: dir}
}

// importImage imports img into every node's containerd, where it changed,
// keeping each node's archive and digest where the e2e suite keeps them.
func importImage(ctx context.Context, img images.Image) error {
	return parallel(nodeCount, func(n int) error {
		node := kube.NodeName(n + 1)
		im := images.Importer{Address: kube.NodeContainerdAddress(n + 1), Dir: filepath.Join(kube.NodesStateDir(), "nodes", node, "images")}
		imported, err := im.Import(ctx, img)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", node, err)
		case imported:
			fmt.Printf("   %s: imported\n", node)
		default:
			fmt.Printf("   %s: unchanged\n", node)
		}
		return nil
	})
}

// parallel runs fn(0) to fn(n-1) at once and joins their errors.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// lending waits for every node's colocation agent to publish what its
// node can lend — at least what an AM and a container take (1 vcore each,
// 100m a vcore in deploy/nodes.yaml) — and prints it: until then weft-rm
// sees nodes with nothing to offer, and the job would wait in ACCEPTED or
// crowd onto the nodes that spoke first. Each agent measures its own node
// (its cgroup subtree, /weft-node-i), a third of this machine; clients and
// builds on this machine are not the node's load.
func lending(ctx context.Context, cluster *kube.Cluster, since time.Time) error {
	lent := make([]kube.Lent, nodeCount)
	if err := parallel(nodeCount, func(n int) (err error) {
		lent[n], err = kube.WaitLent(ctx, cluster, kube.NodeName(n+1), 200, since, 4*time.Minute)
		return err
	}); err != nil {
		return err
	}
	for i, l := range lent {
		fmt.Printf("   %s lends %dm CPU and %.1f GiB", kube.NodeName(i+1), l.MilliCPU, float64(l.Memory)/(1<<30))
		if u := l.Utilization; u != nil {
			fmt.Printf(" (its own pods use %dm CPU and %d MiB now)", u.NodeMilliCPU-u.BatchMilliCPU, (u.NodeMemory-u.BatchMemory)>>20)
		}
		fmt.Println()
	}
	fmt.Println("   each its CPU watermark (80% of the node) less what the node's own pods used at their peak, in its Node's allocatable")
	fmt.Println("   (weft.io/reclaimed-cpu and -memory); every batch pod runs in its node's big box, bounded to that much")
	return nil
}

// deploy installs Weft through its rendered Helm chart (deploy/nodes.yaml),
// this machine's Hadoop (installation and configuration) added to weft-rm's
// and the node plugin's arguments, and waits for weft-rm on every node's
// plugin to be Ready and weft-rm to answer.
func deploy(ctx context.Context, cluster *kube.Cluster, objs []*unstructured.Unstructured, conf, home string, rm addrs) error {
	data := map[string]string{}
	for _, f := range []string{"core-site.xml", "yarn-site.xml", "log4j.properties"} {
		b, err := os.ReadFile(filepath.Join(conf, f))
		if err != nil {
			return err
		}
		data[f] = string(b)
	}
	// Spark's jars on the nodes for the printed spark-submit (the client
	// lays its home out under SparkRoot when first run); the nodes share
	// this machine's filesystem.
	if err := os.MkdirAll(hadoop.SparkRoot(), 0o755); err != nil {
		return err
	}
	extra := []any{"--hadoop-home=" + home, "--host-path=" + home, "--host-path=" + hadoop.SparkRoot(), "--hadoop-conf-configmap=hadoop-conf"}
	for _, u := range objs {
		// weft-rm and the node plugin run Hadoop; the tidal controller does
		// not, and refuses flags it does not know.
		if k := u.GetKind(); (k == "Deployment" || k == "DaemonSet") && (u.GetName() == "weft-rm" || u.GetName() == "weft-nodeplugin") {
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			c := containers[0].(map[string]any)
			c["args"] = append(slices.Clone(c["args"].([]any)), extra...)
			if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				return err
			}
		}
	}
	if _, err := cluster.Install(ctx, objs, time.Minute); err != nil {
		return err
	}
	// The containers' HADOOP_CONF_DIR, which their pods mount when they
	// start: it is read by no Weft process, so it may follow the install.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hadoop-conf", Namespace: "weft-jobs"}, Data: data}
	cms := cluster.Client.CoreV1().ConfigMaps("weft-jobs")
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	// fresh removed the earlier workloads: these pods are new ones.
	for _, kind := range []string{"deployment/weft-rm", "daemonset/weft-nodeplugin"} {
		if _, err := cluster.Kubectl(ctx, "-n", "weft-system", "rollout", "status", kind, "--timeout=3m"); err != nil {
			return err
		}
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if c, err := net.DialTimeout("tcp", rm.Web, time.Second); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("weft-rm does not answer on %s", rm.Web)
}

// clusterID is the deployed weft-rm's (deploy/base leaves the default).
const clusterID = "weft"

// fresh removes what an earlier make run left in the cluster — Weft's
// workloads, the weft-rm's state and Lease, its applications' pods — so
// that this run lists only its own job. (Within a run, a restarted weft-rm
// keeps its applications: the state lives in the API server for that.)
func fresh(ctx context.Context, cluster *kube.Cluster) error {
	if err := kube.RemoveWeft(ctx, cluster, clusterID, 2*time.Minute); err != nil {
		return fmt.Errorf("an earlier run's Weft: %w", err)
	}
	return kube.RemoveContainers(ctx, cluster, clusterID)
}

// watch prints the job's pods as they come and go, with their nodes.
func watch(ctx context.Context, cluster *kube.Cluster) {
	seen := map[string]string{}
	for ctx.Err() == nil {
		list, err := cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: translator.Selector(clusterID)})
		if err == nil {
			for _, p := range list.Items {
				state := string(p.Status.Phase) + " " + p.Spec.NodeName
				if seen[p.Name] != state {
					seen[p.Name] = state
					fmt.Printf("   pod %-45s tier=%-6s %-9s %s\n", p.Name, p.Labels[wellknown.LabelTier], p.Status.Phase, p.Spec.NodeName)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// demoApp is the id of the demo's application, as REST lists it.
func demoApp(ctx context.Context, web string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+web+"/ws/v1/cluster/apps", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list struct {
		Apps *struct {
			App []struct{ ID, Name string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return "", fmt.Errorf("REST apps: %w", err)
	}
	var ids []string
	if list.Apps != nil {
		for _, a := range list.Apps.App {
			if a.Name == "weft-demo" {
				ids = append(ids, a.ID)
			}
		}
	}
	if len(ids) == 0 {
		return "", fmt.Errorf("REST lists no weft-demo application")
	}
	// The newest, should there be several.
	slices.Sort(ids)
	return ids[len(ids)-1], nil
}

// containerLine is a row of `yarn container -list`: the container, its
// node's host (of the NodeManager's address) and its node's web address
// (the column after). The times before them hold colons too, but no
// host:port followed by another.
var containerLine = regexp.MustCompile(`(?m)^\s*(container_\S+)\s.*?\s([^\s:]+):\d+\s+([^\s:]+:\d+)(\s|$)`)

// where prints what the yarn CLI says of the application and of its
// attempt's containers — the node each one ran on — and a worker's stdout
// as its node serves it.
func where(ctx context.Context, dist *hadoop.Dist, conf, who, attempt string) error {
	// Two JVMs at once: each is mostly its own start.
	cmds := [][]string{{"application", "-list", "-appStates", "ALL"}, {"container", "-list", attempt}}
	outs := make([]string, len(cmds))
	if err := parallel(len(cmds), func(i int) error {
		out, errOut, err := dist.Yarn(ctx, conf, who, cmds[i]...)
		if err != nil {
			return fmt.Errorf("yarn %s: %w\n%s", strings.Join(cmds[i], " "), err, errOut)
		}
		outs[i] = out
		return nil
	}); err != nil {
		return err
	}
	for i, args := range cmds {
		fmt.Printf("   yarn %s\n", strings.Join(args, " "))
		fmt.Print(indent(outs[i]))
	}
	containers := outs[1]
	perNode := map[string]int{}
	var worker, workerWeb string
	for _, m := range containerLine.FindAllStringSubmatch(containers, -1) {
		perNode[m[2]]++
		// The first worker (the AM is _000001).
		if worker == "" && strings.HasSuffix(m[1], "_000002") {
			worker, workerWeb = m[1], m[3]
		}
	}
	var on []string
	for i := 1; i <= nodeCount; i++ {
		on = append(on, fmt.Sprintf("%s %d", kube.NodeName(i), perNode[kube.NodeName(i)]))
	}
	fmt.Printf("   the AM and %d containers ran on %d of %d nodes: %s\n", workers, len(perNode), nodeCount, strings.Join(on, ", "))
	if worker == "" {
		return nil
	}
	// Its log outlives its pod.
	url := "http://" + workerWeb + "/node/containerlogs/" + worker + "/" + who + "/stdout"
	if resp, err := http.Get(url); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("   %s stdout (%s):\n     %s\n", worker, url, strings.TrimSpace(string(b)))
	}
	return nil
}

// indent indents a command's output under the demo's own lines.
func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("     " + l + "\n")
	}
	return b.String()
}

// stopAll ends a running demo (and with it HDFS), takes Weft out of the
// kind-style cluster while its nodes still run — pods left in the API
// server would start again with the cluster, on the ports the e2e suite's
// Weft takes on the same cluster — then stops the cluster and its network
// and checks that nothing of the run is left.
func stopAll(ctx context.Context) error {
	_, work, err := workDir()
	if err != nil {
		return err
	}
	if pid := demoPID(work); pid != 0 {
		fmt.Printf("stop: the demo (PID %d) and its HDFS\n", pid)
		syscall.Kill(pid, syscall.SIGTERM)
		for deadline := time.Now().Add(40 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("the demo (PID %d) still runs 40 s after SIGTERM", pid)
			}
		}
	}
	kubeconfig := filepath.Join(kube.NodesStateDir(), "kubeconfig")
	if cluster, err := kube.Connect(kubeconfig); err == nil && answers(ctx, cluster) {
		fmt.Println("stop: Weft out of the kind-style cluster (its workloads, weft-rm's state, its applications' pods)")
		if err := fresh(ctx, cluster); err != nil {
			// The cluster still goes; the next make run removes the rest.
			fmt.Println("stop: warning:", err)
		}
	}
	fmt.Printf("stop: the kind-style cluster (test/kube/down.sh --nodes %d)\n", nodeCount)
	down := exec.CommandContext(ctx, "test/kube/down.sh", "--nodes", strconv.Itoa(nodeCount))
	down.Stdout, down.Stderr = os.Stdout, os.Stderr
	if err := down.Run(); err != nil {
		return fmt.Errorf("down.sh: %w", err)
	}
	return leftovers(work)
}

// answers says the cluster's API server answers within a few seconds.
func answers(ctx context.Context, cluster *kube.Cluster) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := cluster.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	return err == nil
}

// leftovers fails, naming them, on what a stopped run must not leave: a
// network namespace of the cluster, or a process of it or of the demo's
// HDFS (found by the state directories on their command lines).
func leftovers(work string) error {
	var left []string
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 && regexp.MustCompile(`^weft-(cp|node-\d+)$`).MatchString(f[0]) {
				left = append(left, "network namespace "+f[0])
			}
		}
	}
	for _, pattern := range []string{kube.NodesStateDir() + "/", filepath.Join(work, "dfs")} {
		out, _ := exec.Command("pgrep", "-a", "-f", pattern).Output()
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				left = append(left, "process "+truncate(l, 160))
			}
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("still there after down.sh:\n  %s", strings.Join(left, "\n  "))
	}
	fmt.Println("stop: done; no namespace or process of the run is left")
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
