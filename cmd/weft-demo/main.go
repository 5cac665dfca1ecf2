// Command weft-demo is `make run`: on this machine it brings up the local
// Kubernetes cluster (test/kube/up.sh), a MiniDFSCluster, and Weft
// deployed from deploy/ (its Helm chart with deploy/local.yaml, Weft's image built here), then
// runs an unmodified DistributedShell job through Weft with Hadoop's own
// client, prints where to look, and keeps HDFS up until Ctrl-C. The
// cluster and Weft stay up afterwards (test/kube/down.sh stops them).
package main

import (
	"bytes"
	"context"
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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

const (
	clientAddr = "127.0.0.1:8032"
	schedAddr  = "127.0.0.1:8030"
	webAddr    = "127.0.0.1:8088"
	// hdfsPort is the NameNode's, HDFS's default, so the printed commands
	// and the client configuration hold from one run to the next.
	hdfsPort = "8020"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "weft-demo:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("== "+format+"\n", args...) }

func run(ctx context.Context) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	work := filepath.Join(root, ".weft", "demo")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	// make stop ends this process (and so HDFS) by its PID.
	pidFile := filepath.Join(work, "weft-demo.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidFile)

	step("local Kubernetes (test/kube/up.sh; the first run builds it, a few minutes)")
	cluster, err := kube.Up(ctx)
	if err != nil {
		return err
	}
	step("Weft's image (weft.local/weft:dev)")
	imgs := exec.CommandContext(ctx, "go", "run", "./cmd/kube-images", "-address", kube.ContainerdAddress(),
		"-dir", filepath.Join(kube.Cache(), "kube", "images"), "-weft")
	imgs.Stdout, imgs.Stderr = os.Stdout, os.Stderr
	if err := imgs.Run(); err != nil {
		return fmt.Errorf("kube-images: %w", err)
	}

	step("MiniDFSCluster (Hadoop 3.4.1, NameNode on 127.0.0.1:%s)", hdfsPort)
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+hdfsPort, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("127.0.0.1:%s is taken (an earlier make run still serving HDFS?): stop it first", hdfsPort)
	}
	mini, err := hadoop.MiniCluster(ctx, "3.4.1")
	if err != nil {
		return err
	}
	os.RemoveAll(filepath.Join(work, "dfs"))
	dfs, err := mini.StartService(ctx, work, "sh.weft.interop.MiniDFS", filepath.Join(work, "dfs"), hdfsPort)
	if err != nil {
		return err
	}
	defer dfs.Stop()
	defaultFS := dfs.Ready[0]
	dist, err := hadoop.Client(ctx, "3.4.1")
	if err != nil {
		return err
	}
	home, err := dist.Home()
	if err != nil {
		return err
	}
	conf := filepath.Join(work, "conf")
	if err := hadoop.WriteConfWithFS(conf, clientAddr, schedAddr, webAddr, defaultFS); err != nil {
		return err
	}

	step("Weft afresh: an earlier run's weft-rm, its applications and pods removed")
	if err := fresh(ctx, cluster); err != nil {
		return err
	}
	step("Weft from its Helm chart (deploy/chart/weft with deploy/local.yaml; the weft profile: its colocation agent in the node plugin)")
	deployed := time.Now()
	if err := deploy(ctx, cluster, root, conf, home); err != nil {
		return err
	}
	step("What the node lends to batch work (the colocation agent's measurement; at most 4 minutes while it settles)")
	if err := lending(ctx, cluster, deployed); err != nil {
		return err
	}

	step("DistributedShell, unmodified, through Weft: 3 containers")
	jar, err := dist.Jar("hadoop-yarn-applications-distributedshell-")
	if err != nil {
		return err
	}
	who := "weft"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	ds := dist.Command(ctx, conf, who, "org.apache.hadoop.yarn.applications.distributedshell.Client",
		"-jar", jar, "-appname", "weft-demo", "-num_containers", "3",
		// DistributedShell appends its redirections to the command, so they
		// bind to the last one: the echo, which goes to the container's
		// stdout log (an echo first would go to no log, as on a NodeManager).
		"-shell_command", "sleep 10; echo hello from Weft",
		"-master_memory", "512", "-container_memory", "256", "-timeout", "300000")
	var errOut bytes.Buffer
	ds.Stdout, ds.Stderr = os.Stdout, &errOut
	go watch(ctx, cluster)
	if err := ds.Run(); err != nil {
		return fmt.Errorf("DistributedShell: %w\n%s", err, errOut.String())
	}
	out, _, err := dist.Yarn(ctx, conf, who, "application", "-list", "-appStates", "ALL")
	if err != nil {
		return err
	}
	fmt.Print(out)
	if app := regexp.MustCompile(`application_\d+_\d+`).FindAllString(out, -1); len(app) > 0 {
		// The newest run's first worker; its log outlives its pod.
		sort.Strings(app)
		worker := strings.Replace(app[len(app)-1], "application_", "container_", 1) + "_01_000002"
		url := "http://127.0.0.1:8042/node/containerlogs/" + worker + "/" + who + "/stdout"
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fmt.Printf("%s stdout (%s):\n  %s\n", worker, url, strings.TrimSpace(string(b)))
		}
	}

	kubectl := filepath.Join(kube.Cache(), "bin", "kubectl") + " --kubeconfig " + cluster.Kubeconfig
	rel, err := filepath.Rel(root, conf)
	if err != nil {
		rel = conf
	}
	client := "go run ./test/hadoop/cmd/hadoop-client -conf " + rel
	fmt.Printf(`
Run a job (the client configuration is %[4]s: yarn-site.xml, core-site.xml with fs.defaultFS=%[3]s):
  %[5]s jar examples pi 4 1000
  %[5]s jar examples wordcount /user/%[6]s/in /user/%[6]s/out    (input: %[5]s java org.apache.hadoop.fs.FsShell -put <files> /user/%[6]s/in)
  %[5]s jar distributedshell -num_containers 2 -shell_command 'echo hello from DistributedShell'
  %[5]s spark-submit --master yarn --deploy-mode cluster --class sh.weft.spark.SparkPi examples 10
  %[5]s yarn application -list -appStates ALL
Look:
  REST   http://%[1]s/ws/v1/cluster/apps        UI http://%[1]s/cluster
  pods   %[2]s get pods -n weft-jobs -L weft.io/tier,weft.io/app
  Weft   %[2]s get pods -n weft-system
  logs   http://127.0.0.1:8042/node/containerlogs/<container id>/<user>
HDFS (%[3]s) serves until Ctrl-C; the cluster and Weft stay up until "make stop", which stops all of it.
`, webAddr, kubectl, defaultFS, rel, client, who)
	<-ctx.Done()
	return nil
}

