package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// yarnOnKube is WeftOnKube in a spec.
type yarnOnKube struct {
	*WeftOnKube
	rm      *RM
	conf    string // client HADOOP_CONF_DIR
	dist    *hadoop.Dist
	cluster *kube.Cluster
	nmHTTP  string
	dfsDir  string // the MiniDFSCluster's base directory
}

func startYarnOnKube(ctx context.Context, cluster *kube.Cluster, version string, rmArgs ...string) *yarnOnKube {
	GinkgoHelper()
	// Weft's image (the localizer runs from it), rebuilt when changed.
	Expect(BuildWeftImage(ctx)).To(Succeed())
	return startYarn(ctx, WeftOnKubeOptions{Cluster: cluster, Version: version, RMArgs: rmArgs})
}

// startYarn starts Weft with opts (in the spec's temporary directory,
// from the suite's binaries), stopped when the container ends.
func startYarn(ctx context.Context, opts WeftOnKubeOptions) *yarnOnKube {
	GinkgoHelper()
	opts.Work, opts.BinDir = GinkgoT().TempDir(), binDir
	w, err := StartWeftOnKube(ctx, opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		report := ""
		if CurrentSpecReport().Failed() {
			report = w.PodReport() // before Stop deletes the pods
		}
		w.Stop()
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("weft-rm logs:\n%s\nweft-nodeplugin logs:\n%s\n%s", w.RM.Logs(), w.PluginLogs(), report)
		}
	})
	return &yarnOnKube{WeftOnKube: w, rm: w.RM, conf: w.Conf, dist: w.Dist, cluster: opts.Cluster, nmHTTP: w.NMHTTP, dfsDir: w.DFSDir}
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
			list, err := y.cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelApp + "=" + id})
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
// would: through the RM's amContainerLogs link; empty if it cannot be had
// (it is for failure messages).
func (y *yarnOnKube) amSyslog(name string) string {
	b, err := y.fetchAMLog(y.appByName(name), "syslog", "start=-30000")
	if err != nil {
		return ""
	}
	return "\nAM syslog:\n" + b
}

// amLog reads one file of an application's AM container logs, whole,
// through the RM's amContainerLogs link.
func (y *yarnOnKube) amLog(app, file string) string {
	GinkgoHelper()
	b, err := y.fetchAMLog(app, file, "start=0")
	Expect(err).NotTo(HaveOccurred())
	return b
}

// fetchAMLog follows the RM's amContainerLogs link of app to one of its
// files, with query (the NodeManager's start=... byte range).
func (y *yarnOnKube) fetchAMLog(app, file, query string) (string, error) {
	resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps/" + app)
	if err != nil {
		return "", err
	}
	var info struct {
		App struct{ AMContainerLogs string }
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	if err != nil {
		return "", fmt.Errorf("application %s: %w", app, err)
	}
	url := info.App.AMContainerLogs + "/" + file + "?" + query
	r, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	if r.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, r.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// appByName finds an application's id by name through the REST API: the
// newest of that name.
func (y *yarnOnKube) appByName(name string) string {
	newest := ""
	for _, id := range y.appsNamed(name) {
		if len(id) > len(newest) || len(id) == len(newest) && id > newest {
			newest = id
		}
	}
	return newest
}

// appsNamed are the ids of the applications of a name, through the REST
// API.
func (y *yarnOnKube) appsNamed(name string) []string {
	resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Apps struct {
			App []struct{ ID, Name string }
		}
	}
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	var out []string
	for _, a := range body.Apps.App {
		if a.Name == name {
			out = append(out, a.ID)
		}
	}
	return out
}

// distShell runs DistributedShell's client, named name, and returns its
// exit error and output.
func (y *yarnOnKube) distShell(ctx context.Context, name string, args ...string) (error, string) {
	return y.distShellIn(ctx, "default", name, args...)
}

// sleepingDistShell starts a DistributedShell named name whose two
// containers sleep for 5 minutes, and returns once its AM and both
// containers run: its application, and a channel closed when its client
// exits.
func (y *yarnOnKube) sleepingDistShell(ctx context.Context, name string) (string, <-chan struct{}) {
	GinkgoHelper()
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		y.distShell(ctx, name, "-num_containers", "2", "-shell_command", "sleep 300")
	}()
	return y.waitRunning(ctx, name, 3), done
}

