package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/test/kube/images"
	"github.com/weft-sh/weft/translator"
)

// yarnOnKube is Weft deployed as processes beside a local cluster, the way
// a developer runs it: weft-rm and one node plugin on loopback, pods on the
// cluster's node in its network (YARN's host networking), HDFS a
// MiniDFSCluster, Java and Hadoop the node's own (node-runtime image).
type yarnOnKube struct {
	rm      *RM
	conf    string // client HADOOP_CONF_DIR
	dist    *hadoop.Dist
	plugin  *exec.Cmd
	logs    *bytes.Buffer
	logsMu  *sync.Mutex
	cluster *kube.Cluster
	nmHTTP  string
}

func startYarnOnKube(ctx context.Context, cluster *kube.Cluster, version string) *yarnOnKube {
	GinkgoHelper()
	// Weft's image (the localizer runs from it), rebuilt when changed.
	Expect(buildWeftImage(ctx)).To(Succeed())

	mini, err := hadoop.MiniCluster(ctx, "3.4.1")
	Expect(err).NotTo(HaveOccurred())
	work := GinkgoT().TempDir()
	dfs, err := mini.StartService(ctx, work, "sh.weft.interop.MiniDFS", filepath.Join(work, "dfs"))
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(dfs.Stop)
	defaultFS := dfs.Ready[0]

	dist, err := hadoop.Client(ctx, version)
	Expect(err).NotTo(HaveOccurred())
	home, err := dist.Home()
	Expect(err).NotTo(HaveOccurred())

	client, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	sched, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	web, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	nm, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	nmPort := nm[strings.LastIndexByte(nm, ':')+1:]
	nmHTTP, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	nmHTTPPort := nmHTTP[strings.LastIndexByte(nmHTTP, ':')+1:]
	shuffleAddr, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	conf := filepath.Join(work, "conf")
	Expect(hadoop.WriteConfWithFS(conf, client, sched, web, defaultFS)).To(Succeed())

	// The containers' HADOOP_CONF_DIR: the same site files, as a ConfigMap.
	ns := "weft-jobs"
	data := map[string]string{}
	for _, f := range []string{"core-site.xml", "yarn-site.xml", "mapred-site.xml", "log4j.properties", "container-log4j.properties"} {
		b, err := os.ReadFile(filepath.Join(conf, f))
		Expect(err).NotTo(HaveOccurred())
		data[f] = string(b)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hadoop-conf-" + version, Namespace: ns}, Data: data}
	_ = cluster.Client.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	_, err = cluster.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	key := filepath.Join(work, "nm-master.key")
	// Its own cluster id: a Weft deployed in the cluster may share the namespace.
	runtimeFlags := []string{"--kubeconfig", cluster.Kubeconfig, "--namespace", ns, "--cluster-id", "e2e-" + filepath.Base(work),
		"--container-image", images.NodeRuntimeRef, "--java-home", "/usr/lib/jvm/java-17-openjdk-amd64",
		"--host-path", "/usr", "--host-path", "/etc/java-17-openjdk", "--host-path", home, "--hadoop-home", home, "--hadoop-conf-configmap", cm.Name,
		"--milli-cpu-per-vcore", "250", "--localizer-image", images.WeftRef, "--localizer-cache-dir", filepath.Join(work, "filecache"), "--nm-key-file", key,
		"--container-log-root", filepath.Join(work, "container-logs"), "--container-local-root", filepath.Join(work, "container-local")}
	r := &RM{Bin: filepath.Join(binDir, "weft-rm"), DataDir: filepath.Join(work, "rm"), ClientAddr: client, SchedulerAddr: sched, WebAddr: web,
		Args: append([]string{"--local-node=false", "--nm-port", nmPort, "--nm-http-port", nmHTTPPort, "--log-level", "DEBUG"}, runtimeFlags...)}
	Expect(r.Start(ctx)).To(Succeed())
	y := &yarnOnKube{rm: r, conf: conf, dist: dist, logs: &bytes.Buffer{}, logsMu: &sync.Mutex{}, cluster: cluster, nmHTTP: nmHTTP}
	y.plugin = exec.Command(filepath.Join(binDir, "weft-nodeplugin"), append([]string{"--address", nm, "--http-address", nmHTTP, "--shuffle-address", shuffleAddr}, runtimeFlags...)...)
	y.plugin.Stdout = &lockedWriter{mu: y.logsMu, w: y.logs}
	y.plugin.Stderr = y.plugin.Stdout
	Expect(y.plugin.Start()).To(Succeed())
	DeferCleanup(func() {
		r.Stop()
		y.plugin.Process.Signal(os.Interrupt)
		y.plugin.Wait()
		if CurrentSpecReport().Failed() {
			y.logsMu.Lock()
			GinkgoWriter.Printf("weft-rm logs:\n%s\nweft-nodeplugin logs:\n%s\n", r.Logs(), y.logs.String())
			y.logsMu.Unlock()
		}
	})
	return y
}

// buildWeftImage builds Weft's image and imports it into the local
// node's containerd when it changed.
func buildWeftImage(ctx context.Context) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	imgs := exec.CommandContext(ctx, "go", "run", "./test/kube/cmd/kube-images", "-address", kube.ContainerdAddress(),
		"-dir", filepath.Join(kube.Cache(), "kube", "images"), "-weft")
	imgs.Dir = root
	if out, err := imgs.CombinedOutput(); err != nil {
		return fmt.Errorf("kube-images: %v\n%s", err, out)
	}
	return nil
}

