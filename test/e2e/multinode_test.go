package e2e

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/scheduler/tide/api/v1alpha1"

	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator/wellknown"
)

// weftOnNodesSpecs are YARN applications on Weft over the kind-style
// cluster's nodes (cluster returns it, up): what only a cluster of more
// than one node shows — containers spread over nodes, NodeIds and links
// naming each node, a reducer fetching from another node's shuffle.
func weftOnNodesSpecs(cluster func() *kube.Cluster, nodeCount int) {
	Describe("with Weft on its nodes", Ordered, func() {
		var y *yarnOnKube
		BeforeAll(func(ctx SpecContext) {
			c := forJobs(ctx, cluster(), nodeCount)
			// A node silent for 30 s is LOST (YARN's default: 10 minutes).
			y = startYarn(ctx, WeftOnKubeOptions{Cluster: c, Version: "3.4.1", Nodes: nodeCount, RMArgs: []string{"--nm-expiry", "30s"}, SparkShuffle: true})
		}, NodeTimeout(10*time.Minute))

		It("spreads DistributedShell's six containers over every node, each NodeId its node's name at its node's address", func(ctx SpecContext) {
			const name = "ds-spread"
			done := make(chan string, 1)
			go func() {
				defer GinkgoRecover()
				err, out := y.distShell(ctx, name, "-num_containers", "6", "-shell_command", "sleep 25")
				if err != nil {
					out = "client failed: " + err.Error() + "\n" + out
				}
				done <- out
			}()
			app := y.waitRunning(ctx, name, 7)
			// As a user would see them: the yarn CLI's containers of the
			// running attempt, each with its node.
			list, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "container", "-list", strings.Replace(app, "application_", "appattempt_", 1)+"_000001")
			Expect(err).NotTo(HaveOccurred(), errOut)
			GinkgoWriter.Println(list)
			// A row per container: its id, its NodeId's host, and its
			// LOG-URL, its own node's NodeManager page.
			rows := regexp.MustCompile(`(container_\w+)\s.*?(weft-node-\d+):8041\s.*`).FindAllStringSubmatch(list, -1)
			Expect(rows).To(HaveLen(7), "the AM and six containers")
			var hosts []string
			for _, row := range rows {
				hosts = append(hosts, row[2])
				Expect(row[0]).To(ContainSubstring("http://%s:8042/node/containerlogs/%s/alice", row[2], row[1]))
			}
			slices.Sort(hosts)
			Expect(slices.Compact(hosts)).To(HaveLen(nodeCount), "nodes holding the application's containers")

			// Each NodeId's host is the node's name, which resolves here
			// (and in every node, whose pods read this machine's hosts
			// file) to the node's own address.
			nodes, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "node", "-list", "-all")
			Expect(err).NotTo(HaveOccurred(), errOut)
			for i := 1; i <= nodeCount; i++ {
				Expect(nodes).To(MatchRegexp(`%s:8041\s+RUNNING\s+%s:8042`, kube.NodeName(i), kube.NodeName(i)))
				addrs, err := net.DefaultResolver.LookupHost(ctx, kube.NodeName(i))
				Expect(err).NotTo(HaveOccurred())
				Expect(addrs).To(ConsistOf(kube.NodeIP(i)))
			}
			// The AM's log link leads to its node's plugin.
			_, err = y.fetchAMLog(app, "AppMaster.stderr", "start=0")
			Expect(err).NotTo(HaveOccurred())

			var out string
			Eventually(done).WithTimeout(3 * time.Minute).Should(Receive(&out))
			Expect(out).NotTo(HavePrefix("client failed"), out)
			status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		}, SpecTimeout(6*time.Minute))

		It("runs teragen → terasort → teravalidate, unmodified, maps on several nodes, each reducer fetching map outputs from another node's shuffle, and the output validates", func(ctx SpecContext) {
			const rows = 60000
			y.mapReduce(ctx, "TeraGen", "teragen", "-Dmapreduce.job.maps=6", strconv.Itoa(rows), "/user/alice/tera-nodes-in")
			status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", y.appByName("TeraGen"))
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
			Expect(status).To(MatchRegexp(`Application-Type\s*:\s*MAPREDUCE`))

			stop := y.watchPods(ctx, func() string { return y.appByName("TeraSort") })
			y.mapReduce(ctx, "TeraSort", "terasort", "-Dmapreduce.job.reduces=3", "/user/alice/tera-nodes-in", "/user/alice/tera-nodes-out")
			pods := stop()
			// Every 100-byte row came through, in three non-empty parts.
			du, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-du", "/user/alice/tera-nodes-out/part-r-*")
			Expect(err).NotTo(HaveOccurred(), errOut)
			var total int64
			parts := 0
			for _, line := range strings.Split(strings.TrimSpace(du), "\n") {
				var size, onDisk int64
				var name string
				_, err := fmt.Sscan(line, &size, &onDisk, &name)
				Expect(err).NotTo(HaveOccurred(), du)
				Expect(size).To(BeNumerically(">", 0), du)
				total += size
				parts++
			}
			Expect(parts).To(Equal(3), du)
			Expect(total).To(Equal(int64(rows*100)), du)
			// A task's pod runs YarnChild with its attempt: _m_ a map,
			// _r_ a reducer.
			task := regexp.MustCompile(`attempt_\d+_\d+_([mr])_\d+_\d+`)
			mapNodes, reduceNodes := map[string]bool{}, map[string]bool{}
			for _, p := range pods {
				m := task.FindStringSubmatch(strings.Join(p.Spec.Containers[0].Command, " "))
				switch {
				case m == nil:
				case m[1] == "m":
					mapNodes[p.Spec.NodeName] = true
				default:
					reduceNodes[p.Spec.NodeName] = true
				}
			}
			GinkgoWriter.Printf("maps on %v, reducers on %v\n", mapNodes, reduceNodes)
			Expect(len(mapNodes)).To(BeNumerically(">=", 2), "nodes that ran maps")
			Expect(reduceNodes).NotTo(BeEmpty(), "nodes that ran reducers")
			// Every reducer fetches every map's output: with the maps on
			// two nodes or more, each fetched from a node not its own.
			y.mapReduce(ctx, "TeraValidate", "teravalidate", "/user/alice/tera-nodes-out", "/user/alice/tera-nodes-report")
			// TeraValidate writes one "checksum" record when the whole
			// output is sorted, and "misorder"/"error" records otherwise.
			report, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-cat", "/user/alice/tera-nodes-report/part-r-*")
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(report).To(MatchRegexp(`^checksum\s+[0-9a-f]+\s*$`))
		}, SpecTimeout(12*time.Minute))

		It("runs a shuffle-heavy Spark job with dynamic allocation on the nodes' spark_shuffle service through kill -9 of every node plugin: executors come, go when idle, and a later stage reads the released executors' blocks from the restarted services", func(ctx SpecContext) {
			const name = "shuffle-stages"
			// The settings a Hadoop distribution's spark-defaults.conf
			// ships, with short timeouts to keep the spec short.
			done := y.shuffleStages(ctx, name, "all",
				"spark.dynamicAllocation.enabled=true", "spark.shuffle.service.enabled=true",
				"spark.dynamicAllocation.minExecutors=0", "spark.dynamicAllocation.maxExecutors=3",
				"spark.dynamicAllocation.executorIdleTimeout=20s", "spark.dynamicAllocation.schedulerBacklogTimeout=1s")
			// The first job's outputs written and its executors still
			// there: every node plugin killed outright and started again,
			// as the kubelet restarts its container. The services it runs
			// go with it and come back knowing the executors registered
			// with them (their recovery path).
			var app string
			Eventually(func(g Gomega) {
				app = y.firstShuffleWritten(g, name)
			}).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
			Expect(y.KillPlugin()).To(Succeed())
			Expect(y.StartPlugin()).To(Succeed())
			driver, stdout := y.sparkSucceeded(done, name, app)
			// Every executor that wrote the first shuffle was gone before
			// the second job read it, and the sum is right.
			m := regexp.MustCompile(`ShuffleStages first=(\d+) writers=\[([^\]]*)\] alive=\[([^\]]*)\]`).FindStringSubmatch(stdout)
			Expect(m).NotTo(BeNil(), stdout)
			Expect(m[1]).To(Equal("120000"))
			Expect(m[2]).NotTo(BeEmpty(), "executors that wrote the first shuffle")
			for _, w := range strings.Split(m[2], ", ") {
				Expect(strings.Split(m[3], ", ")).NotTo(ContainElement(w), "executor %s, a writer, alive for the second job", w)
			}
			Expect(shuffleMapRuns(stdout)).To(Equal("6"), "map tasks run: none ran again")
			// Dynamic allocation asked for executors and released them;
			// no fetch failed and no stage ran again for lost output.
			Expect(driver).To(ContainSubstring("ExecutorAllocationManager"))
			Expect(driver).To(MatchRegexp(`Requesting \d+ new executors? because tasks are backlogged`))
			Expect(driver).NotTo(ContainSubstring("FetchFailed"))
			Expect(driver).NotTo(ContainSubstring("Resubmitting"))
			// The executors registered with their nodes' services, which
			// read them back after the restart.
			Expect(y.PluginLogs()).To(ContainSubstring("Reloading registered executors"))
			registered := regexp.MustCompile(`Registered executor \S*AppExecId\W+appId=\W*`+app+`\W+execId=\W*\d+`).FindAllString(y.PluginLogs(), -1)
			Expect(len(registered)).To(BeNumerically(">=", 3), "executors registered with their nodes' services")
		}, SpecTimeout(10*time.Minute))

		It("tells Spark's AM of a node the tide takes back as DECOMMISSIONING with its notice: the executors there hand their shuffle blocks over and leave, and no map task runs again", func(ctx SpecContext) {
			const notice = 30 * time.Second
			const name = "shuffle-decommission"
			// Fixed executors without the external shuffle service: their
			// map outputs live in the executors, and go with them unless
			// migrated (Spark's decommissioning, SPARK-20624).
			done := y.shuffleStages(ctx, name, "any",
				"spark.executor.instances=3", "spark.decommission.enabled=true",
				"spark.storage.decommission.enabled=true", "spark.storage.decommission.shuffleBlocks.enabled=true")
			// The first job's outputs written: a node holding an executor,
			// not the AM, is lent to batch work and taken back. A node
			// with online pods (CoreDNS) is not lent whole while they
			// have nowhere else to go in its pool of one.
			var app, node string
			Eventually(func(g Gomega) {
				app = y.firstShuffleWritten(g, name)
				am, executors := y.runningByNode(ctx, app)
				all, err := y.cluster.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				online := map[string]bool{}
				for _, p := range all.Items {
					if p.Labels[wellknown.LabelManagedBy] != wellknown.ManagedByWeft && p.Status.Phase == corev1.PodRunning {
						online[p.Spec.NodeName] = true
					}
				}
				node = ""
				for n := range executors {
					if n != am && !online[n] {
						node = n
					}
				}
				g.Expect(node).NotTo(BeEmpty(), "a node with executors, no AM and no online pods: executors %v, AM on %s, online pods on %v", executors, am, online)
			}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			lendNode(ctx, tideClient(ctx, y.cluster), y.cluster, "spark", node, notice)
			onlinePeak(ctx, y.cluster, node)
			// During the notice the node is DECOMMISSIONING to YARN's CLI,
			// with the seconds left.
			Eventually(func(g Gomega) {
				out, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "node", "-list", "-states", "DECOMMISSIONING")
				g.Expect(err).NotTo(HaveOccurred(), errOut)
				g.Expect(out).To(MatchRegexp(`%s:8041\s+DECOMMISSIONING`, node))
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "node", "-status", node+":8041")
			Expect(err).NotTo(HaveOccurred(), errOut)
			GinkgoWriter.Println(status)
			Expect(status).To(MatchRegexp(`Node-State\s*:\s*DECOMMISSIONING`))
			Expect(status).To(MatchRegexp(`Health-Report\s*:\s*taken back from batch work by the tide: its containers have until`))

			driver, stdout := y.sparkSucceeded(done, name, app)
			for _, line := range strings.Split(driver, "\n") {
				if strings.Contains(strings.ToLower(line), "decommission") {
					GinkgoWriter.Println(line)
				}
			}
			mapRuns := shuffleMapRuns(stdout)
			// The executors on the node were decommissioned, their blocks
			// moved: no fetch failed, no map task ran again.
			Expect(driver).To(MatchRegexp(`Executor \d+ on %s is decommissioned`, node))
			Expect(driver).NotTo(ContainSubstring("FetchFailed"))
			Expect(mapRuns).To(Equal("6"), "map tasks run: none ran again")
		}, SpecTimeout(12*time.Minute))

		It("loses a node mid-job: LOST after the expiry, its containers completed as YARN completes them, the job SUCCEEDS on the others", func(ctx SpecContext) {
			// The AM stops the killed tasks' containers on the lost node
			// before it runs them again, retrying its NodeManager for
			// yarn.client.nodemanager-connect.max-wait-ms (3 minutes by
			// default, as on any YARN cluster): bounded here to keep the
			// spec short, not what it proves.
			job := y.sleepJob(ctx, "-Dyarn.client.nodemanager-connect.max-wait-ms=15000", "-Dyarn.client.nodemanager-connect.retry-interval-ms=3000",
				"-m", "4", "-r", "1", "-mt", "30000", "-rt", "1000")
			// A node holding tasks of the job but not its AM.
			var lost int
			app := job.waitFor(y, time.Second, func(g Gomega, app string) {
				am, tasks := y.runningByNode(ctx, app)
				g.Expect(am).NotTo(BeEmpty(), "the AM runs")
				lost = 0
				for i := 1; i <= nodeCount; i++ {
					if n := kube.NodeName(i); n != am && tasks[n] > 0 {
						lost = i
					}
				}
				g.Expect(lost).NotTo(BeZero(), "a node with tasks and no AM: %v, AM on %s", tasks, am)
			})
			node := kube.NodeName(lost)
			Expect(kube.CutNode(ctx, lost)).To(Succeed())
			cut := time.Now()
			DeferCleanup(func(ctx SpecContext) {
				Expect(kube.RestoreNode(ctx, lost)).To(Succeed())
				// Back for the specs after: Ready, and RUNNING to YARN.
				Eventually(func(g Gomega) {
					n, err := y.cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
					g.Expect(err).NotTo(HaveOccurred())
					g.Expect(nodeReady(n)).To(BeTrue())
				}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			})

			// The node lifecycle controller marks it not Ready after its
			// grace period; the RM calls it LOST once the expiry passes.
			Eventually(func(g Gomega) {
				out, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "node", "-list", "-all")
				g.Expect(err).NotTo(HaveOccurred(), errOut)
				g.Expect(out).To(MatchRegexp(`%s:8041\s+LOST`, node))
			}).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			GinkgoWriter.Printf("%s LOST %s after its link was cut\n", node, time.Since(cut).Round(time.Second))
			Expect(job.wait()).To(Succeed(), job.output())
			status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
			// The AM was told, in YARN's words, why its tasks there ended.
			syslog, err := y.fetchAMLog(app, "syslog", "start=0")
			Expect(err).NotTo(HaveOccurred())
			Expect(syslog).To(ContainSubstring("Container released on a *lost* node"))
		}, SpecTimeout(12*time.Minute))

		It("lends a real node to a job and takes it back with notice while the job runs on the others, and the job SUCCEEDS", func(ctx SpecContext) {
			const notice = 30 * time.Second
			core := y.cluster.Client.CoreV1()
			node := kube.NodeName(2)
			// Taken back when online pods wait for it.
			lendNode(ctx, tideClient(ctx, y.cluster), y.cluster, "kind", node, notice)

			// Maps long enough to outlive the notice, some on the lent node.
			job := y.sleepJob(ctx, "-m", "6", "-r", "1", "-mt", "60000", "-rt", "1000")
			app := job.waitFor(y, time.Second, func(g Gomega, app string) {
				on := 0
				for _, p := range y.appPods(ctx, app) {
					if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == node && p.Labels[wellknown.LabelTier] != "high" {
						on++
					}
				}
				g.Expect(on).To(BeNumerically(">=", 1), "tasks on the lent node")
			})

			peak := onlinePeak(ctx, y.cluster, node)
			var deadline time.Time
			Eventually(func(g Gomega) {
				n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tide.StateOf(n)).To(Equal(v1alpha1.StateOfflineToOnline))
				deadline, err = wellknown.ParseTime(n.Annotations[wellknown.AnnotationTideNoticeDeadline])
				g.Expect(err).NotTo(HaveOccurred())
			}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
			GinkgoWriter.Printf("%s taken back, notice until %s\n", node, deadline.Format(time.RFC3339))

			// Notice honoured: told first, nothing ended before the
			// deadline, the node Online and the online pod on it after.
			Eventually(y.rm.Logs).WithTimeout(10 * time.Second).Should(ContainSubstring("container on a node taken back from batch: notice given"))
			Eventually(func(g Gomega) {
				n, err := core.Nodes().Get(ctx, node, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tide.StateOf(n)).To(Equal(v1alpha1.StateOnline))
				p, err := core.Pods("default").Get(ctx, peak.Name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(p.Spec.NodeName).To(Equal(node))
			}).WithTimeout(notice + 2*time.Minute).WithPolling(time.Second).Should(Succeed())
			Expect(time.Now()).To(BeTemporally(">=", deadline))

			// The job carries on on the other nodes and succeeds.
			Expect(job.wait()).To(Succeed(), job.output())
			status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", app)
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		}, SpecTimeout(12*time.Minute))
	})

	Describe("with Weft's colocation agent on each node", Ordered, func() {
		// Each node's big box: its kubelet's BestEffort QoS cgroup under
		// the node's cgroup root (cgroupfs driver, cgroup v1).
		boxQuota := func(node string) int64 {
			return readInt(filepath.Join("/sys/fs/cgroup/cpu", node, "kubepods", "besteffort", "cpu.cfs_quota_us"))
		}
		BeforeAll(func(ctx SpecContext) {
			c := forJobs(ctx, cluster(), nodeCount)
			startYarn(ctx, WeftOnKubeOptions{Cluster: c, Version: "3.4.1", Nodes: nodeCount, Profile: "weft",
				PluginArgs: []string{"--colocation-interval", "1s", "--peak-window", "5s", "--hysteresis", "2"}})
		}, NodeTimeout(10*time.Minute))

		It("shrinks the box of the node whose online work grows and leaves the other nodes' boxes as they were", func(ctx SpecContext) {
			busy, quiet := kube.NodeName(1), kube.NodeName(2)
			// Each agent bounds its own node's box, from its node's share.
			var before int64
			Eventually(func(g Gomega) {
				for i := 1; i <= nodeCount; i++ {
					g.Expect(boxQuota(kube.NodeName(i))).To(BeNumerically(">", 0), "%s's box bounded", kube.NodeName(i))
				}
				before = boxQuota(busy)
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
			quietBefore := boxQuota(quiet)
			GinkgoWriter.Printf("boxes' CFS quotas before: %s %d, %s %d\n", busy, before, quiet, quietBefore)

			// Online work on one node, using all of its share.
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "online-burn-", Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: busy, RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "burn", Image: images.BusyboxRef,
						Command:   []string{"/bin/sh", "-c", "for i in 1 2; do (while :; do :; done) & done; wait"},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			}
			pod, err := cluster().Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) {
				zero := int64(0)
				_ = cluster().Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			})
			Eventually(func() int64 { return boxQuota(busy) }).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).
				Should(BeNumerically("<=", before/4), "%s's box shrinks", busy)
			// The quiet node measured only itself: its box is where it
			// was (its own idle use moves it by a little).
			Consistently(func() int64 { return boxQuota(quiet) }).WithTimeout(5*time.Second).WithPolling(250*time.Millisecond).
				Should(BeNumerically("~", quietBefore, quietBefore/10), "%s's box", quiet)
			GinkgoWriter.Printf("boxes' CFS quotas while %s burns: %s %d, %s %d\n", busy, busy, boxQuota(busy), quiet, boxQuota(quiet))
		}, SpecTimeout(3*time.Minute))
	})
}

