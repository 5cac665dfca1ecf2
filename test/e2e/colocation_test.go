package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The local node's big box: kubelet's BestEffort QoS cgroup (cgroupfs
// driver, cgroup v1).
const (
	boxCPU    = "/sys/fs/cgroup/cpu/kubepods/besteffort"
	boxMemory = "/sys/fs/cgroup/memory/kubepods/besteffort"
)

var _ = Describe("Colocation on the node: the weft profile's agent and the big box", Ordered, func() {
	var (
		y       *yarnOnKube
		cluster *kube.Cluster
		ctl     string // the online pod's control directory, on the host
		node    string
	)
	const onlineNS = "weft-e2e-online"

	BeforeAll(func(ctx SpecContext) {
		cluster = clusterForJobs(ctx)
		nodes, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.Items).To(HaveLen(1))
		node = nodes.Items[0].Name
		_ = cluster.Client.CoreV1().ConfigMaps("weft-system").Delete(ctx, "weft-colocation", metav1.DeleteOptions{})
		// The box is the machine's: leave it unbounded for the suites after.
		DeferCleanup(func() {
			os.WriteFile(filepath.Join(boxCPU, "cpu.cfs_quota_us"), []byte("-1"), 0)
			os.WriteFile(filepath.Join(boxMemory, "memory.limit_in_bytes"), []byte("-1"), 0)
		})

		// An online service requesting most of the node's CPU (1600m of
		// 2) but using little, until told through its control directory
		// to burn CPU on both cores or to hold memory.
		ctl = GinkgoT().TempDir()
		Expect(os.Chmod(ctl, 0o777)).To(Succeed())
		_, err = cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: onlineNS}}, metav1.CreateOptions{})
		Expect(ignoreAlreadyExists(err)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			cluster.Client.CoreV1().Namespaces().Delete(ctx, onlineNS, metav1.DeleteOptions{})
		})
		replicas := int32(1)
		script := `for i in 1 2; do (while :; do if [ -f /ctl/burn ]; then :; else sleep 0.2; fi; done) & done
while :; do
  if [ -f /ctl/hog ] && [ ! -f /hog/x ]; then dd if=/dev/zero of=/hog/x bs=1M count=$(cat /ctl/hog) 2>/dev/null; fi
  if [ ! -f /ctl/hog ]; then rm -f /hog/x; fi
  sleep 0.2
done`
		labels := map[string]string{"app": "online"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "online", Namespace: onlineNS},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "svc", Image: images.BusyboxRef, Command: []string{"/bin/sh", "-c", script},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1600m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
						VolumeMounts: []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}, {Name: "hog", MountPath: "/hog"}}}},
					Volumes: []corev1.Volume{
						{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: ctl}}},
						{Name: "hog", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					}}}}}
		_, err = cluster.Client.AppsV1().Deployments(onlineNS).Create(ctx, dep, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			pods, err := cluster.Client.CoreV1().Pods(onlineNS).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(1))
			g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		// Weft with its own profile: the node plugin's agent measures
		// each second, takes online usage at its peak over 10 s, and
		// cools the node down for 30 s after an eviction (weft-rm too).
		Expect(BuildWeftImage(ctx)).To(Succeed())
		w, err := StartWeftOnKube(ctx, WeftOnKubeOptions{Cluster: cluster, Version: "3.4.1", Work: GinkgoT().TempDir(), BinDir: binDir,
			Profile: "weft", RMArgs: []string{"--node-cooldown", "30s"},
			PluginArgs: []string{"--colocation-interval", "1s", "--peak-window", "10s", "--hysteresis", "2", "--eviction-cooldown", "30s"}})
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
		y = &yarnOnKube{WeftOnKube: w, rm: w.RM, conf: w.Conf, dist: w.Dist, cluster: cluster, nmHTTP: w.NMHTTP, dfsDir: w.DFSDir}
	}, NodeTimeout(20*time.Minute))

	published := func(ctx context.Context) (milli, bytes int64) {
		n, err := cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		c, m := n.Status.Allocatable[wellknown.ReclaimedCPU], n.Status.Allocatable[wellknown.ReclaimedMemory]
		return c.Value(), m.Value()
	}

	It("offers the gap between online requests and use, and an unmodified MapReduce job runs in the big box", func(ctx SpecContext) {
		// Requests leave 400m of the node's 2 CPUs; measured use leaves
		// far more.
		// (The Node may still show what an earlier run's agent published:
		// the box's quota, which this run's agent sets, tells.)
		Eventually(func(g Gomega) {
			c, _ := published(ctx)
			g.Expect(c).To(BeNumerically(">=", 800), "reclaimed CPU published on the Node")
			g.Expect(readInt(filepath.Join(boxCPU, "cpu.cfs_quota_us"))).To(BeNumerically(">=", 50000), "the box's CFS quota follows the reclaimable CPU")
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(readInt(filepath.Join(boxCPU, "cpu.shares"))).To(Equal(int64(2)))

		stop := y.watchPods(ctx, func() string { return y.appByName("QuasiMonteCarlo") })
		out := y.mapReduce(ctx, "QuasiMonteCarlo", "pi", "-Dmapreduce.map.memory.mb=512", "-Dyarn.app.mapreduce.am.resource.mb=768", "2", "100")
		Expect(out).To(ContainSubstring("Estimated value of Pi is"))
		pods := stop()
		Expect(pods).NotTo(BeEmpty())
		for _, p := range pods {
			Expect(p.Status.QOSClass).To(Equal(corev1.PodQOSBestEffort), "pod %s in the big box", p.Name)
			Expect(p.Spec.Containers[0].Resources.Requests).To(HaveKey(wellknown.ReclaimedCPU))
		}

		// What the agent measured is the node's utilization to YARN's
		// clients, as a NodeManager's heartbeat makes it.
		var nodes struct {
			Nodes struct{ Node []struct{ ID string } }
		}
		getJSON("http://"+y.rm.WebAddr+"/ws/v1/cluster/nodes", &nodes)
		Expect(nodes.Nodes.Node).To(HaveLen(1))
		Eventually(func(g Gomega) {
			out, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "node", "-status", nodes.Nodes.Node[0].ID)
			g.Expect(err).NotTo(HaveOccurred(), errOut)
			g.Expect(out).To(MatchRegexp(`Resource Utilization by Node : PMem:[1-9]\d* MB, VMem:[1-9]\d* MB, VCores:\d`))
			g.Expect(out).To(MatchRegexp(`Resource Utilization by Containers : PMem:\d+ MB, VMem:\d+ MB, VCores:\d`))
		}).WithTimeout(time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	})

	It("gives CPU back to online work within 2 s by shrinking the box, killing nothing, and the job still succeeds", func(ctx SpecContext) {
		job := y.sleepJob(ctx, "-m", "2", "-r", "0", "-mt", "40000")
		app := job.waitRunning(ctx, y, 3)
		// The JVMs that start on the machine beside the job (its client's,
		// the CLI's) are online work to the agent, held at their peak for
		// its window: the box is lent back whole once that passes.
		var before int64
		Eventually(func() int64 {
			before = readInt(filepath.Join(boxCPU, "cpu.cfs_quota_us"))
			return before
		}).WithTimeout(20 * time.Second).WithPolling(250 * time.Millisecond).Should(BeNumerically(">=", 50000))

		online := onlinePodCgroup(ctx, cluster, onlineNS, "cpuacct")
		usage0, t0 := readInt(filepath.Join(online, "cpuacct.usage")), time.Now()
		Expect(os.WriteFile(filepath.Join(ctl, "burn"), nil, 0o644)).To(Succeed())
		DeferCleanup(func() { os.Remove(filepath.Join(ctl, "burn")) })
		var shrunk time.Duration
		Eventually(func() int64 {
			shrunk = time.Since(t0)
			return readInt(filepath.Join(boxCPU, "cpu.cfs_quota_us"))
		}).WithTimeout(2*time.Second).WithPolling(50*time.Millisecond).Should(BeNumerically("<=", before/4), "box quota shrinks within 2 s")
		GinkgoWriter.Printf("box quota %d → shrunk within %s\n", before, shrunk)
		time.Sleep(3 * time.Second)
		usage1, t1 := readInt(filepath.Join(online, "cpuacct.usage")), time.Now()
		milli := float64(usage1-usage0) / float64(t1.Sub(t0).Nanoseconds()) * 1000
		GinkgoWriter.Printf("online pod used %.0fm while burning\n", milli)
		Expect(milli).To(BeNumerically(">=", 1200), "the online pod gets its CPU")
		Expect(os.Remove(filepath.Join(ctl, "burn"))).To(Succeed())

		Expect(job.wait()).To(Succeed(), job.output())
		for _, p := range y.appPods(ctx, app) {
			for _, c := range p.Status.Conditions {
				Expect(c.Type).NotTo(Equal(corev1.DisruptionTarget), "pod %s was evicted", p.Name)
			}
		}
		Expect(job.output()).NotTo(ContainSubstring("Container killed"))
	})

	It("evicts a low-tier container when online memory passes the eviction watermark; the job retries it and succeeds; the node cools down", func(ctx SpecContext) {
		// Two maps: the first is the job's minimum (medium), the second
		// elastic (low); each touches a 400 MB heap, so that one of them
		// frees what the pressure below needs.
		job := y.sleepJob(ctx, "-Dmapreduce.map.memory.mb=768", "-Dmapreduce.map.java.opts=-Xms400m -Xmx500m -XX:+AlwaysPreTouch",
			"-m", "2", "-r", "0", "-mt", "60000")
		app := job.waitRunning(ctx, y, 3)

		// The online pod takes 2 GiB more; then the eviction watermark is
		// set 150 MiB under what the node now uses: less than one map's
		// worth.
		hits := boxLimitHits()
		_, availBefore := meminfo()
		Expect(os.WriteFile(filepath.Join(ctl, "hog"), []byte("2048"), 0o644)).To(Succeed())
		// All of it, by the pod's own cgroup, before the watermark is
		// set: memory still arriving after would add to the pressure.
		onlineMem := filepath.Join(onlinePodCgroup(ctx, cluster, onlineNS, "memory"), "memory.usage_in_bytes")
		Eventually(func() int64 { return readInt(onlineMem) }).WithTimeout(30*time.Second).WithPolling(500*time.Millisecond).
			Should(BeNumerically(">=", 2048<<20), "the online pod holds its memory")
		Eventually(func() int64 { _, a := meminfo(); return availBefore - a }).WithTimeout(10*time.Second).WithPolling(500*time.Millisecond).
			Should(BeNumerically(">=", 1800<<20), "the node shows it")
		total, avail := meminfo()
		n, err := cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		alloc := float64(n.Status.Allocatable.Memory().Value())
		used := float64(total - avail)
		evict := (used - 150<<20) / alloc * 100
		setColocation(ctx, cluster, fmt.Sprintf("memoryWatermarkPercent: %.2f\nmemoryEvictionWatermarkPercent: %.2f\ncooldown: 30s\n", evict-2, evict))

		var victim corev1.Pod
		Eventually(func(g Gomega) {
			for _, p := range y.appPods(ctx, app) {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.DisruptionTarget && c.Reason == colocation.ReasonEvicted {
						victim = p
					}
				}
			}
			g.Expect(victim.Name).NotTo(BeEmpty())
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(victim.Labels[wellknown.LabelTier]).To(Equal("low"))
		// Only as many as the pressure needs: one. (Counted over time: the
		// AM stops the container it was told of, which deletes its pod.)
		evicted := map[string]bool{victim.Name: true}
		Consistently(func() int {
			for _, p := range y.appPods(ctx, app) {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.DisruptionTarget {
						evicted[p.Name] = true
					}
				}
			}
			return len(evicted)
		}).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(Equal(1), "pods evicted")
		n, err = cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(n.Annotations).To(HaveKey(wellknown.AnnotationColocationCooldownUntil), "the node cools down")
		// Nothing new offered while cooling down: what weft-rm schedules
		// by — the allocatable, or the fall the agent announced ahead of
		// it (wellknown.AnnotationReclaimedLowering) — is no more than the
		// node's batch pods request (never less either, so that the kubelet
		// rejects no pod already bound: Published).
		Eventually(func(g Gomega) {
			pods, err := cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
			g.Expect(err).NotTo(HaveOccurred())
			var held int64
			for i := range pods.Items {
				_, milli := translator.Weft.PodAmounts(&pods.Items[i])
				held += milli
			}
			c, _ := published(ctx)
			n, err := cluster.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			if v, ok := n.Annotations[wellknown.AnnotationReclaimedLowering]; ok {
				l, err := wellknown.ParseLowering(v)
				g.Expect(err).NotTo(HaveOccurred())
				c = min(c, l.MilliCPU)
			}
			g.Expect(c).To(BeNumerically("<=", held), "room offered while cooling down")
		}).WithTimeout(10 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		// Online memory goes back; the job's AM retries the task.
		Expect(os.Remove(filepath.Join(ctl, "hog"))).To(Succeed())
		Expect(cluster.Client.CoreV1().ConfigMaps("weft-system").Delete(ctx, "weft-colocation", metav1.DeleteOptions{})).To(Succeed())
		Expect(job.wait()).To(Succeed(), job.output())
		// Memory came back by eviction alone: the box's limit, never
		// below what its pods were granted, was never reached — so the
		// kernel's OOM killer, which picks by size and tells no AM, had
		// nothing to do there (at a limit held to what the box uses, it
		// takes the other map and then the AM) — and the job kept its
		// one AM.
		Expect(boxLimitHits()).To(Equal(hits), "times the box's memory reached its limit")
		var attempts struct {
			AppAttempts struct{ AppAttempt []struct{ ID int32 } }
		}
		getJSON("http://"+y.rm.WebAddr+"/ws/v1/cluster/apps/"+app+"/appattempts", &attempts)
		Expect(attempts.AppAttempts.AppAttempt).To(HaveLen(1), "the AM's attempts")
		syslog, err := y.fetchAMLog(app, "syslog", "start=-30000")
		Expect(err).NotTo(HaveOccurred())
		Expect(syslog).To(ContainSubstring("memory pressure"), "the AM was told why its container ended")
	})
})

// sleepJob starts MapReduce's SleepJob (test jobs jar) with args.
func (y *yarnOnKube) sleepJob(ctx context.Context, args ...string) *runningJob {
	GinkgoHelper()
	tests := y.jobclientTests()
	Expect(y.dist.Classpath).To(ContainSubstring(tests))
	cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.mapreduce.SleepJob",
		append([]string{"-Dmapreduce.map.memory.mb=512", "-Dyarn.app.mapreduce.am.resource.mb=768"}, args...)...)
	return y.startJob(ctx, "Sleep job", cmd)
}