// lending waits for the node plugin's colocation agent to publish what the
// node can lend — at least what the demo's AM and one container take
// (1 vcore each, 250m a vcore) — and prints it: until then weft-rm sees a
// node with nothing to offer, and the job would wait in ACCEPTED. The
// agent takes online use at its peak over the last 30 seconds (the window
// deploy/local.yaml sets), so the building and starting just done still count.
func lending(ctx context.Context, cluster *kube.Cluster, since time.Time) error {
	nodes, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(nodes.Items) != 1 {
		return fmt.Errorf("the local cluster has %d nodes, not 1", len(nodes.Items))
	}
	n := nodes.Items[0]
	l, err := kube.WaitLent(ctx, cluster, n.Name, 500, since, 4*time.Minute)
	if err != nil {
		return err
	}
	cpu := n.Status.Capacity[corev1.ResourceCPU]
	fmt.Printf("   node %s lends %dm CPU and %.1f GiB to batch work (weft.io/reclaimed-cpu, weft.io/reclaimed-memory):\n",
		n.Name, l.MilliCPU, float64(l.Memory)/(1<<30))
	if u := l.Utilization; u != nil {
		fmt.Printf("   its CPU watermark (80%% by default) of its %s CPUs less what the rest of the machine used at its peak (now %dm CPU, %.1f GiB in use);\n",
			cpu.String(), u.NodeMilliCPU-u.BatchMilliCPU, float64(u.NodeMemory-u.BatchMemory)/(1<<30))
	}
	fmt.Println("   every batch pod runs in the big box, the kubelet's BestEffort cgroup, bounded to that much (CFS quota, memory limit)")
	return nil
}

// deploy installs Weft through its Helm chart with deploy/local.yaml (this
// machine's cluster), this machine's Hadoop (installation and
// configuration) added to weft-rm's and the node plugin's arguments, and
// waits for both to be Ready.
func deploy(ctx context.Context, cluster *kube.Cluster, root, conf, home string) error {
	data := map[string]string{}
	for _, f := range []string{"core-site.xml", "yarn-site.xml", "log4j.properties"} {
		b, err := os.ReadFile(filepath.Join(conf, f))
		if err != nil {
			return err
		}
		data[f] = string(b)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hadoop-conf", Namespace: "weft-jobs"}, Data: data}
	objs, err := kube.RenderChart(ctx, []string{kube.LocalValues()})
	if err != nil {
		return err
	}
	// Spark's jars on the node for the printed spark-submit (the client
	// lays its home out under SparkRoot when first run).
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
			c["args"] = append(c["args"].([]any), extra...)
			if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				return err
			}
		}
	}
	if _, err := cluster.Install(ctx, objs, time.Minute); err != nil {
		return err
	}
	cms := cluster.Client.CoreV1().ConfigMaps("weft-jobs")
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	// A changed configuration restarts weft-rm, as kubectl rollout restart.
	for _, kind := range []string{"deployment/weft-rm", "daemonset/weft-nodeplugin"} {
		if _, err := cluster.Kubectl(ctx, "-n", "weft-system", "rollout", "restart", kind); err != nil {
			return err
		}
		if _, err := cluster.Kubectl(ctx, "-n", "weft-system", "rollout", "status", kind, "--timeout=3m"); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", webAddr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("weft-rm does not answer on %s", webAddr)
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

// watch prints the job's pods as they come and go.
func watch(ctx context.Context, cluster *kube.Cluster) {
	seen := map[string]string{}
	for ctx.Err() == nil {
		list, err := cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: translator.Selector(clusterID)})
		if err == nil {
			for _, p := range list.Items {
				state := string(p.Status.Phase)
				if seen[p.Name] != state {
					seen[p.Name] = state
					fmt.Printf("   pod %-45s tier=%-6s %s\n", p.Name, p.Labels[wellknown.LabelTier], state)
				}
			}
		}
		time.Sleep(time.Second)
	}
}