// forJobs readies the kind-style cluster c of n nodes for Weft: its
// namespaces, the plain profile's PriorityClasses, Weft's image in every
// node's containerd.
func forJobs(ctx SpecContext, c *kube.Cluster, n int) *kube.Cluster {
	GinkgoHelper()
	root, err := repoRoot()
	Expect(err).NotTo(HaveOccurred())
	_, err = c.Apply(ctx, filepath.Join(root, "deploy", "base", "namespaces.yaml"),
		filepath.Join(root, "deploy", "profiles", "plain", "priorityclasses.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(BuildWeftImageOnNodes(ctx, n)).To(Succeed())
	return c
}

// runningByNode is where an application's running pods are: its AM's
// node, and how many of its other containers run on each node.
func (y *yarnOnKube) runningByNode(ctx SpecContext, app string) (am string, tasks map[string]int) {
	tasks = map[string]int{}
	for _, p := range y.appPods(ctx, app) {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		if p.Labels[wellknown.LabelTier] == "high" {
			am = p.Spec.NodeName
		} else {
			tasks[p.Spec.NodeName]++
		}
	}
	return am, tasks
}

// onlinePeak starts online work that only node can take (the tide takes
// a lent node back for it), removed when the spec ends.
func onlinePeak(ctx SpecContext, cluster *kube.Cluster, node string) *corev1.Pod {
	GinkgoHelper()
	core := cluster.Client.CoreV1()
	peak := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "peak-" + node, Namespace: "default"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{corev1.LabelHostname: node}, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "web", Image: images.BusyboxRef, Command: []string{"sleep", "3600"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	_, err := core.Pods("default").Create(ctx, peak, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		zero := int64(0)
		_ = core.Pods("default").Delete(ctx, peak.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return peak
}

// sparkSucceeded waits for a cluster-mode spark-submit to end SUCCEEDED
// and returns its driver's log and stdout (the AM container's).
func (y *yarnOnKube) sparkSucceeded(done <-chan sparkRun, name, app string) (driver, stdout string) {
	GinkgoHelper()
	var r sparkRun
	Eventually(done).WithTimeout(6 * time.Minute).Should(Receive(&r))
	if r.err != nil {
		r.out += y.amSyslog(name)
	}
	Expect(r.err).NotTo(HaveOccurred(), r.out)
	Expect(r.out).To(ContainSubstring("final status: SUCCEEDED"))
	stdout = y.amLog(app, "stdout")
	GinkgoWriter.Println(stdout)
	return y.amLog(app, "stderr"), stdout
}

// shuffleStages submits the harness's ShuffleStages (120,000 records in 6
// partitions, the driver waiting up to 4 minutes for all or any of the
// first shuffle's writers to go: wait) in cluster mode with conf, while the
// spec goes on.
func (y *yarnOnKube) shuffleStages(ctx SpecContext, name, wait string, conf ...string) <-chan sparkRun {
	GinkgoHelper()
	spark, err := hadoop.SparkDist(ctx)
	Expect(err).NotTo(HaveOccurred())
	return y.sparkInBackground(ctx, spark, "cluster", name, "sh.weft.spark.ShuffleStages", conf, "120000", "6", "240000", wait)
}

// firstShuffleWritten checks that the ShuffleStages application called
// name has written its first shuffle and waits for its writers to go, and
// returns the application.
func (y *yarnOnKube) firstShuffleWritten(g Gomega, name string) string {
	app := y.appByName(name)
	g.Expect(app).NotTo(BeEmpty())
	stdout, err := y.fetchAMLog(app, "stdout", "start=0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stdout).To(ContainSubstring("waiting"))
	return app
}

// shuffleMapRuns checks ShuffleStages' sum in its stdout and returns how
// many map tasks it ran in all (6 when none ran again).
func shuffleMapRuns(stdout string) string {
	GinkgoHelper()
	s := regexp.MustCompile(`ShuffleStages sum=(\d+) expected=(\d+) mapRuns=(\d+)`).FindStringSubmatch(stdout)
	Expect(s).NotTo(BeNil(), stdout)
	Expect(s[1]).To(Equal(s[2]))
	return s[3]
}