// watchPods records every pod of an application seen while it runs (they are
// removed when it finishes).
func (y *yarnOnKube) watchPods(ctx context.Context, app func() string) (stop func() map[string]corev1.Pod) {
	seen := map[string]corev1.Pod{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		for {
			select {
			case <-done:
				return
			case <-time.After(300 * time.Millisecond):
			}
			id := app()
			if id == "" {
				continue
			}
			list, err := y.cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: translator.LabelApp + "=" + id})
			if err != nil {
				continue
			}
			mu.Lock()
			for _, p := range list.Items {
				seen[p.Name] = p
			}
			mu.Unlock()
		}
	}()
	return func() map[string]corev1.Pod {
		close(done)
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// amSyslog is the end of an application's AM log, fetched as a user
// would: through the RM's amContainerLogs link.
func (y *yarnOnKube) amSyslog(name string) string {
	resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps/" + y.appByName(name))
	if err != nil {
		return ""
	}
	var info struct {
		App struct{ AMContainerLogs string }
	}
	json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	r, err := http.Get(info.App.AMContainerLogs + "/syslog?start=-30000")
	if err != nil {
		return ""
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return "\nAM syslog:\n" + string(b)
}

// appByName finds an application's id by name through the REST API.
func (y *yarnOnKube) appByName(name string) string {
	resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var body struct {
		Apps struct {
			App []struct{ ID, Name string }
		}
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return ""
	}
	for _, a := range body.Apps.App {
		if a.Name == name {
			return a.ID
		}
	}
	return ""
}

// distShell runs DistributedShell's client, named name, and returns its
// exit error and output.
func (y *yarnOnKube) distShell(ctx context.Context, name string, args ...string) (error, string) {
	jar, err := y.dist.Jar("hadoop-yarn-applications-distributedshell-")
	Expect(err).NotTo(HaveOccurred())
	cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.yarn.applications.distributedshell.Client",
		append([]string{"-jar", jar, "-appname", name, "-master_memory", "512", "-container_memory", "256", "-timeout", "240000"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return err, out.String()
}

func (y *yarnOnKube) appPods(ctx context.Context, app string) []corev1.Pod {
	list, err := y.cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: translator.LabelApp + "=" + app})
	Expect(err).NotTo(HaveOccurred())
	return list.Items
}

var _ = Describe("YARN applications on Weft and a local cluster", Ordered, func() {
	var y *yarnOnKube
	BeforeAll(func(ctx SpecContext) {
		cluster, err := kube.Up(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kube.Down)
		root, err := repoRoot()
		Expect(err).NotTo(HaveOccurred())
		_, err = cluster.Apply(ctx, filepath.Join(root, "deploy", "base", "namespaces.yaml"),
			filepath.Join(root, "deploy", "profiles", "plain", "priorityclasses.yaml"))
		Expect(err).NotTo(HaveOccurred())
		y = startYarnOnKube(ctx, cluster, "3.4.1")
	}, NodeTimeout(20*time.Minute))

	It("runs DistributedShell -num_containers 4 to SUCCEEDED, each container a pod of its tier", func(ctx SpecContext) {
		stop := y.watchPods(ctx, func() string { return y.appByName("ds-four") })
		err, out := y.distShell(ctx, "ds-four", "-num_containers", "4", "-shell_command", "hostname; sleep 3")
		pods := stop()
		Expect(err).NotTo(HaveOccurred(), out)
		// The client exits 0 only when the application SUCCEEDED; the yarn
		// CLI confirms it from the RM.
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", y.appByName("ds-four"))
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(status).To(MatchRegexp(`State\s*:\s*FINISHED`))

		tiers := map[string]int{}
		for _, p := range pods {
			tiers[p.Labels[translator.LabelTier]]++
			Expect(p.Labels).To(HaveKeyWithValue(translator.LabelUser, "alice"))
			Expect(p.Labels).To(HaveKeyWithValue(translator.LabelQueue, "default"))
			Expect(p.Labels).To(HaveKey(translator.LabelAttempt))
			Expect(p.Spec.PriorityClassName).To(Equal("weft-" + p.Labels[translator.LabelTier]))
			Expect(p.Spec.Containers[0].Resources.Requests.Memory().Value()).To(BeNumerically(">=", 256<<20))
		}
		// The AM high; one worker the job's minimum (medium), three elastic (low).
		Expect(tiers).To(Equal(map[string]int{"high": 1, "medium": 1, "low": 3}), fmt.Sprint(pods))

		// Logs outlive the pods: the RM links the AM's, the node serves
		// every container's, as a NodeManager does.
		app := y.appByName("ds-four")
		get := func(url string) string {
			resp, err := http.Get(url)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			Expect(resp.StatusCode).To(Equal(http.StatusOK), string(b))
			return string(b)
		}
		var info struct {
			App struct{ AMContainerLogs string }
		}
		Expect(json.Unmarshal([]byte(get("http://"+y.rm.WebAddr+"/ws/v1/cluster/apps/"+app)), &info)).To(Succeed())
		Expect(info.App.AMContainerLogs).To(ContainSubstring("/node/containerlogs/container_"))
		Expect(get(info.App.AMContainerLogs)).To(ContainSubstring("AppMaster.stderr"))
		Expect(get(info.App.AMContainerLogs + "/AppMaster.stderr")).To(ContainSubstring("distributedshell.ApplicationMaster"))
		// A worker's files (its command, "hostname; sleep 3", sends only
		// sleep's output there, as under a NodeManager).
		worker := strings.Replace(app, "application_", "container_", 1) + "_01_000002"
		var listing struct {
			ContainerLogsInfo struct{ ContainerLogInfo []struct{ FileName string } }
		}
		Expect(json.Unmarshal([]byte(get("http://"+y.nmHTTP+"/ws/v1/node/containers/"+worker+"/logs")), &listing)).To(Succeed())
		Expect(listing.ContainerLogsInfo.ContainerLogInfo).To(ContainElements(
			HaveField("FileName", "stdout"), HaveField("FileName", "stderr")))
	}, SpecTimeout(10*time.Minute)) // the first spec also runs the BeforeAll

	It("runs an unmodified MapReduce job (teragen, maps only) to SUCCEEDED", func(ctx SpecContext) {
		ex, err := y.dist.Jar("hadoop-mapreduce-examples-")
		Expect(err).NotTo(HaveOccurred())
		cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.util.RunJar", ex, "teragen",
			"-Dmapreduce.job.maps=2", "20000", "/user/alice/teragen")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		if err != nil {
			out.WriteString(y.amSyslog("TeraGen"))
		}
		Expect(err).NotTo(HaveOccurred(), out.String())
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", y.appByName("TeraGen"))
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(status).To(MatchRegexp(`Application-Type\s*:\s*MAPREDUCE`))
		ls, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-ls", "/user/alice/teragen")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(ls).To(ContainSubstring("_SUCCESS"))
		Expect(ls).To(ContainSubstring("part-m-00001"))
	}, SpecTimeout(6*time.Minute))

	It("runs an unmodified MapReduce job with a shuffle (pi: 2 maps, 1 reduce) to its result", func(ctx SpecContext) {
		ex, err := y.dist.Jar("hadoop-mapreduce-examples-")
		Expect(err).NotTo(HaveOccurred())
		cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.util.RunJar", ex, "pi", "2", "1000")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		if err != nil {
			out.WriteString(y.amSyslog("QuasiMonteCarlo"))
		}
		Expect(err).NotTo(HaveOccurred(), out.String())
		// The reducer fetched both maps' output from the node's shuffle
		// service and summed it: pi is estimated, as on a real cluster.
		Expect(out.String()).To(MatchRegexp(`Estimated value of Pi is 3\.1\d*`))
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", y.appByName("QuasiMonteCarlo"))
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
	}, SpecTimeout(6*time.Minute))

	It("removes a running DistributedShell's pods within seconds of yarn application -kill", func(ctx SpecContext) {
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			y.distShell(ctx, "ds-kill", "-num_containers", "2", "-shell_command", "sleep 300")
		}()
		var app string
		Eventually(func(g Gomega) {
			app = y.appByName("ds-kill")
			g.Expect(app).NotTo(BeEmpty())
			running := 0
			for _, p := range y.appPods(ctx, app) {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			g.Expect(running).To(Equal(3)) // the AM and both containers
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		_, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-kill", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		killed := time.Now()
		Eventually(func() []corev1.Pod { return y.appPods(ctx, app) }).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(BeEmpty())
		GinkgoWriter.Printf("pods of %s gone %v after the kill\n", app, time.Since(killed))
		Eventually(done).WithTimeout(time.Minute).Should(BeClosed())
	}, SpecTimeout(5*time.Minute))

	It("gives an AM that exits non-zero a second attempt, then fails the application with its diagnostics", func(ctx SpecContext) {
		for _, c := range []struct {
			maxAttempts string
			attempts    int
		}{{"2", 2}, {"1", 1}} {
			out, errOut, err := y.dist.Run(ctx, y.conf, "alice", "sh.weft.interop.SubmitApp", "--name", "failing-am-"+c.maxAttempts,
				"--am-memory", "256", "--max-attempts", c.maxAttempts,
				"--command", "echo AM-failed-on-purpose 2><LOG_DIR>/stderr 1>&2; exit 3")
			Expect(err).NotTo(HaveOccurred(), errOut)
			var s submitted
			Expect(json.Unmarshal([]byte(out), &s)).To(Succeed())
			Eventually(func() string {
				status, _, _ := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", s.ApplicationID)
				return status
			}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(MatchRegexp(`Final-State\s*:\s*FAILED`))
			status, _, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", s.ApplicationID)
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(ContainSubstring("exitCode: 3"))
			Expect(status).To(ContainSubstring("AM-failed-on-purpose"))
			Expect(status).To(ContainSubstring(fmt.Sprintf("failed %d times", c.attempts)))
			attempts, _, err := y.dist.Yarn(ctx, y.conf, "alice", "applicationattempt", "-list", s.ApplicationID)
			Expect(err).NotTo(HaveOccurred())
			Expect(strings.Count(attempts, "appattempt_")).To(Equal(c.attempts), attempts)
		}
	}, SpecTimeout(6*time.Minute))
})
