package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/test/kube"
)

// binDir holds the weft binaries built once for the suite.
var binDir string

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Weft end-to-end")
}

// The suite's one-time work, bounded by its own timeout rather than the
// first spec's: Weft's binaries, and on a fresh machine the builds the
// suites share — the local Kubernetes (started, then stopped: each suite
// brings it up and down), Weft's image in its containerd, and the pinned
// Hadoop harnesses from Maven, kwok.
var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	dir, err := os.MkdirTemp("", "weft-e2e-bin-")
	Expect(err).NotTo(HaveOccurred())
	Expect(BuildBinaries(ctx, dir)).To(Succeed())
	cluster, err := kube.Up(ctx)
	Expect(err).NotTo(HaveOccurred())
	// Weft left deployed by `make run` (the cluster keeps its state) would
	// schedule, and clean up, the suites' pods as its own.
	apps := cluster.Client.AppsV1()
	err = apps.Deployments("weft-system").Delete(ctx, "weft-rm", metav1.DeleteOptions{})
	Expect(ignoreNotFound(err)).To(Succeed())
	err = apps.DaemonSets("weft-system").Delete(ctx, "weft-nodeplugin", metav1.DeleteOptions{})
	Expect(ignoreNotFound(err)).To(Succeed())
	err = apps.Deployments("weft-system").Delete(ctx, "weft-tide", metav1.DeleteOptions{})
	Expect(ignoreNotFound(err)).To(Succeed())
	Expect(BuildWeftImage(ctx)).To(Succeed())
	Expect(kube.Down(ctx)).To(Succeed())
	for _, v := range hadoop.Versions {
		dist, err := hadoop.Client(ctx, v)
		Expect(err).NotTo(HaveOccurred())
		_, err = dist.Home()
		Expect(err).NotTo(HaveOccurred())
	}
	_, err = hadoop.MiniCluster(ctx, "3.4.1")
	Expect(err).NotTo(HaveOccurred())
	_, err = hadoop.SparkDist(ctx)
	Expect(err).NotTo(HaveOccurred())
	// kwok, which the tide suite's first spec would otherwise build inside
	// its one-minute timeout (a cold run timed out there).
	_, err = kube.Kwok(ctx)
	Expect(err).NotTo(HaveOccurred())
	return []byte(dir)
}, func(dir []byte) {
	binDir = string(dir)
}, NodeTimeout(60*time.Minute))

var _ = SynchronizedAfterSuite(func() {}, func() {
	os.RemoveAll(binDir)
})

// startRM starts a weft-rm on free loopback ports with a fresh data dir,
// stopped when the spec ends.
func startRM(ctx context.Context, args ...string) *RM {
	addrs, err := FreeAddrs(3)
	Expect(err).NotTo(HaveOccurred())
	r := &RM{Bin: filepath.Join(binDir, "weft-rm"), DataDir: GinkgoT().TempDir(), ClientAddr: addrs[0], SchedulerAddr: addrs[1], WebAddr: addrs[2], Args: args}
	Expect(r.Start(ctx)).To(Succeed())
	DeferCleanup(func() {
		r.Stop()
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("weft-rm logs:\n%s\n", r.Logs())
		}
	})
	return r
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
