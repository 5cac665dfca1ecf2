package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
}

func startYarnOnKube(ctx context.Context, cluster *kube.Cluster, version string) *yarnOnKube {
	GinkgoHelper()
	root, err := repoRoot()
	Expect(err).NotTo(HaveOccurred())
	// Weft's image (the localizer runs from it), rebuilt when changed.
	imgs := exec.CommandContext(ctx, "go", "run", "./test/kube/cmd/kube-images", "-address", kube.ContainerdAddress(),
		"-dir", filepath.Join(kube.Cache(), "kube", "images"), "-weft")
	imgs.Dir = root
	out, err := imgs.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))

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
	conf := filepath.Join(work, "conf")
	Expect(hadoop.WriteConfWithFS(conf, client, sched, web, defaultFS)).To(Succeed())

	// The containers' HADOOP_CONF_DIR: the same site files, as a ConfigMap.
	ns := "weft-jobs"
	data := map[string]string{}
	for _, f := range []string{"core-site.xml", "yarn-site.xml", "log4j.properties"} {
		b, err := os.ReadFile(filepath.Join(conf, f))
		Expect(err).NotTo(HaveOccurred())
		data[f] = string(b)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hadoop-conf-" + version, Namespace: ns}, Data: data}
	_ = cluster.Client.CoreV1().ConfigMaps(ns).Delete(ctx, cm.Name, metav1.DeleteOptions{})
	_, err = cluster.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())

	key := filepath.Join(work, "nm-master.key")
	runtimeFlags := []string{"--kubeconfig", cluster.Kubeconfig, "--namespace", ns,
		"--container-image", images.NodeRuntimeRef, "--java-home", "/usr/lib/jvm/java-17-openjdk-amd64",
		"--host-path", "/usr", "--host-path", "/etc/java-17-openjdk", "--host-path", home, "--hadoop-home", home, "--hadoop-conf-configmap", cm.Name,
		"--milli-cpu-per-vcore", "250", "--localizer-image", images.WeftRef, "--localizer-cache-dir", filepath.Join(work, "filecache"), "--nm-key-file", key}
	r := &RM{Bin: filepath.Join(binDir, "weft-rm"), DataDir: filepath.Join(work, "rm"), ClientAddr: client, SchedulerAddr: sched, WebAddr: web,
		Args: append([]string{"--local-node=false", "--nm-port", nmPort, "--log-level", "DEBUG"}, runtimeFlags...)}
	Expect(r.Start(ctx)).To(Succeed())
	y := &yarnOnKube{rm: r, conf: conf, dist: dist, logs: &bytes.Buffer{}, logsMu: &sync.Mutex{}, cluster: cluster}
	y.plugin = exec.Command(filepath.Join(binDir, "weft-nodeplugin"), append([]string{"--address", nm}, runtimeFlags...)...)
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

// podsOf records every pod of an application seen while it runs (they are
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

var _ = Describe("DistributedShell on Weft", Ordered, func() {
	var cluster *kube.Cluster
	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err = kube.Up(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kube.Down)
		root, err := repoRoot()
		Expect(err).NotTo(HaveOccurred())
		_, err = cluster.Apply(ctx, filepath.Join(root, "deploy", "base", "namespaces.yaml"),
			filepath.Join(root, "deploy", "profiles", "plain", "priorityclasses.yaml"))
		Expect(err).NotTo(HaveOccurred())
	}, NodeTimeout(20*time.Minute))

	It("runs -num_containers 4 to SUCCEEDED, each container a pod of its tier", func(ctx SpecContext) {
		y := startYarnOnKube(ctx, cluster, "3.4.1")
		jar, err := y.dist.Jar("hadoop-yarn-applications-distributedshell-")
		Expect(err).NotTo(HaveOccurred())
		var appMu sync.Mutex
		appID := ""
		stop := y.watchPods(ctx, func() string {
			appMu.Lock()
			defer appMu.Unlock()
			if appID == "" {
				if resp, err := http.Get("http://" + y.rm.WebAddr + "/ws/v1/cluster/apps"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if m := regexp.MustCompile(`application_\d+_\d+`).Find(b); m != nil {
						appID = string(m)
					}
				}
			}
			return appID
		})
		cmd := y.dist.Command(ctx, y.conf, "alice", "org.apache.hadoop.yarn.applications.distributedshell.Client",
			"-jar", jar, "-num_containers", "4", "-shell_command", "hostname; sleep 3",
			"-master_memory", "512", "-container_memory", "256", "-timeout", "240000")
		var outBuf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
		err = cmd.Run()
		pods := stop()
		Expect(err).NotTo(HaveOccurred(), outBuf.String())
		// The client exits 0 only when the application SUCCEEDED; the yarn
		// CLI confirms it from the RM.
		appMu.Lock()
		id := appID
		appMu.Unlock()
		status, errOut, err := y.dist.Yarn(ctx, y.conf, "alice", "application", "-status", id)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(MatchRegexp(`Final-State\s*:\s*SUCCEEDED`))
		Expect(status).To(MatchRegexp(`State\s*:\s*FINISHED`))

		tiers := map[string]int{}
		for _, p := range pods {
			tiers[p.Labels[translator.LabelTier]]++
			Expect(p.Labels).To(HaveKeyWithValue(translator.LabelUser, "alice"))
			Expect(p.Spec.PriorityClassName).To(HavePrefix("weft-"))
		}
		// The AM high; one worker the job's minimum (medium), three elastic (low).
		Expect(tiers).To(Equal(map[string]int{"high": 1, "medium": 1, "low": 3}), fmt.Sprint(pods))
	}, SpecTimeout(10*time.Minute))
})
