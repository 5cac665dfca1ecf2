package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/weft-sh/weft/translator/wellknown"
)

var _ = Describe("Two tenants on Weft: borrowing and tier-ordered preemption with advance notice", Ordered, func() {
	var y *yarnOnKube
	BeforeAll(func(ctx SpecContext) {
		// Tenants a and b are each guaranteed half the cluster and may
		// borrow all of it.
		queues := filepath.Join(GinkgoT().TempDir(), "queues.json")
		Expect(os.WriteFile(queues, []byte(`[
			{"path": "root", "capacity": 100, "submitACL": "*", "adminACL": "*"},
			{"path": "root.a", "capacity": 50, "maxCapacity": 100},
			{"path": "root.b", "capacity": 50, "maxCapacity": 100}
		]`), 0o644)).To(Succeed())
		y = startYarnOnKube(ctx, clusterForJobs(ctx), "3.4.1", "--queues", queues, "--preemption-grace", "15s")
	}, NodeTimeout(20*time.Minute))

	It("reclaims A's elastic containers for B after a PreemptionMessage, keeping A's AM and minimum, and both jobs finish", func(ctx SpecContext) {
		// The node has 8 vcores for YARN (2 CPUs at 250m a vcore). A's
		// MapReduce job: its AM and 6 maps of a vcore each, holding them
		// for 90 s: A (AM included, as in YARN) borrows 3 vcores of
		// B's guarantee of 4, and leaves the room of one AM. Its AM kills the tasks it is told
		// about (KillAMPreemptionPolicy), as production MapReduce does.
		tests := y.jobclientTests()
		// SleepJob from MapReduce's test jobs jar, run as `hadoop
		// org.apache.hadoop.mapreduce.SleepJob` with the jar on
		// HADOOP_CLASSPATH (its jar's driver needs Hadoop's test classes).
		Expect(y.dist.Classpath).To(ContainSubstring(tests))
		jobA := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.mapreduce.SleepJob",
			"-Dmapreduce.job.queuename=a",
			"-Dyarn.app.mapreduce.am.preemption.policy=org.apache.hadoop.mapreduce.v2.app.rm.preemption.KillAMPreemptionPolicy",
			"-Dmapreduce.map.memory.mb=512", "-Dyarn.app.mapreduce.am.resource.mb=768",
			// 90 s a map: B's AM starts, asks and waits out the 15 s notice
			// (~50 s here) well before A's maps end on their own.
			"-m", "6", "-r", "0", "-mt", "90000")
		var outA bytes.Buffer
		jobA.Stdout, jobA.Stderr = &outA, &outA
		Expect(jobA.Start()).To(Succeed())
		doneA := make(chan error, 1)
		exitedA := make(chan struct{})
		go func() { doneA <- jobA.Wait(); close(exitedA) }()

		stopA := y.watchPods(ctx, func() string { return y.appByName("Sleep job") })
		appA := y.waitRunning(ctx, "Sleep job", 7, func() error { // the AM and 6 maps
			select {
			case <-exitedA:
				return fmt.Errorf("job A exited early:\n%s", outA.String())
			default:
				return nil
			}
		})

		// B asks for 2 containers, within its guarantee.
		errB, outB := y.distShellIn(ctx, "b", "tenant-b", "-num_containers", "2", "-shell_command", "sleep 5")
		Expect(errB).NotTo(HaveOccurred(), outB)

		Eventually(doneA).WithTimeout(6*time.Minute).Should(Receive(BeNil()), func() string { return outA.String() + y.amSyslog("Sleep job") })
		podsA := stopA()
		syslog := y.amLog(appA, "syslog")
		// A's AM was told before its containers went: it evicted the
		// named task attempts itself.
		Expect(strings.Count(syslog, "Evicting attempt_")).To(BeNumerically(">=", 2), syslog)

		// The RM counts A's preempted containers, none of them its AM.
		var info struct {
			App struct {
				NumNonAMContainerPreempted, NumAMContainerPreempted int
				PreemptedResourceVCores                             int
			}
		}
		getJSON("http://"+y.rm.WebAddr+"/ws/v1/cluster/apps/"+appA, &info)
		Expect(info.App.NumNonAMContainerPreempted).To(BeNumerically(">=", 2))
		Expect(info.App.NumAMContainerPreempted).To(BeZero())

		// The pods tell which went early: A's AM and its minimum (the
		// medium map) ran to the end; the preempted were elastic (low).
		early := map[string]int{}
		for _, p := range podsA {
			Expect(p.Labels).To(HaveKeyWithValue(wellknown.LabelQueue, "a"))
			if p.Status.Phase != corev1.PodSucceeded {
				early[p.Labels[wellknown.LabelTier]]++
			}
		}
		Expect(early).To(HaveKeyWithValue("low", BeNumerically(">=", 2)), fmt.Sprint(early))
		Expect(early).NotTo(HaveKey("medium"))
		GinkgoWriter.Printf("pods of A that ended early, by tier: %v\n", early)
	}, SpecTimeout(15*time.Minute))
})

// jobclientTests is MapReduce's test jobs jar on the client's class path.
func (y *yarnOnKube) jobclientTests() string {
	GinkgoHelper()
	for _, p := range filepath.SplitList(y.dist.Classpath) {
		if b := filepath.Base(p); strings.HasPrefix(b, "hadoop-mapreduce-client-jobclient-") && strings.HasSuffix(b, "-tests.jar") {
			return p
		}
	}
	Fail("no hadoop-mapreduce-client-jobclient tests jar on the class path")
	return ""
}

// getJSON decodes a REST answer into v.
func getJSON(url string, v any) {
	GinkgoHelper()
	resp, err := http.Get(url)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK), url)
	Expect(json.NewDecoder(resp.Body).Decode(v)).To(Succeed())
}
