package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/colinmarc/hdfs/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	weftHadoop "github.com/weft-sh/weft/test/hadoop"
)

// A real HDFS (MiniDFSCluster) for the suites: files written by Hadoop's
// own `hadoop fs` are read back by Go through github.com/colinmarc/hdfs/v2,
// the client Weft's node plugin localizes resources with.
var _ = Describe("MiniDFSCluster", Ordered, func() {
	var (
		nameNode string // host:port
		client   *weftHadoop.Dist
		conf     string
	)
	BeforeAll(func(ctx SpecContext) {
		mini, err := weftHadoop.MiniCluster(ctx, "3.4.1")
		Expect(err).NotTo(HaveOccurred())
		work := GinkgoT().TempDir()
		dfs, err := mini.StartService(ctx, work, "sh.weft.interop.MiniDFS", filepath.Join(work, "dfs"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(dfs.Stop)
		Expect(dfs.Ready).To(HaveLen(1))
		uri := dfs.Ready[0]
		nameNode = uri[len("hdfs://"):]

		client, err = weftHadoop.Client(ctx, "3.4.1")
		Expect(err).NotTo(HaveOccurred())
		conf = filepath.Join(work, "conf")
		Expect(weftHadoop.WriteConfWithFS(conf, "127.0.0.1:1", "127.0.0.1:1", "127.0.0.1:1", uri)).To(Succeed())
	}, NodeTimeout(5*time.Minute))

	It("serves a file written by `hadoop fs -put` to the Go HDFS client", func(ctx SpecContext) {
		payload := make([]byte, 3<<20+17) // spans several packets
		rand.Read(payload)
		local := filepath.Join(GinkgoT().TempDir(), "payload.bin")
		Expect(os.WriteFile(local, payload, 0o644)).To(Succeed())

		_, errOut, err := client.Hadoop(ctx, conf, "alice", "fs", "-mkdir", "-p", "/user/alice/in")
		Expect(err).NotTo(HaveOccurred(), errOut)
		_, errOut, err = client.Hadoop(ctx, conf, "alice", "fs", "-put", local, "/user/alice/in/payload.bin")
		Expect(err).NotTo(HaveOccurred(), errOut)
		ls, errOut, err := client.Hadoop(ctx, conf, "alice", "fs", "-ls", "/user/alice/in")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(ls).To(ContainSubstring("alice"))

		fs, err := hdfs.NewClient(hdfs.ClientOptions{Addresses: []string{nameNode}, User: "alice"})
		Expect(err).NotTo(HaveOccurred())
		defer fs.Close()
		info, err := fs.Stat("/user/alice/in/payload.bin")
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Size()).To(Equal(int64(len(payload))))
		got, err := fs.ReadFile("/user/alice/in/payload.bin")
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(got, payload)).To(BeTrue(), "content differs")

		// And the other way: written by Go, listed and read by Hadoop's shell.
		w, err := fs.Create("/user/alice/in/from-go.txt")
		Expect(err).NotTo(HaveOccurred())
		_, err = w.Write([]byte("hello from go\n"))
		Expect(err).NotTo(HaveOccurred())
		// Close completes the file once the DataNodes have acknowledged its
		// block; until then it reports ErrReplicating and is retried, as
		// Java's DFSClient retries complete().
		Eventually(func() error {
			err := w.Close()
			if errors.Is(err, hdfs.ErrReplicating) {
				return err
			}
			if err != nil {
				StopTrying("close").Wrap(err).Now()
			}
			return nil
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		cat, errOut, err := client.Hadoop(ctx, conf, "alice", "fs", "-cat", "/user/alice/in/from-go.txt")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(cat).To(Equal("hello from go\n"))
	})
})