// exampleJob starts `hadoop jar hadoop-mapreduce-examples-<v>.jar args...`,
// whose application is named name.
func (y *yarnOnKube) exampleJob(ctx context.Context, name string, args ...string) *runningJob {
	GinkgoHelper()
	ex, err := y.dist.Jar("hadoop-mapreduce-examples-")
	Expect(err).NotTo(HaveOccurred())
	return y.startJob(ctx, name, y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.util.RunJar", append([]string{ex}, args...)...))
}

// startJob starts a job's client, whose application is named name.
func (y *yarnOnKube) startJob(ctx context.Context, name string, cmd *exec.Cmd) *runningJob {
	GinkgoHelper()
	j := &runningJob{name: name, done: make(chan struct{}), before: map[string]bool{}}
	for _, id := range y.appsNamed(name) {
		j.before[id] = true
	}
	cmd.Stdout, cmd.Stderr = j, j
	Expect(cmd.Start()).To(Succeed())
	go func() { j.err = cmd.Wait(); close(j.done) }()
	DeferCleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-j.done
		}
	})
	return j
}

// runningJob is a client process running a job.
type runningJob struct {
	name string // its application's
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
	// before are the applications of its name that existed before it.
	before map[string]bool
}

func (j *runningJob) Write(b []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.Write(b)
}

