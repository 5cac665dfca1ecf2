package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/weft-sh/weft/deploy/images"
	"github.com/weft-sh/weft/test/kube"
)

// The kind-style cluster (test/kube/up.sh --nodes 3): the control plane
// and three nodes each in a network namespace of their own, each node a
// real kubelet on its own containerd, with its own address, pod range and
// cgroup subtree. What makes it a cluster rather than one node is what is
// checked: distinct addresses, pods on every node, pods reaching pods on
// other nodes, host-network pods in their node's network, and each node's
// pods in its own cgroup subtree.
var _ = Describe("A kind-style cluster of three real nodes", Ordered, func() {
	const nodeCount = 3
	var cluster *kube.Cluster
	var nodes []corev1.Node
	BeforeAll(func(ctx SpecContext) {
		var err error
		cluster, err = kube.UpNodes(ctx, nodeCount)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(kube.DownNodes)
		// A Weft that `make run` installed and no `make stop` removed is
		// kept in etcd and starts again with the nodes, on the addresses
		// the specs' Weft serves on.
		Expect(kube.RemoveWeft(ctx, cluster, "weft", 2*time.Minute)).To(Succeed())
	}, NodeTimeout(20*time.Minute))

	It("lists three Ready nodes with distinct addresses, each kubelet reporting its release", func(ctx SpecContext) {
		list, err := cluster.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Items).To(HaveLen(nodeCount))
		nodes = list.Items
		seen := map[string]string{}
		for _, n := range nodes {
			Expect(nodeReady(&n)).To(BeTrue(), "node %s Ready", n.Name)
			ip := internalIP(&n)
			Expect(ip).NotTo(BeEmpty(), "node %s has an InternalIP", n.Name)
			Expect(net.ParseIP(ip).IsLoopback()).To(BeFalse())
			Expect(seen).NotTo(HaveKey(ip), "node %s's address %s is also %s's", n.Name, ip, seen[ip])
			seen[ip] = n.Name
			// A build that misses its version stamp reports v0.0.0-master.
			Expect(n.Status.NodeInfo.KubeletVersion).To(MatchRegexp(`^v1\.\d+\.\d+$`))
		}
		v, err := cluster.Client.Discovery().ServerVersion()
		Expect(err).NotTo(HaveOccurred())
		Expect(v.GitVersion).To(MatchRegexp(`^v1\.\d+\.\d+$`))
		out, err := cluster.Kubectl(ctx, "get", "nodes", "-o", "wide")
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Println(out)
		// The first spec's timeout bounds the container's BeforeAll too:
		// bringing the nodes up and their DNS serving.
	}, SpecTimeout(5*time.Minute))

	It("runs a pod on every node, in its node's pod range and cgroup subtree, reachable from pods on the other nodes", func(ctx SpecContext) {
		Expect(nodes).To(HaveLen(nodeCount), "the nodes were listed")
		pods := map[string]*corev1.Pod{} // by node
		for _, n := range nodes {
			pods[n.Name] = startServer(ctx, cluster, n.Name, false)
		}
		for _, n := range nodes {
			p := waitRunning(ctx, cluster, pods[n.Name])
			pods[n.Name] = p
			_, podRange, err := net.ParseCIDR(n.Spec.PodCIDR)
			if n.Spec.PodCIDR == "" || err != nil {
				// The nodes' ranges are the network's (net.sh), not the
				// controller manager's: the pod's address must be in the
				// node's bridge's range, which is on its own /24.
				podRange = &net.IPNet{IP: net.ParseIP(p.Status.PodIP).Mask(net.CIDRMask(24, 32)), Mask: net.CIDRMask(24, 32)}
			}
			Expect(podRange.Contains(net.ParseIP(p.Status.PodIP))).To(BeTrue())
			Expect(p.Status.HostIP).To(Equal(internalIP(&n)))
			// Its cgroup is below its node's root, not another's nor the
			// machine's kubepods.
			Expect(podCgroup(n.Name, p.UID)).To(BeTrue(), "pod %s's cgroup under /%s/kubepods", p.Name, n.Name)
			for _, other := range nodes {
				if other.Name != n.Name {
					Expect(podCgroup(other.Name, p.UID)).To(BeFalse(), "pod %s's cgroup under /%s", p.Name, other.Name)
				}
			}
		}
		// Pod ranges differ, one per node.
		ranges := map[string]bool{}
		for _, p := range pods {
			ranges[net.ParseIP(p.Status.PodIP).Mask(net.CIDRMask(24, 32)).String()] = true
		}
		Expect(ranges).To(HaveLen(nodeCount))

		// This machine reaches every pod; each pod answers with its node.
		for node, p := range pods {
			Expect(httpGet(ctx, "http://"+net.JoinHostPort(p.Status.PodIP, "8080")+"/")).To(Equal(node))
		}
		// Each pod reaches the pods of the other nodes, through the API
		// server's exec, which itself goes to the kubelet at its node's
		// address.
		for from, p := range pods {
			for to, q := range pods {
				if from == to {
					continue
				}
				out, err := cluster.Kubectl(ctx, "exec", "-n", "default", p.Name, "--", "sh", "-c",
					fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 8080`, q.Status.PodIP))
				Expect(err).NotTo(HaveOccurred(), "from %s to %s", from, to)
				Expect(out).To(HavePrefix("HTTP/1.1 200"), "from %s to %s", from, to)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				Expect(strings.TrimSpace(lines[len(lines)-1])).To(Equal(to), "from %s to %s", from, to)
			}
		}
	}, SpecTimeout(4*time.Minute))

	It("runs a host-network pod in its node's own network, on the node's address", func(ctx SpecContext) {
		Expect(nodes).To(HaveLen(nodeCount), "the nodes were listed")
		n := nodes[len(nodes)-1]
		p := waitRunning(ctx, cluster, startServer(ctx, cluster, n.Name, true))
		Expect(p.Status.PodIP).To(Equal(internalIP(&n)))
		// Served on the node's address, as a YARN container's port is.
		Expect(httpGet(ctx, "http://"+net.JoinHostPort(internalIP(&n), "8080")+"/")).To(Equal(n.Name))
		// busybox's sh runs its applets without links in the image.
		out, err := cluster.Kubectl(ctx, "exec", "-n", "default", p.Name, "--", "sh", "-c", "ip -4 -o addr")
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(ContainSubstring(" " + internalIP(&n) + "/"))
		for _, other := range nodes[:len(nodes)-1] {
			Expect(out).NotTo(ContainSubstring(" "+internalIP(&other)+"/"), "node %s's address inside node %s", other.Name, n.Name)
		}
	}, SpecTimeout(2*time.Minute))

	It("resolves Services by name through the cluster DNS from every node's pods, and reaches them at their ClusterIPs", func(ctx SpecContext) {
		Expect(nodes).To(HaveLen(nodeCount), "the nodes were listed")
		core := cluster.Client.CoreV1()
		// A Service in front of a server on the last node.
		last := nodes[len(nodes)-1].Name
		server := waitRunning(ctx, cluster, startServer(ctx, cluster, last, false))
		server.Labels = map[string]string{"app": "dns-check"}
		_, err := core.Pods("default").Update(ctx, server, metav1.UpdateOptions{})
		Expect(err).NotTo(HaveOccurred())
		svc, err := core.Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns-check", Namespace: "default"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "dns-check"},
				Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = core.Services("default").Delete(ctx, svc.Name, metav1.DeleteOptions{}) })

		// lookup resolves name in pod p, as busybox's nslookup prints the
		// answer: the addresses after the Name line.
		lookup := func(g Gomega, p *corev1.Pod, name string) []string {
			out, err := cluster.Kubectl(ctx, "exec", "-n", "default", p.Name, "--", "nslookup", "-type=a", name)
			g.Expect(err).NotTo(HaveOccurred(), out)
			_, answer, found := strings.Cut(out, "Name:")
			g.Expect(found).To(BeTrue(), out)
			return regexp.MustCompile(`Address:\s*([0-9.]+)`).FindAllString(answer, -1)
		}
		for _, n := range nodes {
			p := waitRunning(ctx, cluster, startServer(ctx, cluster, n.Name, false))
			Expect(p.Spec.DNSPolicy).To(Equal(corev1.DNSClusterFirst))
			Eventually(func(g Gomega) {
				g.Expect(lookup(g, p, "kubernetes.default.svc.cluster.local")).To(ConsistOf(MatchRegexp(`Address:\s*10\.96\.0\.1$`)))
				g.Expect(lookup(g, p, "dns-check.default.svc.cluster.local")).To(ConsistOf(MatchRegexp(`Address:\s*%s$`, regexp.QuoteMeta(svc.Spec.ClusterIP))))
				// The ClusterIP leads to the server, wherever the client is.
				out, err := cluster.Kubectl(ctx, "exec", "-n", "default", p.Name, "--", "sh", "-c",
					fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 80`, svc.Spec.ClusterIP))
				g.Expect(err).NotTo(HaveOccurred(), out)
				lines := strings.Split(strings.TrimSpace(out), "\n")
				g.Expect(strings.TrimSpace(lines[len(lines)-1])).To(Equal(last), "from a pod on %s", n.Name)
			}).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		}
	}, SpecTimeout(4*time.Minute))

	weftOnNodesSpecs(func() *kube.Cluster { return cluster }, nodeCount)
})

