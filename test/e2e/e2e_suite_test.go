package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// binDir holds the weft binaries built once for the suite.
var binDir string

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Weft end-to-end")
}

var _ = SynchronizedBeforeSuite(func() []byte {
	dir, err := os.MkdirTemp("", "weft-e2e-bin-")
	Expect(err).NotTo(HaveOccurred())
	Expect(BuildBinaries(context.Background(), dir)).To(Succeed())
	return []byte(dir)
}, func(dir []byte) {
	binDir = string(dir)
})

var _ = SynchronizedAfterSuite(func() {}, func() {
	os.RemoveAll(binDir)
})

// startRM starts a weft-rm on free loopback ports with a fresh data dir,
// stopped when the spec ends.
func startRM(ctx context.Context, args ...string) *RM {
	client, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	web, err := FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	r := &RM{Bin: filepath.Join(binDir, "weft-rm"), DataDir: GinkgoT().TempDir(), ClientAddr: client, WebAddr: web, Args: args}
	Expect(r.Start(ctx)).To(Succeed())
	DeferCleanup(func() {
		r.Stop()
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("weft-rm logs:\n%s\n", r.Logs())
		}
	})
	return r
}
