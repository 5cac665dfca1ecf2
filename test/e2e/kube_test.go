package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/weft-sh/weft/deploy/images"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/rmfacade/amlauncher"
	"github.com/weft-sh/weft/rmfacade/amrm"
	"github.com/weft-sh/weft/rmfacade/nodesync"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/storesource"
	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/wellknown"
)

// A real local cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, and a kubelet on containerd + runc): pods really run,
// Weft's manifests apply, and the pods and Secrets the AM launcher makes
// pass the API server's validation and admission.
var _ = Describe("Weft on a local Kubernetes", Ordered, func() {
	var cluster *kube.Cluster
	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err = kube.Up(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kube.Down)
	}, NodeTimeout(20*time.Minute))

	It("has a Ready node that runs a pod to completion within its cgroup limits", func(ctx SpecContext) {
		out, err := cluster.Kubectl(ctx, "get", "nodes", "--no-headers")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`(?m)^\S+\s+Ready\s`))

		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "hi-", Namespace: "default"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "hi", Image: images.BusyboxRef,
					Command: []string{"/bin/sh", "-c", "echo hi; sleep 2"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("250m"),
						corev1.ResourceMemory: resource.MustParse("48Mi"),
					}},
				}},
			},
		}
		pod, err = cluster.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = cluster.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{})
		})
		// While it runs, the kubelet has put its container in a cgroup with
		// the limits of its spec: 250m is a CFS quota of 25ms per 100ms.
		var containerID string
		Eventually(func(g Gomega) {
			p, err := cluster.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			g.Expect(p.Status.ContainerStatuses[0].ContainerID).NotTo(BeEmpty())
			containerID = p.Status.ContainerStatuses[0].ContainerID
		}).WithTimeout(60 * time.Second).Should(Succeed())
		_, id, _ := strings.Cut(containerID, "://")
		cgroup := func(controller, file string) string {
			matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", controller, "kubepods", "*pod"+string(pod.UID), id, file))
			more, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", controller, "kubepods", "*", "pod"+string(pod.UID), id, file))
			matches = append(matches, more...)
			Expect(matches).To(HaveLen(1), "cgroup %s of container %s", controller, id)
			b, err := os.ReadFile(matches[0])
			Expect(err).NotTo(HaveOccurred())
			return strings.TrimSpace(string(b))
		}
		Expect(cgroup("memory", "memory.limit_in_bytes")).To(Equal(fmt.Sprint(48 << 20)))
		Expect(cgroup("cpu", "cpu.cfs_quota_us")).To(Equal("25000"))
		Expect(cgroup("cpu", "cpu.shares")).To(Equal("256"))

		Eventually(func() corev1.PodPhase {
			p, err := cluster.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			return p.Status.Phase
		}).WithTimeout(60 * time.Second).Should(Equal(corev1.PodSucceeded))
		logs, err := cluster.Kubectl(ctx, "logs", "-n", "default", pod.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(logs).To(Equal("hi\n"))
	}, SpecTimeout(3*time.Minute))

	// deployLocal installs Weft through its Helm chart with deploy/local.yaml
	// — this machine's API server listens on loopback and no kube-proxy
	// runs, so Weft's pods share the node's network — as `helm template |
	// kubectl apply --server-side` (the weft profile, the chart's Queue
	// objects), and takes it out of the cluster when the spec ends. With
	// secondRM, a second weft-rm replica runs beside the first, as the
	// chart's two do on two nodes: here on the same node, so on ports of
	// its own (18032, 18030, 18088) behind the same Service port names.
	deployLocal := func(ctx SpecContext, secondRM bool) []*unstructured.Unstructured {
		GinkgoHelper()
		Expect(BuildWeftImage(ctx)).To(Succeed())
		objs, err := kube.RenderChart(ctx, []string{kube.LocalValues()})
		Expect(err).NotTo(HaveOccurred())
		if secondRM {
			for _, u := range objs {
				if u.GetKind() != "Deployment" || u.GetName() != "weft-rm" {
					continue
				}
				// The same pod but for its name, a selector of its own and its
				// ports — in the arguments, the named container ports and the
				// probes alike, which all spell them ":<port>" in JSON.
				b, err := json.Marshal(u.Object)
				Expect(err).NotTo(HaveOccurred())
				b = []byte(strings.NewReplacer(":8032", ":18032", ":8030", ":18030", ":8088", ":18088").Replace(string(b)))
				second := &unstructured.Unstructured{}
				Expect(second.UnmarshalJSON(b)).To(Succeed())
				second.SetName("weft-rm-b")
				Expect(unstructured.SetNestedField(second.Object, "b", "spec", "selector", "matchLabels", "weft.io/e2e-replica")).To(Succeed())
				Expect(unstructured.SetNestedField(second.Object, "b", "spec", "template", "metadata", "labels", "weft.io/e2e-replica")).To(Succeed())
				objs = append(objs, second)
				break
			}
		}
		// A queue tree there before (an earlier spec's, as an admin's) is
		// left as it is, as with the chart's queues: [] — the chart's own
		// would rewrite its root and default; otherwise the chart's queues
		// come and go with it.
		if before, _ := cluster.Kubectl(ctx, "get", "queues.weft.io", "-o", "name", "--ignore-not-found"); strings.TrimSpace(before) != "" {
			objs = slices.DeleteFunc(objs, func(u *unstructured.Unstructured) bool { return u.GetKind() == "Queue" })
		}
		applied, err := cluster.Install(ctx, objs, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			// Free the host's ports for the specs that run Weft as processes;
			// a later `make run` must not find this suite's weft-rm state, nor
			// later specs the chart's queues.
			Expect(kube.RemoveWeft(ctx, cluster, "weft", time.Minute)).To(Succeed())
			for _, u := range applied {
				if u.GetKind() == "Queue" {
					_, err := cluster.Kubectl(ctx, "delete", "queues.weft.io", u.GetName(), "--ignore-not-found")
					Expect(err).NotTo(HaveOccurred())
				}
			}
		})
		if secondRM {
			// Cleanups run last first: the second replica goes before
			// RemoveWeft waits for weft-system to empty.
			DeferCleanup(func(ctx SpecContext) {
				err := cluster.Client.AppsV1().Deployments("weft-system").Delete(ctx, "weft-rm-b", metav1.DeleteOptions{})
				if !apierrors.IsNotFound(err) {
					Expect(err).NotTo(HaveOccurred())
				}
			})
		}
		return applied
	}
	// activeBehindService is the pod of the active weft-rm: the one that
	// holds the Lease, the only one labelled active, the only ready
	// endpoint of the weft-rm Service.
	activeBehindService := func(ctx context.Context, g Gomega) string {
		active, err := cluster.Client.CoreV1().Pods("weft-system").List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/name=weft-rm," + wellknown.LabelRMActive + "=true"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(active.Items).To(HaveLen(1))
		rmLease, err := cluster.Client.CoordinationV1().Leases("weft-system").Get(ctx, "weft-rm", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rmLease.Spec.HolderIdentity).To(HaveValue(Equal(active.Items[0].Name)))
		slices, err := cluster.Client.DiscoveryV1().EndpointSlices("weft-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=weft-rm"})
		g.Expect(err).NotTo(HaveOccurred())
		var ready []string
		for _, sl := range slices.Items {
			for _, ep := range sl.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready && ep.TargetRef != nil {
					ready = append(ready, ep.TargetRef.Name)
				}
			}
		}
		g.Expect(ready).To(ConsistOf(active.Items[0].Name))
		return active.Items[0].Name
	}

	It("applies the deploy manifests and runs Weft's own pods to Ready, the colocation agent lending the node's idle capacity", func(ctx SpecContext) {
		start := time.Now()
		objs := deployLocal(ctx, false)
		Expect(len(objs)).To(BeNumerically(">=", 18))
		pc, err := cluster.Client.SchedulingV1().PriorityClasses().Get(ctx, "weft-low", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(pc.Value).To(Equal(translator.Weft.Priorities[records.TierLow]))

		Eventually(func(g Gomega) {
			d, err := cluster.Client.AppsV1().Deployments("weft-system").Get(ctx, "weft-rm", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)))
			ds, err := cluster.Client.AppsV1().DaemonSets("weft-system").Get(ctx, "weft-nodeplugin", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ds.Status.NumberReady).To(Equal(int32(1)))
			// The tidal controller runs and leads (its Lease).
			tide, err := cluster.Client.AppsV1().Deployments("weft-system").Get(ctx, "weft-tide", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tide.Status.ReadyReplicas).To(Equal(int32(1)))
			lease, err := cluster.Client.CoordinationV1().Leases("weft-system").Get(ctx, "weft-tide", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
			// weft-rm leads its own Lease and labels its pod active, which
			// the Service selects.
			activeBehindService(ctx, g)
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		// The deployed weft-rm sees the node through the API server, and a
		// real client sees it through weft-rm.
		dist, err := hadoop.Client(ctx, "3.4.1")
		Expect(err).NotTo(HaveOccurred())
		conf := filepath.Join(GinkgoT().TempDir(), "conf")
		Expect(hadoop.WriteConf(conf, "127.0.0.1:8032", "127.0.0.1:8030", "127.0.0.1:8088")).To(Succeed())
		Eventually(func() string {
			out, _, _ := dist.Yarn(ctx, conf, "alice", "node", "-list")
			return out
		}).WithTimeout(time.Minute).WithPolling(3 * time.Second).Should(MatchRegexp(`\S+:8041\s+RUNNING`))

		// deploy/local.yaml runs the weft profile: the node plugin's
		// colocation agent, in its privileged pod, measures the machine,
		// publishes what the node can lend and bounds the big box — the
		// host's own BestEffort cgroup (test/kube/down.sh lifts the bound).
		nodes, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.Items).To(HaveLen(1))
		lent, err := kube.WaitLent(ctx, cluster, nodes.Items[0].Name, 1, start, 2*time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(lent.Utilization).NotTo(BeNil())
		Expect(lent.Utilization.NodeMilliCPU).To(BeNumerically(">", 0))
		Eventually(func() int64 { return readInt(filepath.Join(boxCPU, "cpu.cfs_quota_us")) }).WithTimeout(30*time.Second).WithPolling(time.Second).
			Should(BeNumerically(">", 0), "the agent's CFS quota on the host's box")
		Expect(readInt(filepath.Join(boxCPU, "cpu.shares"))).To(Equal(int64(2)))

		// The deployed weft-rm reads the cluster's Queue objects (the chart
		// starts it without --queues): one an admin adds is a queue YARN
		// clients see, without a restart.
		status, errOut, err := dist.Yarn(ctx, conf, "alice", "queue", "-status", "default")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(ContainSubstring("Queue Path : root.default"))
		adhoc := filepath.Join(GinkgoT().TempDir(), "adhoc.yaml")
		Expect(os.WriteFile(adhoc, []byte("apiVersion: weft.io/v1alpha1\nkind: Queue\nmetadata: {name: adhoc}\nspec: {parent: root}\n"), 0o644)).To(Succeed())
		_, err = cluster.Apply(ctx, adhoc)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_, err := cluster.Kubectl(ctx, "delete", "queues.weft.io", "adhoc", "--ignore-not-found")
			Expect(err).NotTo(HaveOccurred())
		})
		Eventually(func() string {
			out, _, _ := dist.Yarn(ctx, conf, "alice", "queue", "-status", "adhoc")
			return out
		}).WithTimeout(45 * time.Second).WithPolling(3 * time.Second).Should(ContainSubstring("Queue Path : root.adhoc"))

		// The chart as a user installs it (its default values), each
		// profile: `helm template | kubectl apply --dry-run=server` against
		// this API server — its schemas, CRDs and admission, beside what is
		// installed. Kubernetes forbids changing a PriorityClass's value, and
		// koordinator's differ from the installed weft profile's: that, and
		// only that, is refused there, as values.yaml tells.
		for _, profile := range []string{"weft", "plain", "katalyst", "koordinator"} {
			out, err := kube.RenderChartYAML(ctx, nil, "profile="+profile)
			Expect(err).NotTo(HaveOccurred())
			objs, err := kube.DecodeObjects(out)
			Expect(err).NotTo(HaveOccurred())
			rendered := filepath.Join(GinkgoT().TempDir(), profile+".yaml")
			Expect(os.WriteFile(rendered, out, 0o644)).To(Succeed())
			applied, err := cluster.Kubectl(ctx, "apply", "--dry-run=server", "-f", rendered)
			if profile != "koordinator" {
				Expect(err).NotTo(HaveOccurred(), "profile %s", profile)
			} else {
				Expect(err).To(HaveOccurred())
				Expect(strings.Count(err.Error(), "Error from server")).To(Equal(3), err.Error())
				Expect(regexp.MustCompile(`PriorityClass[.a-z0-9]* "weft-(high|medium|low)" is invalid`).FindAllString(err.Error(), -1)).To(HaveLen(3), err.Error())
			}
			// One line per object the server took (created, configured or
			// unchanged, in a dry run).
			Expect(strings.Count(applied, "(server dry run)")).To(BeNumerically(">=", len(objs)-3), "profile %s: %s", profile, applied)
		}
	}, SpecTimeout(8*time.Minute))

	It("runs two weft-rm replicas behind the weft-rm Service: the active's pod killed, the standby leads within 10 s, and yarn CLIs configured with the Service's address and with two rm-ids keep answering", func(ctx SpecContext) {
		deployLocal(ctx, true)
		var first string
		Eventually(func(g Gomega) {
			for _, name := range []string{"weft-rm", "weft-rm-b"} {
				d, err := cluster.Client.AppsV1().Deployments("weft-system").Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)), name)
			}
			first = activeBehindService(ctx, g)
		}).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		// kube-proxy's part, which this cluster lacks, by a stand-in; the
		// Service, its EndpointSlices and the pods' labels are the cluster's.
		svc, err := cluster.ProxyService("weft-system", "weft-rm", "client")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(svc.Close)
		dist, err := hadoop.Client(ctx, "3.4.1")
		Expect(err).NotTo(HaveOccurred())
		viaService := filepath.Join(GinkgoT().TempDir(), "conf")
		Expect(hadoop.WriteServiceConf(viaService, svc.Addr(), "127.0.0.1:8030", "127.0.0.1:8088")).To(Succeed())
		viaIDs := filepath.Join(GinkgoT().TempDir(), "conf")
		Expect(hadoop.WriteHAConf(viaIDs, "weft", map[string]hadoop.RMAddrs{
			"rm1": {Client: "127.0.0.1:8032", Scheduler: "127.0.0.1:8030", Web: "127.0.0.1:8088"},
			"rm2": {Client: "127.0.0.1:18032", Scheduler: "127.0.0.1:18030", Web: "127.0.0.1:18088"},
		}, "")).To(Succeed())

		// An application acknowledged through the Service before the
		// active goes (unmanaged: nothing runs, only the RM works).
		out, errOut, err := dist.Run(ctx, viaService, "alice", "sh.weft.interop.SubmitApp", "--name", "via-service", "--unmanaged", "true")
		Expect(err).NotTo(HaveOccurred(), errOut)
		var sub submitted
		Expect(json.Unmarshal([]byte(out), &sub)).To(Succeed(), out)

		// kill -9 of the active (no Lease released), and its pod deleted at
		// once, so that the kubelet does not restart it in place — under the
		// same pod name, the Lease holder's identity, it would simply resume
		// as the active —: as when its node is lost. A yarn CLI started at
		// once through the Service retries its one address each second
		// until the Service leads to the new active.
		pod, err := cluster.Client.CoreV1().Pods("weft-system").Get(ctx, first, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		zero := int64(0)
		killed := time.Now()
		Expect(kube.KillContainers(ctx, pod)).To(Succeed())
		Expect(cluster.Client.CoreV1().Pods("weft-system").Delete(ctx, first, metav1.DeleteOptions{GracePeriodSeconds: &zero})).To(Succeed())
		type answer struct {
			out, errOut string
			err         error
			after       time.Duration
		}
		during := make(chan answer, 1)
		go func() {
			defer GinkgoRecover()
			out, errOut, err := dist.Yarn(ctx, viaService, "alice", "application", "-status", sub.ApplicationID)
			during <- answer{out, errOut, err, time.Since(killed)}
		}()
		var second string
		Eventually(func(g Gomega) {
			second = activeBehindService(ctx, g)
			g.Expect(second).NotTo(Equal(first))
		}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
		took := time.Since(killed)
		var a answer
		Eventually(during).WithTimeout(2 * time.Minute).Should(Receive(&a))
		Expect(a.err).NotTo(HaveOccurred(), a.errOut)
		Expect(a.out).To(MatchRegexp(`Application-Name\s*:\s*via-service`))
		AddReportEntry("failover behind the Service", fmt.Sprintf("%s took over from %s: active behind the Service %s after the kill -9; a yarn CLI started through the Service at the kill answered after %s",
			second, first, took.Round(100*time.Millisecond), a.after.Round(100*time.Millisecond)))
		Expect(took).To(BeNumerically("<", 10*time.Second), "the standby leads and the Service follows it")

		for _, conf := range []string{viaService, viaIDs} {
			out, errOut, err := dist.Yarn(ctx, conf, "alice", "application", "-list", "-appStates", "ALL")
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(out).To(ContainSubstring(sub.ApplicationID), "the application acknowledged before the failover")
		}
		// The Deployment's new pod comes up a standby: the Service keeps
		// only the active.
		Eventually(func(g Gomega) {
			for _, name := range []string{"weft-rm", "weft-rm-b"} {
				d, err := cluster.Client.AppsV1().Deployments("weft-system").Get(ctx, name, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)), name)
			}
			g.Expect(activeBehindService(ctx, g)).To(Equal(second))
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	}, SpecTimeout(10*time.Minute))

	It("creates AM pods and credentials the API server accepts, and removes them on kill", func(ctx SpecContext) {
		// The controller manager gives the namespace its default ServiceAccount.
		Eventually(func() error {
			_, err := cluster.Client.CoreV1().ServiceAccounts("weft-jobs").Get(ctx, "default", metav1.GetOptions{})
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		st, err := state.OpenDir(GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		defer st.Close()
		tree, _ := quota.NewTree(quota.DefaultQueues)
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		mgr := rm.New(st, tree, rm.Options{Logger: quiet})
		// The launcher's reconciler through a client without a cache: what
		// it reads is the API server's.
		kc, err := client.New(cluster.Config, client.Options{Scheme: clientgoscheme.Scheme})
		Expect(err).NotTo(HaveOccurred())
		launcher := amlauncher.New(mgr, kc, amrm.NewTokens(mgr, []byte("0123456789abcdef0123456789abcdef")), amlauncher.Options{
			Namespace: "weft-jobs", Profile: translator.Plain, Runtime: translator.Runtime{Image: "weft/hadoop:3.4.1", JavaHome: "/opt/java"},
			SchedulerName: "weft-scheduler", SchedulerAddr: "weft-rm.weft-system:8030", NMPort: 8041, NMHTTPPort: 8042, Logger: quiet})

		raw, _ := proto.Marshal(&yarnpb.ApplicationSubmissionContextProto{AmContainerSpec: &yarnpb.ContainerLaunchContextProto{
			Command:     []string{"{{JAVA_HOME}}/bin/java", "-Xmx512m", "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster", "1><LOG_DIR>/AppMaster.stdout"},
			Environment: []*yarnpb.StringStringMapProto{{Key: proto.String("CLASSPATH"), Value: proto.String("$PWD/*<CPS>{{HADOOP_CONF_DIR}}")}},
		}})
		id := mgr.NewApplicationID()
		Expect(mgr.Submit(ctx, rm.Submission{ID: id, User: "alice@EXAMPLE.COM", Raw: raw,
			AMResource: records.Resource{MemoryMB: 1536, VCores: 1}})).To(Succeed())
		container := records.ContainerID{Attempt: records.AttemptID{App: id, ID: 1}, ID: 1}
		_, err = launcher.Reconcile(ctx, storesource.Request(container.Attempt))
		Expect(err).NotTo(HaveOccurred())

		pod, err := cluster.Client.CoreV1().Pods("weft-jobs").Get(ctx, translator.PodName(container.String()), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		// Priority admission resolved the tier's class to the same value.
		Expect(*pod.Spec.Priority).To(Equal(translator.Plain.Priorities[records.TierHigh]))
		Expect(pod.Labels).To(HaveKeyWithValue(wellknown.LabelUser, "alice_EXAMPLE.COM"))
		// 1536 MB rounds up to a multiple of the minimum allocation, as in YARN.
		Expect(pod.Spec.Containers[0].Resources.Requests.Memory().Value()).To(Equal(int64(2048 << 20)))
		Expect(mgr.Snapshot().Attempt(container.Attempt).State).To(Equal(records.AttemptLaunched))

		_, err = mgr.Kill(ctx, id, "alice@EXAMPLE.COM", "")
		Expect(err).NotTo(HaveOccurred())
		_, err = launcher.Reconcile(ctx, storesource.Request(container.Attempt))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() bool {
			_, err := cluster.Client.CoreV1().Pods("weft-jobs").Get(ctx, pod.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(30 * time.Second).Should(BeTrue())
		secrets, err := cluster.Client.CoreV1().Secrets("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelApp + "=" + id.String()})
		Expect(err).NotTo(HaveOccurred())
		Expect(secrets.Items).To(BeEmpty())
	})

	It("turns a YarnClient submission into an AM pod and a yarn kill into its removal", func(ctx SpecContext) {
		rm := startRM(ctx, "--kubeconfig", cluster.Kubeconfig, "--namespace", "weft-jobs", "--local-node=false", "--profile", "plain")
		dist, err := hadoop.Client(ctx, "3.4.1")
		Expect(err).NotTo(HaveOccurred())
		conf := filepath.Join(GinkgoT().TempDir(), "conf")
		Expect(hadoop.WriteConf(conf, rm.ClientAddr, rm.SchedulerAddr, rm.WebAddr)).To(Succeed())
		out, errOut, err := dist.Run(ctx, conf, "alice", "sh.weft.interop.SubmitApp", "--name", "on-k8s", "--am-memory", "1024",
			"--command", "{{JAVA_HOME}}/bin/java -version 1><LOG_DIR>/stdout")
		Expect(err).NotTo(HaveOccurred(), errOut)
		var s submitted
		Expect(json.Unmarshal([]byte(out), &s)).To(Succeed())

		appPods := func() []corev1.Pod {
			list, err := cluster.Client.CoreV1().Pods("weft-jobs").List(ctx, metav1.ListOptions{LabelSelector: wellknown.LabelApp + "=" + s.ApplicationID})
			Expect(err).NotTo(HaveOccurred())
			return list.Items
		}
		Eventually(appPods).WithTimeout(30 * time.Second).Should(HaveLen(1))
		pod := appPods()[0]
		Expect(pod.Labels).To(HaveKeyWithValue(wellknown.LabelTier, "high"))
		Expect(pod.Spec.Containers[0].Command[2]).To(ContainSubstring("$JAVA_HOME/bin/java -version 1>/weft/logs/stdout"))
		status, _, err := dist.Yarn(ctx, conf, "alice", "application", "-status", s.ApplicationID)
		Expect(err).NotTo(HaveOccurred())
		Expect(status).To(ContainSubstring("waiting for AM container to Register with RM"))

		_, errOut, err = dist.Yarn(ctx, conf, "alice", "application", "-kill", s.ApplicationID)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Eventually(appPods).WithTimeout(30 * time.Second).Should(BeEmpty())
	}, SpecTimeout(5*time.Minute))

	It("installs the Queue CRD and validates queues", func(ctx SpecContext) {
		root, err := repoRoot()
		Expect(err).NotTo(HaveOccurred())
		_, err = cluster.Apply(ctx, filepath.Join(root, "deploy", "crds", "weft.io_queues.yaml"))
		Expect(err).NotTo(HaveOccurred())
		// The API appears once the CRD is established.
		var objs []*unstructured.Unstructured
		Eventually(func() error {
			objs, err = cluster.Apply(ctx, filepath.Join(root, "deploy", "examples", "queues.yaml"))
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(objs).To(HaveLen(3))
		Expect(objs[2].Object["spec"]).To(HaveKeyWithValue("weight", BeNumerically("==", 2)))
		Expect(objs[1].Object["spec"]).To(HaveKeyWithValue("state", "Running")) // the schema's default

		bad := filepath.Join(GinkgoT().TempDir(), "bad.yaml")
		for _, spec := range []string{`state: Sleeping`, `weight: -1`, `timeWindows: [{name: "night", start: "25:00", end: "06:00"}]`, `userLimitPercent: 0`} {
			Expect(os.WriteFile(bad, []byte("apiVersion: weft.io/v1alpha1\nkind: Queue\nmetadata: {name: bad}\nspec:\n  "+spec+"\n"), 0o644)).To(Succeed())
			_, err := cluster.Apply(ctx, bad)
			Expect(apierrors.IsInvalid(errors.Unwrap(err))).To(BeTrue(), "%s: %v", spec, err)
		}
	})

	It("shows the Queue objects to YARN clients and enforces their ACLs", func(ctx SpecContext) {
		rm := startRM(ctx, "--kubeconfig", cluster.Kubeconfig, "--local-node=false", "--host-path", "/usr", "--profile", "plain")
		dist, err := hadoop.Client(ctx, "3.4.1")
		Expect(err).NotTo(HaveOccurred())
		conf := filepath.Join(GinkgoT().TempDir(), "conf")
		Expect(hadoop.WriteConf(conf, rm.ClientAddr, rm.SchedulerAddr, rm.WebAddr)).To(Succeed())

		status, errOut, err := dist.Yarn(ctx, conf, "alice", "queue", "-status", "etl")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(status).To(ContainSubstring("Queue Path : root.etl"))
		Expect(status).To(ContainSubstring("Capacity : 66.67%")) // 8 of the 12 guaranteed cores
		Expect(status).To(ContainSubstring("Maximum Capacity : 100.00%"))

		out, errOut, err := dist.Run(ctx, conf, "alice", "sh.weft.interop.SubmitApp", "--queue", "etl")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(ContainSubstring(`"queue":"root.etl"`)) // the full path, as a 3.4 RM reports it
		_, errOut, err = dist.Run(ctx, conf, "bob", "sh.weft.interop.SubmitApp", "--queue", "etl")
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring("User bob does not have permission to submit"))

		// An admin lets bob in; weft-rm picks the change up without a restart.
		grant := filepath.Join(GinkgoT().TempDir(), "grant.yaml")
		Expect(os.WriteFile(grant, []byte("apiVersion: weft.io/v1alpha1\nkind: Queue\nmetadata: {name: etl}\nspec:\n  parent: root\n  submitACL: \"etl,alice,bob data-eng\"\n"), 0o644)).To(Succeed())
		_, err = cluster.Apply(ctx, grant)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, errOut, err := dist.Run(ctx, conf, "bob", "sh.weft.interop.SubmitApp", "--queue", "etl")
			if err != nil {
				return fmt.Errorf("%v: %s", err, errOut)
			}
			return nil
		}).WithTimeout(45 * time.Second).WithPolling(2 * time.Second).Should(Succeed())

		// weft-rm publishes what the queues hold: both applications wait in
		// etl, their AM pods exist, and root adds up its children. etl's
		// guarantee was dropped by the apply above, so all it holds is
		// borrowed.
		dyn, err := dynamic.NewForConfig(cluster.Config)
		Expect(err).NotTo(HaveOccurred())
		queues := dyn.Resource(v1alpha1.GroupVersion.WithResource("queues"))
		statusOf := func(name string) (*v1alpha1.QueueStatus, error) {
			u, err := queues.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			var q v1alpha1.Queue
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &q)
			return &q.Status, err
		}
		Eventually(func(g Gomega) {
			etl, err := statusOf("etl")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(etl.PendingApplications).To(BeNumerically("==", 2))
			g.Expect(etl.Used.Memory().Value()).To(Equal(int64(2 << 30)))
			g.Expect(etl.Borrowed.Memory().Value()).To(Equal(int64(2 << 30)))
			root, err := statusOf("root")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(root.PendingApplications).To(BeNumerically(">=", 2))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(5*time.Minute))

	It("reads a node's reclaimable capacity from Katalyst's CustomNodeResource (katalyst-api's own CRD)", func(ctx SpecContext) {
		crd, err := kube.KatalystCNRCRD(ctx)
		Expect(err).NotTo(HaveOccurred())
		_, err = cluster.Apply(ctx, crd)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_, _ = cluster.Kubectl(ctx, "delete", "crd", "customnoderesources.node.katalyst.kubewharf.io", "--wait=false")
		})
		nodes, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes.Items).NotTo(BeEmpty())
		dyn, err := dynamic.NewForConfig(cluster.Config)
		Expect(err).NotTo(HaveOccurred())
		cnrs := dyn.Resource(nodesync.CNRResource)
		cnr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "node.katalyst.kubewharf.io/v1alpha1", "kind": "CustomNodeResource",
			"metadata": map[string]any{"name": nodes.Items[0].Name},
		}}
		// The API appears once the CRD is established.
		Eventually(func() error {
			created, err := cnrs.Create(ctx, cnr, metav1.CreateOptions{})
			if err == nil {
				cnr = created
			}
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())
		// As Katalyst's agent reports it: what the online pods leave.
		cnr.Object["status"] = map[string]any{"topologyPolicy": "none", "resources": map[string]any{"allocatable": map[string]any{
			"resource.katalyst.kubewharf.io/reclaimed_millicpu": "6k", "resource.katalyst.kubewharf.io/reclaimed_memory": "12Gi"}}}
		_, err = cnrs.UpdateStatus(ctx, cnr, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())

		rm := startRM(ctx, "--kubeconfig", cluster.Kubeconfig, "--local-node=false", "--profile", "katalyst")
		Eventually(func(g Gomega) {
			var m struct {
				ClusterMetrics struct{ TotalMB, TotalVirtualCores int64 }
			}
			resp, err := http.Get("http://" + rm.WebAddr + "/ws/v1/cluster/metrics")
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			g.Expect(json.NewDecoder(resp.Body).Decode(&m)).To(Succeed())
			g.Expect(m.ClusterMetrics.TotalVirtualCores).To(Equal(int64(6)))
			g.Expect(m.ClusterMetrics.TotalMB).To(Equal(int64(12 << 10)))
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
	}, SpecTimeout(3*time.Minute))
})