// distShellIn is distShell submitting to queue.
func (y *yarnOnKube) distShellIn(ctx context.Context, queue, name string, args ...string) (error, string) {
	jar, err := y.dist.Jar("hadoop-yarn-applications-distributedshell-")
	Expect(err).NotTo(HaveOccurred())
	cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.yarn.applications.distributedshell.Client",
		append([]string{"-jar", jar, "-appname", name, "-queue", queue, "-master_memory", "512", "-container_memory", "256", "-timeout", "240000"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return err, out.String()
}

// mapReduce runs `hadoop jar hadoop-mapreduce-examples-<v>.jar args...`
// (its application named name) and returns its output; it fails the spec,
// with the AM's log, unless the job succeeds.
func (y *yarnOnKube) mapReduce(ctx context.Context, name string, args ...string) string {
	GinkgoHelper()
	ex, err := y.dist.Jar("hadoop-mapreduce-examples-")
	Expect(err).NotTo(HaveOccurred())
	cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.util.RunJar", append([]string{ex}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		out.WriteString(y.amSyslog(name))
		Fail(fmt.Sprintf("hadoop jar %s: %v\n%s", strings.Join(args, " "), err, out.String()))
	}
	return out.String()
}

// submitUntilFailed submits an application with the harness's SubmitApp
// (YarnClient) and waits until it FAILED; it returns its id and
// `yarn application -status`.
func (y *yarnOnKube) submitUntilFailed(ctx context.Context, args ...string) (app, status string) {
	GinkgoHelper()
	out, errOut, err := y.dist.Run(ctx, y.conf, "alice", "sh.weft.interop.SubmitApp", args...)
	Expect(err).NotTo(HaveOccurred(), errOut)
	var s submitted
	Expect(json.Unmarshal([]byte(out), &s)).To(Succeed())
	Eventually(func() string {
		status, _, _ := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", s.ApplicationID)
		return status
	}).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(MatchRegexp(`Final-State\s*:\s*FAILED`), strings.Join(args, " "))
	status, _, err = y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", s.ApplicationID)
	Expect(err).NotTo(HaveOccurred())
	return s.ApplicationID, status
}

// waitRunning waits until the application named name has n pods running
// and returns its id; it stops early with what abort returns, if that is
// not nil (the client exited).
func (y *yarnOnKube) waitRunning(ctx context.Context, name string, n int, abort ...func() error) string {
	GinkgoHelper()
	var app string
	Eventually(func(g Gomega) {
		for _, a := range abort {
			if err := a(); err != nil {
				StopTrying(err.Error()).Now()
			}
		}
		app = y.appByName(name)
		g.Expect(app).NotTo(BeEmpty())
		g.Expect(y.runningPods(ctx, app)).To(Equal(n), func() string { return y.describePods(ctx) })
	}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return app
}

// describePods is, for a failure message, this Weft's pods (phase, tier,
// why not running) and every other pod not ended, with what it requests.
func (y *yarnOnKube) describePods(ctx context.Context) string {
	var b strings.Builder
	b.WriteString(y.PodReport())
	others, err := y.cluster.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		return b.String() + err.Error()
	}
	b.WriteString("other pods not ended:\n")
	for _, p := range others.Items {
		if _, ours := translator.ContainerOf(&p, y.clusterID); ours {
			continue
		}
		var cpu resource.Quantity
		for _, c := range p.Spec.Containers {
			cpu.Add(*c.Resources.Requests.Cpu())
		}
		fmt.Fprintf(&b, "  %s/%s %s on %q cpu=%s deleting=%v\n", p.Namespace, p.Name, p.Status.Phase, p.Spec.NodeName, cpu.String(), p.DeletionTimestamp != nil)
	}
	return b.String()
}

// runningPods counts an application's pods that are running.
func (y *yarnOnKube) runningPods(ctx context.Context, app string) int {
	running := 0
	for _, p := range y.appPods(ctx, app) {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return running
}

func (y *yarnOnKube) appPods(ctx context.Context, app string) []corev1.Pod {
	list, err := y.cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelApp + "=" + app})
	Expect(err).NotTo(HaveOccurred())
	return list.Items
}