func (j *runningJob) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.String()
}

// waitRunning waits until the job's application — the one its client
// submitted, not an earlier one of the same name — has n pods running,
// and returns its id.
func (j *runningJob) waitRunning(ctx context.Context, y *yarnOnKube, n int) string {
	GinkgoHelper()
	return j.waitPods(ctx, y, Equal(n), time.Second)
}

// waitPods is waitRunning for any count of running pods running matches,
// polled every poll.
func (j *runningJob) waitPods(ctx context.Context, y *yarnOnKube, running gomegatypes.GomegaMatcher, poll time.Duration) string {
	GinkgoHelper()
	return j.waitFor(y, poll, func(g Gomega, app string) { g.Expect(y.runningPods(ctx, app)).To(running) })
}

// waitFor waits, for up to 4 minutes polling every poll, until check
// passes on the job's application once submitted, and returns its id; it
// stops at once if the job's client failed.
func (j *runningJob) waitFor(y *yarnOnKube, poll time.Duration, check func(g Gomega, app string)) string {
	GinkgoHelper()
	var app string
	Eventually(func(g Gomega) {
		if err := j.failed(); err != nil {
			StopTrying(err.Error()).Now()
		}
		app = j.app(y)
		g.Expect(app).NotTo(BeEmpty(), "submitted")
		check(g, app)
	}).WithTimeout(4 * time.Minute).WithPolling(poll).Should(Succeed())
	return app
}

