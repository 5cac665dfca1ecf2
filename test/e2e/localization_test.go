package e2e

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// localizationSpecs run in the ordered YARN applications container.
func localizationSpecs(yarn func() *yarnOnKube) {
	It("fails a container whose HDFS resource changed or is corrupt, with YARN's diagnostics, and nothing else on the node", func(ctx SpecContext) {
		y := yarn()
		local := GinkgoT().TempDir()
		for name, content := range map[string]string{"changed.txt": "first version\n", "corrupt.txt": strings.Repeat("weft block ", 40000)} {
			Expect(os.WriteFile(filepath.Join(local, name), []byte(content), 0o644)).To(Succeed())
		}
		_, errOut, err := y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-mkdir", "-p", "/user/alice/res")
		Expect(err).NotTo(HaveOccurred(), errOut)
		_, errOut, err = y.dist.Hadoop(ctx, y.conf, "alice", "fs", "-put", "-f", filepath.Join(local, "changed.txt"), filepath.Join(local, "corrupt.txt"), "/user/alice/res")
		Expect(err).NotTo(HaveOccurred(), errOut)
		// Corrupt the one replica of corrupt.txt on the datanode's disk:
		// reads of it fail their checksums, as after a bad disk.
		blocks := 0
		Expect(filepath.WalkDir(y.dfsDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "blk_") || strings.HasSuffix(d.Name(), ".meta") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil || !bytes.HasPrefix(b, []byte("weft block ")) {
				return err
			}
			blocks++
			copy(b[1000:], "CORRUPTED")
			return os.WriteFile(p, b, 0o644)
		})).To(Succeed())
		Expect(blocks).To(Equal(1))

		// An application that runs meanwhile on the same node.
		done := make(chan string, 1)
		go func() {
			defer GinkgoRecover()
			err, out := y.distShell(ctx, "ds-beside-bad-resources", "-num_containers", "2", "-shell_command", "sleep 5")
			if err != nil {
				out = err.Error() + "\n" + out
			} else {
				out = ""
			}
			done <- out
		}()

		for _, c := range []struct {
			name, resource, rewrite, diagnostic string
		}{
			{"changed-resource", "/user/alice/res/changed.txt", "true", "changed on src filesystem"},
			{"corrupt-resource", "/user/alice/res/corrupt.txt", "false", "checksum"},
		} {
			_, status := y.submitUntilFailed(ctx, "--name", c.name, "--am-memory", "256", "--max-attempts", "1",
				"--resource", c.resource, "--rewrite-after-record", c.rewrite, "--command", "cat "+filepath.Base(c.resource)+"; sleep 30")
			// The localizer's message reaches the client in the attempt's
			// diagnostics, naming the resource.
			Expect(status).To(ContainSubstring(c.resource), c.name)
			Expect(strings.ToLower(status)).To(ContainSubstring(c.diagnostic), c.name)
		}
		Eventually(done).WithTimeout(4 * time.Minute).Should(Receive(BeEmpty()))
	}, SpecTimeout(8*time.Minute))
}