// startServer creates a busybox pod on node that serves the node's name
// over HTTP on port 8080, in the node's network with hostNetwork.
func startServer(ctx context.Context, c *kube.Cluster, node string, hostNetwork bool) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "serve-" + node + "-", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:      node,
			HostNetwork:   hostNetwork,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "serve", Image: images.BusyboxRef,
				Command: []string{"/bin/sh", "-c", `mkdir -p /tmp/www && echo "$NODE" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www`},
				Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
				// The kubelet probes from its node's network: the pod's
				// address answers there.
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1},
			}},
		},
	}
	pod, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		zero := int64(0)
		_ = c.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	return pod
}

// waitRunning waits for pod to be Ready and returns it as it is then.
func waitRunning(ctx context.Context, c *kube.Cluster, pod *corev1.Pod) *corev1.Pod {
	GinkgoHelper()
	var got *corev1.Pod
	Eventually(func(g Gomega) {
		p, err := c.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(podReady(p)).To(BeTrue(), "pod %s Ready", p.Name)
		got = p
	}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
	return got
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// podCgroup says whether the pod's cgroup is below node's cgroup subtree
// (a BestEffort pod's, in the v1 memory hierarchy or the v2 tree).
func podCgroup(node string, uid types.UID) bool {
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		if _, err := os.Stat(filepath.Join(root, node, "kubepods", "besteffort", "pod"+string(uid))); err == nil {
			return true
		}
	}
	return false
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return strings.TrimSpace(string(b)), err
}
