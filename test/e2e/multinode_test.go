package e2e

import (
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/weft-sh/weft/test/kube"
)

// weftOnNodesSpecs are YARN applications on Weft over the kind-style
// cluster's nodes (cluster returns it, up): what only a cluster of more
// than one node shows — containers spread over nodes, NodeIds and links
// naming each node, a reducer fetching from another node's shuffle.
func weftOnNodesSpecs(cluster func() *kube.Cluster, nodeCount int) {
	Describe("with Weft on its nodes", Ordered, func() {
		var y *yarnOnKube
		BeforeAll(func(ctx SpecContext) {
			c := cluster()
			root, err := repoRoot()
			Expect(err).NotTo(HaveOccurred())
			_, err = c.Apply(ctx, filepath.Join(root, "deploy", "base", "namespaces.yaml"),
				filepath.Join(root, "deploy", "profiles", "plain", "priorityclasses.yaml"))
			Expect(err).NotTo(HaveOccurred())
			Expect(BuildWeftImageOnNodes(ctx, nodeCount)).To(Succeed())
			y = startYarn(ctx, WeftOnKubeOptions{Cluster: c, Version: "3.4.1", Nodes: nodeCount})
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
			hosts := regexp.MustCompile(`weft-node-\d+:8041`).FindAllString(list, -1)
			GinkgoWriter.Println(list)
			Expect(hosts).To(HaveLen(7), "the AM and six containers")
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

		It("runs a TeraSort whose maps land on several nodes, each reducer fetching map outputs from another node's shuffle, and the output validates", func(ctx SpecContext) {
			y.mapReduce(ctx, "TeraGen", "teragen", "-Dmapreduce.job.maps=6", "60000", "/user/alice/tera-nodes-in")
			stop := y.watchPods(ctx, func() string { return y.appByName("TeraSort") })
			y.mapReduce(ctx, "TeraSort", "terasort", "-Dmapreduce.job.reduces=3", "/user/alice/tera-nodes-in", "/user/alice/tera-nodes-out")
			pods := stop()
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
			report, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-cat", "/user/alice/tera-nodes-report/part-r-*")
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(report).To(MatchRegexp(`^checksum\s+[0-9a-f]+\s*$`))
		}, SpecTimeout(12*time.Minute))
	})
}
