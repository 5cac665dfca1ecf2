package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/weft-sh/weft/test/hadoop"
)

// killRM kills weft-rm outright while a job runs, keeps it down for a few
// seconds (the AMs' calls fail meanwhile and are retried by their
// clients), and starts it again over the same data directory and ports,
// as Kubernetes restarts a crashed container.
func (y *yarnOnKube) killRM(ctx context.Context) {
	GinkgoHelper()
	Expect(y.rm.Kill()).To(Succeed())
	time.Sleep(3 * time.Second)
	Expect(y.rm.Start(ctx)).To(Succeed())
}

// attempts counts an application's attempts, by the yarn CLI.
func (y *yarnOnKube) attempts(ctx context.Context, app string) int {
	GinkgoHelper()
	out, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "applicationattempt", "-list", app)
	Expect(err).NotTo(HaveOccurred(), errOut)
	return len(regexp.MustCompile(`appattempt_\d+_\d+_\d+`).FindAllString(out, -1))
}

// recoverySpecs are work-preserving restart's specs, run in the ordered
// YARN applications container (y is set by its BeforeAll).
func recoverySpecs(yarn func() *yarnOnKube) {
	It("keeps a MapReduce job through kill -9 of weft-rm: same application, one attempt, no task lost, SUCCEEDED", func(ctx SpecContext) {
		y := yarn()
		// Two maps of 30 s, then a reducer the AM asks for only after the
		// restart: the resynced AM must be heard.
		job := y.sleepJob(ctx, "-m", "2", "-r", "1", "-mt", "30000", "-rt", "1000")
		app := job.waitRunning(ctx, y, 3)
		// While it runs, REST reports what it holds, as a 3.4 RM does.
		var report struct {
			App struct {
				RunningContainers       int32
				AllocatedMB             int64
				MemorySeconds           int64
				TrackingUI, TrackingURL string
			}
		}
		resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps/" + app)
		Expect(err).NotTo(HaveOccurred())
		Expect(json.NewDecoder(resp.Body).Decode(&report)).To(Succeed())
		resp.Body.Close()
		Expect(report.App.RunningContainers).To(BeNumerically(">=", 3))
		Expect(report.App.AllocatedMB).To(BeNumerically(">=", 768+2*512))
		Expect(report.App.TrackingUI).To(Equal("ApplicationMaster"))
		Expect(report.App.TrackingURL).To(Equal("http://" + y.rm.WebAddr + "/proxy/" + app + "/"))

		before := map[string]types.UID{}
		for _, p := range y.appPods(ctx, app) {
			before[p.Name] = p.UID
		}
		y.killRM(ctx)
		// The restarted RM reconciles with the pods it finds: the AM and
		// the maps keep running in the same pods, none restarted.
		time.Sleep(5 * time.Second)
		after := map[string]types.UID{}
		for _, p := range y.appPods(ctx, app) {
			after[p.Name] = p.UID
			for _, cs := range p.Status.ContainerStatuses {
				Expect(cs.RestartCount).To(BeZero(), p.Name)
			}
		}
		Expect(after).To(Equal(before))
		Expect(job.wait()).To(Succeed(), job.output()+"\nweft-rm:\n"+y.rm.Logs())

		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(y.attempts(ctx, app)).To(Equal(1), "the AM was not restarted")
		// No task was run twice: the node started the two maps and the
		// reducer, nothing more.
		Expect(strings.Count(y.PluginLogs(), `msg="container started" container=container_`+strings.TrimPrefix(app, "application_"))).
			To(Equal(3), y.PluginLogs())
		Expect(y.rm.Logs()).To(ContainSubstring("resync=true"), "the AM re-registered with the restarted RM")
	}, SpecTimeout(8*time.Minute))

	It("keeps a wordcount through kill -9 of weft-rm while its maps run: same application, one attempt, no container restarted, the counts right", func(ctx SpecContext) {
		y := yarn()
		want := y.wordsInHDFS(ctx, "/user/alice/wc-restart-in", 4)
		ex, err := y.dist.Jar("hadoop-mapreduce-examples-")
		Expect(err).NotTo(HaveOccurred())
		job := y.startJob(ctx, "word count", y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.util.RunJar", ex,
			"wordcount", "-Dmapreduce.job.reduces=2", "/user/alice/wc-restart-in", "/user/alice/wc-restart-out"))
		// weft-rm goes down once the AM runs with its first maps: what the
		// maps finish, and the reducers the AM asks for, meet a restarted
		// RM.
		app := job.waitPods(ctx, y, BeNumerically(">=", 2), 500*time.Millisecond) // the AM and a map running
		y.killRM(ctx)

		Expect(job.wait()).To(Succeed(), job.output()+"\nweft-rm:\n"+y.rm.Logs())
		Expect(job.app(y)).To(Equal(app), "the same application")
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(y.attempts(ctx, app)).To(Equal(1), "the AM was not restarted")
		for _, p := range y.appPods(ctx, app) {
			for _, cs := range p.Status.ContainerStatuses {
				Expect(cs.RestartCount).To(BeZero(), p.Name)
			}
		}
		Expect(y.wordCounts(ctx, "/user/alice/wc-restart-out")).To(Equal(want))
	}, SpecTimeout(8*time.Minute))

	It("keeps a TeraSort through kill -9 of the node plugin in its shuffle: reducers resume their fetches, no task re-run, SUCCEEDED", func(ctx SpecContext) {
		y := yarn()
		// Eight input files, eight maps; the reducers start with the first
		// map (slowstart 0) and shuffle while the others run. Speculation
		// off: a stalled reducer would not be rescued, it would fail the
		// spec.
		y.mapReduce(ctx, "TeraGen", "teragen", "-Dmapreduce.job.maps=8", "200000", "/user/alice/tera-in-8")
		job := y.exampleJob(ctx, "TeraSort", "terasort", "-Dmapreduce.job.reduces=2", "-Dmapreduce.job.reduce.slowstart.completedmaps=0",
			"-Dmapreduce.map.speculative=false", "-Dmapreduce.reduce.speculative=false", "/user/alice/tera-in-8", "/user/alice/tera-out-8")
		// A map has finished (its output waits on the node's shuffle
		// service) while the reducers and other maps run.
		app := job.waitFor(y, 500*time.Millisecond, func(g Gomega, app string) {
			done := 0
			for _, p := range y.appPods(ctx, app) {
				if p.Status.Phase == corev1.PodSucceeded {
					done++
				}
			}
			g.Expect(done).To(BeNumerically(">=", 1))
			g.Expect(y.runningPods(ctx, app)).To(BeNumerically(">=", 3))
		})
		Expect(y.KillPlugin()).To(Succeed())
		time.Sleep(3 * time.Second) // a container restart's worth of absence
		Expect(y.StartPlugin()).To(Succeed())
		start := time.Now()
		Expect(job.wait()).To(Succeed(), job.output())
		GinkgoWriter.Printf("TeraSort finished %s after the node plugin came back\n", time.Since(start))
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		// No map was run again for lost output, no reducer replaced: the
		// node started the 8 maps and 2 reducers, nothing more.
		Expect(strings.Count(y.PluginLogs(), `msg="container started" container=container_`+strings.TrimPrefix(app, "application_"))).
			To(Equal(10), y.PluginLogs())
	}, SpecTimeout(10*time.Minute))

	It("keeps a Spark job through kill -9 of weft-rm: same application, one attempt, SUCCEEDED", func(ctx SpecContext) {
		y := yarn()
		spark, err := hadoop.SparkDist(ctx)
		Expect(err).NotTo(HaveOccurred())
		// 8 slices of 8 s on 2 executors: about 30 s of tasks.
		done := y.sparkInBackground(ctx, spark, "cluster", "spark-pi-restart", "sh.weft.spark.SparkPi", []string{"spark.executor.instances=2"}, "8", "8000")
		var app string
		Eventually(func(g Gomega) {
			app = y.appByName("spark-pi-restart")
			g.Expect(app).NotTo(BeEmpty())
			g.Expect(y.runningPods(ctx, app)).To(Equal(3)) // the driver's AM and 2 executors
		}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		y.killRM(ctx)
		var r sparkRun
		Eventually(done).WithTimeout(6 * time.Minute).Should(Receive(&r))
		Expect(r.err).NotTo(HaveOccurred(), r.out+"\nweft-rm:\n"+y.rm.Logs())
		Expect(r.out).To(ContainSubstring("final status: SUCCEEDED"))
		Expect(y.appByName("spark-pi-restart")).To(Equal(app))
		Expect(y.attempts(ctx, app)).To(Equal(1), "the driver's AM was not restarted")
		Expect(y.amLog(app, "stdout")).To(MatchRegexp(`Pi is roughly 3\.1\d*`))
	}, SpecTimeout(10*time.Minute))
}
