package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/weft-sh/weft/translator/wellknown"
)

// failover kills the active replica outright (kill -9: no Lease released,
// as when its node dies), waits for the other to answer /isActive and
// starts the killed one again, as the kubelet restarts it: it comes back a
// standby. It returns how long the standby took to become active.
func (y *yarnOnKube) failover(ctx context.Context) time.Duration {
	GinkgoHelper()
	var active, standby *RM
	for _, r := range y.RMs {
		if r.Active() {
			active = r
		} else {
			standby = r
		}
	}
	Expect(active).NotTo(BeNil(), "no active replica")
	Expect(active.Kill()).To(Succeed())
	start := time.Now()
	Eventually(standby.Active).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(BeTrue())
	took := time.Since(start)
	y.rm = standby
	Expect(active.Start(ctx)).To(Succeed())
	Expect(active.Active()).To(BeFalse(), "the restarted replica must come back a standby")
	return took
}

var _ = Describe("weft-rm HA: two replicas, one active by a Lease, the state in the API server", Ordered, func() {
	var y *yarnOnKube
	BeforeAll(func(ctx SpecContext) {
		cluster := clusterForJobs(ctx)
		Expect(BuildWeftImage(ctx)).To(Succeed())
		work := GinkgoT().TempDir()
		w, err := StartWeftOnKube(ctx, WeftOnKubeOptions{Cluster: cluster, Version: "3.4.1", Work: work, BinDir: binDir, HA: 2,
			RMArgs: []string{"--am-expiry", "2m"}})
		Expect(err).NotTo(HaveOccurred())
		clusterID := "e2e-" + filepath.Base(work)
		DeferCleanup(func(ctx SpecContext) {
			report := ""
			if CurrentSpecReport().Failed() {
				report = w.PodReport() // before Stop deletes the pods
			}
			w.Stop()
			if CurrentSpecReport().Failed() {
				for i, r := range w.RMs {
					GinkgoWriter.Printf("weft-rm rm%d logs:\n%s\n", i+1, r.Logs())
				}
				GinkgoWriter.Printf("weft-nodeplugin logs:\n%s\n%s", w.PluginLogs(), report)
			}
			// The state outlives the replicas by design: remove this run's.
			secrets := cluster.Client.CoreV1().Secrets("weft-system")
			_ = secrets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: wellknown.LabelRMState + "=" + clusterID + "-rm-state"})
			for _, k := range []string{"rm-amrm-token", "rm-delegation-token"} {
				_ = secrets.Delete(ctx, clusterID+"-"+k, metav1.DeleteOptions{})
			}
			_ = cluster.Client.CoordinationV1().Leases("weft-system").Delete(ctx, clusterID+"-rm", metav1.DeleteOptions{})
		})
		y = &yarnOnKube{WeftOnKube: w, rm: w.RM, conf: w.Conf, dist: w.Dist, cluster: cluster, nmHTTP: w.NMHTTP, dfsDir: w.DFSDir}
		Expect(w.RMs[0].Active()).To(BeTrue())
		Expect(w.RMs[1].Active()).To(BeFalse())
	}, NodeTimeout(20*time.Minute))

	It("keeps a MapReduce job through kill -9 of the active: the standby leads within 10 s, the job SUCCEEDS, clients with two rm-ids keep answering", func(ctx SpecContext) {
		job := y.sleepJob(ctx, "-m", "2", "-r", "1", "-mt", "30000", "-rt", "1000")
		app := job.waitRunning(ctx, y, 3)
		before := map[string]types.UID{}
		for _, p := range y.appPods(ctx, app) {
			before[p.Name] = p.UID
		}
		took := y.failover(ctx)
		GinkgoWriter.Printf("failover took %s\n", took)
		Expect(took).To(BeNumerically("<", 10*time.Second))

		// The yarn CLI, configured with both rm-ids, finds the new active.
		out, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(MatchRegexp(`State\s*:\s*RUNNING`))

		Expect(job.wait()).To(Succeed(), job.output())
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(y.attempts(ctx, app)).To(Equal(1), "the AM moved to the new active with its attempt")
		// The new active took the job over from the pods: none replaced or
		// restarted, and the node started only the 2 maps and the reducer.
		after := map[string]types.UID{}
		for _, p := range y.appPods(ctx, app) {
			after[p.Name] = p.UID
			for _, cs := range p.Status.ContainerStatuses {
				Expect(cs.RestartCount).To(BeZero(), p.Name)
			}
		}
		for name, uid := range after {
			if old, ok := before[name]; ok {
				Expect(uid).To(Equal(old), name)
			}
		}
		Expect(regexp.MustCompile(`msg="container started" container=container_`+app[len("application_"):]).
			FindAllString(y.PluginLogs(), -1)).To(HaveLen(3))
	}, SpecTimeout(8*time.Minute))

	It("loses no application across 20 failovers in a row under a stream of submissions", func(ctx SpecContext) {
		stop := filepath.Join(GinkgoT().TempDir(), "stop")
		// YarnClient submitting one application after another through the
		// failover proxy; unmanaged, so nothing runs and only the RM works.
		cmd := y.dist.Command(ctx, y.conf, "alice", "sh.weft.interop.SubmitApp", "--name", "ha-stream", "--unmanaged", "true",
			"--count", "100000", "--interval-ms", "200", "--stop-file", stop)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		Expect(cmd.Start()).To(Succeed())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		DeferCleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
			}
		})

		var times []time.Duration
		for range 20 {
			time.Sleep(2 * time.Second) // submissions land on this active
			times = append(times, y.failover(ctx))
		}
		Expect(os.WriteFile(stop, nil, 0o644)).To(Succeed())
		var err error
		Eventually(done).WithTimeout(3 * time.Minute).Should(Receive(&err))
		Expect(err).NotTo(HaveOccurred(), errOut.String())

		var ids []string
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var s submitted
			Expect(json.Unmarshal(sc.Bytes(), &s)).To(Succeed(), sc.Text())
			ids = append(ids, s.ApplicationID)
		}
		slices.Sort(ids)
		Expect(slices.Compact(slices.Clone(ids))).To(HaveLen(len(ids)), "an id acknowledged twice")
		listing, errOut2, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-list", "-appStates", "ALL")
		Expect(err).NotTo(HaveOccurred(), errOut2)
		var listed []string
		for _, m := range regexp.MustCompile(`(?m)^(application_\d+_\d+)\s+ha-stream\s`).FindAllStringSubmatch(listing, -1) {
			listed = append(listed, m[1])
		}
		slices.Sort(listed)
		Expect(len(ids)).To(BeNumerically(">=", 20), "submissions went on during the failovers")
		Expect(listed).To(Equal(ids), "count submitted = count listed")

		slices.Sort(times)
		var sum time.Duration
		for _, t := range times {
			sum += t
		}
		AddReportEntry("failovers", fmt.Sprintf("20 failovers, %d applications submitted: takeover median %s, max %s, mean %s",
			len(ids), times[len(times)/2], times[len(times)-1], sum/time.Duration(len(times))))
		Expect(times[len(times)-1]).To(BeNumerically("<", 10*time.Second))
	}, SpecTimeout(15*time.Minute))
})