// app is the job's application id, once submitted.
func (j *runningJob) app(y *yarnOnKube) string {
	app := ""
	for _, id := range y.appsNamed(j.name) {
		if !j.before[id] {
			app = id
		}
	}
	return app
}

// failed is the client's error once it exited before its job ran.
func (j *runningJob) failed() error {
	select {
	case <-j.done:
		return fmt.Errorf("job client exited: %v\n%s", j.err, j.output())
	default:
		return nil
	}
}

func (j *runningJob) wait() error {
	select {
	case <-j.done:
		return j.err
	case <-time.After(6 * time.Minute):
		return fmt.Errorf("job still running after 6 minutes")
	}
}

// onlinePodCgroup is the online pod's cgroup (Burstable) under a v1 controller.
func onlinePodCgroup(ctx context.Context, cluster *kube.Cluster, ns, controller string) string {
	GinkgoHelper()
	pods, err := cluster.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(pods.Items).To(HaveLen(1))
	return filepath.Join("/sys/fs/cgroup", controller, "kubepods/burstable", "pod"+string(pods.Items[0].UID))
}

// setColocation writes the colocation ConfigMap the agent watches.
func setColocation(ctx context.Context, cluster *kube.Cluster, yaml string) {
	GinkgoHelper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "weft-colocation", Namespace: "weft-system"}, Data: map[string]string{colocation.ConfigKey: yaml}}
	_, err := cluster.Client.CoreV1().ConfigMaps("weft-system").Create(ctx, cm, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx context.Context) {
		cluster.Client.CoreV1().ConfigMaps("weft-system").Delete(ctx, cm.Name, metav1.DeleteOptions{})
	})
}

func readInt(path string) int64 {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// boxLimitHits is how many times the box's memory reached its limit
// (cgroup v1 memory.failcnt): each time the kernel had to reclaim, or
// failing that OOM-kill, inside the box to stay under it.
func boxLimitHits() int64 {
	GinkgoHelper()
	return readInt(filepath.Join(boxMemory, "memory.failcnt"))
}

// meminfo is this machine's MemTotal and MemAvailable, in bytes.
func meminfo() (total, avail int64) {
	GinkgoHelper()
	f, err := os.Open("/proc/meminfo")
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "MemTotal:":
			total = v << 10
		case "MemAvailable:":
			avail = v << 10
		}
	}
	return total, avail
}