// clusterForJobs brings the local cluster up (down when the container
// ends) with Weft's namespaces and the plain profile's PriorityClasses.
func clusterForJobs(ctx context.Context) *kube.Cluster {
	GinkgoHelper()
	cluster, err := kube.Up(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(kube.Down)
	root, err := repoRoot()
	Expect(err).NotTo(HaveOccurred())
	_, err = cluster.Apply(ctx, filepath.Join(root, "deploy", "base", "namespaces.yaml"),
		filepath.Join(root, "deploy", "profiles", "plain", "priorityclasses.yaml"))
	Expect(err).NotTo(HaveOccurred())
	return cluster
}

var _ = Describe("YARN applications on Weft and a local cluster", Ordered, func() {
	var y *yarnOnKube
	BeforeAll(func(ctx SpecContext) {
		y = startYarnOnKube(ctx, clusterForJobs(ctx), "3.4.1")
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
			tiers[p.Labels[wellknown.LabelTier]]++
			Expect(p.Labels).To(HaveKeyWithValue(wellknown.LabelUser, "alice"))
			Expect(p.Labels).To(HaveKeyWithValue(wellknown.LabelQueue, "default"))
			Expect(p.Labels).To(HaveKey(wellknown.LabelAttempt))
			Expect(p.Spec.PriorityClassName).To(Equal("weft-" + p.Labels[wellknown.LabelTier]))
			Expect(p.Spec.Containers[0].Resources.Requests.Memory().Value()).To(BeNumerically(">=", 256<<20))
		}
		// The AM high; one worker the job's minimum (medium), three elastic (low).
		Expect(tiers).To(Equal(map[string]int{"high": 1, "medium": 1, "low": 3}), fmt.Sprint(pods))
		// Weft's scheduler placed the AM in its cycle (kube-scheduler does
		// not bind pods naming another scheduler); the rest were granted in
		// the AM's allocate calls and made on their node.
		for _, p := range pods {
			if p.Labels[wellknown.LabelTier] == "high" {
				Expect(p.Spec.SchedulerName).To(Equal(podbinder.DefaultSchedulerName), p.Name)
			}
		}

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

	It("binds pods that name weft-scheduler by their queue label, and tells one naming no queue why it waits", func(ctx SpecContext) {
		expectWeftSchedulesPods(ctx, y.cluster)
	}, SpecTimeout(4*time.Minute))

	It("runs wordcount over files in HDFS and the output equals counts computed here", func(ctx SpecContext) {
		want := y.wordsInHDFS(ctx, "/user/alice/wc-in", 3)
		y.mapReduce(ctx, "word count", "wordcount", "-Dmapreduce.job.reduces=2", "/user/alice/wc-in", "/user/alice/wc-out")
		Expect(y.wordCounts(ctx, "/user/alice/wc-out")).To(Equal(want))
	}, SpecTimeout(8*time.Minute))

	It("runs an unmodified MapReduce job with a shuffle (pi 4 1000) and prints an estimate; its progress, usage and attempt read as a real RM's", func(ctx SpecContext) {
		// While it runs, REST shows what its AM reports of its progress.
		type appInfo struct {
			App struct {
				State, FinalStatus, TrackingURL string
				Progress                        float64
				MemorySeconds, VcoreSeconds     int64
				RunningContainers               int64
			}
		}
		read := func(app string) (appInfo, error) {
			var info appInfo
			resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps/" + app)
			if err != nil {
				return info, err
			}
			defer resp.Body.Close()
			return info, json.NewDecoder(resp.Body).Decode(&info)
		}
		var progressed atomic.Bool
		watching, stopWatching := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for watching.Err() == nil {
				if app := y.appByName("QuasiMonteCarlo"); app != "" {
					if info, err := read(app); err == nil && info.App.State == "RUNNING" && info.App.Progress > 0 && info.App.Progress < 100 {
						progressed.Store(true)
					}
				}
				select {
				case <-watching.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
		}()
		out := y.mapReduce(ctx, "QuasiMonteCarlo", "pi", "4", "1000")
		stopWatching()
		<-watched
		// The reducer fetched the maps' output from the node's shuffle
		// service and summed it: pi is estimated, as on a real cluster.
		Expect(out).To(MatchRegexp(`Estimated value of Pi is 3\.1\d*`))
		app := y.appByName("QuasiMonteCarlo")
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(progressed.Load()).To(BeTrue(), "REST never showed the running job's progress between 0 and 100")
		// Ended, it holds nothing: no container is left RUNNING, and its
		// usage stays where it ended.
		Eventually(func() string {
			info, err := read(app)
			if err != nil {
				return err.Error()
			}
			return info.App.State
		}).WithTimeout(time.Minute).Should(Equal("FINISHED"))
		// The CLI's Tracking-URL (the report's original tracking URL) is
		// the history the AM named when it unregistered; the report's
		// tracking URL, as REST's, the RM's proxy.
		status, errOut, err = y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Tracking-URL\s*:\s*\S*/jobhistory/job/job_`))
		done, err := read(app)
		Expect(err).NotTo(HaveOccurred())
		Expect(done.App.TrackingURL).To(Equal("http://" + y.rm.WebAddr + "/proxy/" + app + "/"))
		attempt := strings.Replace(app, "application_", "appattempt_", 1) + "_000001"
		containers, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "container", "-list", attempt)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(containers).To(ContainSubstring("container_"))
		Expect(containers).NotTo(ContainSubstring("RUNNING"))
		first, err := read(app)
		Expect(err).NotTo(HaveOccurred())
		Expect(first.App.MemorySeconds).To(BeNumerically(">", 0))
		time.Sleep(3 * time.Second)
		second, err := read(app)
		Expect(err).NotTo(HaveOccurred())
		Expect([]int64{second.App.MemorySeconds, second.App.VcoreSeconds}).To(Equal([]int64{first.App.MemorySeconds, first.App.VcoreSeconds}),
			"usage still growing after the end")
		// Its attempt names where its AM ran and links its logs.
		var attempts struct {
			AppAttempts struct {
				AppAttempt []struct{ NodeID, NodeHTTPAddress, LogsLink string }
			}
		}
		getJSON("http://"+y.rm.WebAddr+"/ws/v1/cluster/apps/"+app+"/appattempts", &attempts)
		Expect(attempts.AppAttempts.AppAttempt).To(HaveLen(1))
		Expect(attempts.AppAttempts.AppAttempt[0].NodeID).NotTo(BeEmpty())
		Expect(attempts.AppAttempts.AppAttempt[0].LogsLink).To(ContainSubstring("/node/containerlogs/container_"))
	}, SpecTimeout(6*time.Minute))

	sparkSpecs(func() *yarnOnKube { return y })
	recoverySpecs(func() *yarnOnKube { return y })
	localizationSpecs(func() *yarnOnKube { return y })

	It("removes a running DistributedShell's pods within seconds of yarn application -kill", func(ctx SpecContext) {
		app, done := y.sleepingDistShell(ctx, "ds-kill")
		_, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-kill", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		killed := time.Now()
		Eventually(func() []corev1.Pod { return y.appPods(ctx, app) }).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(BeEmpty())
		GinkgoWriter.Printf("pods of %s gone %v after the kill\n", app, time.Since(killed))
		Eventually(done).WithTimeout(time.Minute).Should(BeClosed())
		// The node cleans up after it, as a NodeManager does: the
		// application's local directories (and shuffle token) go; its
		// logs stay for their retention.
		Eventually(func() []string {
			dirs, _ := filepath.Glob(filepath.Join(y.LocalRoot, "usercache", "*", "appcache", app))
			return dirs
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty())
		Expect(filepath.Join(y.LogRoot, app)).To(BeADirectory())
	}, SpecTimeout(5*time.Minute))

	It("shows a running DistributedShell on every web UI page, as headless Chromium renders them", func(ctx SpecContext) {
		app, done := y.sleepingDistShell(ctx, "ds-ui")
		checkUIInBrowser(ctx, y.rm.WebAddr, app)
		_, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-kill", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Eventually(done).WithTimeout(time.Minute).Should(BeClosed())
	}, SpecTimeout(5*time.Minute))

	It("gives an AM that exits non-zero a second attempt, then fails the application with its diagnostics", func(ctx SpecContext) {
		for _, c := range []struct {
			maxAttempts string
			attempts    int
		}{{"2", 2}, {"1", 1}} {
			app, status := y.submitUntilFailed(ctx, "--name", "failing-am-"+c.maxAttempts, "--am-memory", "256", "--max-attempts", c.maxAttempts,
				"--command", "echo AM-failed-on-purpose 2><LOG_DIR>/stderr 1>&2; exit 3")
			Expect(status).To(ContainSubstring("exitCode: 3"))
			Expect(status).To(ContainSubstring("AM-failed-on-purpose"))
			Expect(status).To(ContainSubstring(fmt.Sprintf("failed %d times", c.attempts)))
			attempts, _, err := y.dist.Yarn(ctx, y.conf, "alice", "applicationattempt", "-list", app)
			Expect(err).NotTo(HaveOccurred())
			Expect(strings.Count(attempts, "appattempt_")).To(Equal(c.attempts), attempts)
		}
	}, SpecTimeout(6*time.Minute))
})

// wordsInHDFS writes files of words (2,000 and more each) into dir on
// HDFS and returns how often each word occurs in them, as wordcount must
// count it.
func (y *yarnOnKube) wordsInHDFS(ctx context.Context, dir string, files int) map[string]int {
	GinkgoHelper()
	words := strings.Fields("weft yarn kubernetes hadoop spark shuffle reclaimed queue tier node pod")
	want := map[string]int{}
	local := GinkgoT().TempDir()
	var paths []string
	for f := 0; f < files; f++ {
		var b strings.Builder
		for i := 0; i < 2000+f*500; i++ {
			w := words[(i*7+f*3+i/len(words))%len(words)]
			if i%13 == 0 {
				w = fmt.Sprintf("%s-%d", w, f)
			}
			want[w]++
			b.WriteString(w)
			if i%10 == 9 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
		p := filepath.Join(local, fmt.Sprintf("words-%d.txt", f))
		Expect(os.WriteFile(p, []byte(b.String()), 0o644)).To(Succeed())
		paths = append(paths, p)
	}
	_, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-mkdir", "-p", dir)
	Expect(err).NotTo(HaveOccurred(), errOut)
	_, errOut, err = y.dist.Hadoop(ctx, y.conf, "alice", append(append([]string{"fs", "-put"}, paths...), dir)...)
	Expect(err).NotTo(HaveOccurred(), errOut)
	return want
}

// wordCounts reads wordcount's output in dir.
func (y *yarnOnKube) wordCounts(ctx context.Context, dir string) map[string]int {
	GinkgoHelper()
	out, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-cat", dir+"/part-r-*")
	Expect(err).NotTo(HaveOccurred(), errOut)
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var w string
		var n int
		_, err := fmt.Sscanf(line, "%s\t%d", &w, &n)
		Expect(err).NotTo(HaveOccurred(), line)
		got[w] += n
	}
	return got
}
