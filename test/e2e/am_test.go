package e2e

import (
	"encoding/json"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/weft-sh/weft/test/hadoop"
)

// ApplicationMasterProtocol with Hadoop's own AMRMClient, as an unmanaged
// AM: the AM/RM half of the AM/NM path, before pods exist.
var _ = Describe("ApplicationMasters against weft-rm", func() {
	for _, version := range hadoop.Versions {
		It("registers, heartbeats and finishes an unmanaged AM with Hadoop "+version, func(ctx SpecContext) {
			dist, err := hadoop.Client(ctx, version)
			Expect(err).NotTo(HaveOccurred())
			rm := startRM(ctx)
			conf := filepath.Join(GinkgoT().TempDir(), "conf")
			Expect(hadoop.WriteConf(conf, rm.ClientAddr, rm.SchedulerAddr, rm.WebAddr)).To(Succeed())

			out, errOut, err := dist.Run(ctx, conf, "alice", "sh.weft.interop.UnmanagedAM", "--final", "SUCCEEDED", "--heartbeats", "4")
			Expect(err).NotTo(HaveOccurred(), errOut)
			var r struct {
				TokenKind, RegisteredQueue, StateWhileRegistered, State, FinalStatus, Diagnostics, AMHost string
				ForgedToken, FinishedAttemptToken                                                         string
				MaxMemoryMB, Heartbeats, ClusterNodes                                                     int
			}
			Expect(json.Unmarshal([]byte(out), &r)).To(Succeed(), out)
			Expect(r.TokenKind).To(Equal("YARN_AM_RM_TOKEN"))
			Expect(r.RegisteredQueue).To(Equal("root.default")) // the full path, as Hadoop 3.4
			Expect(r.MaxMemoryMB).To(Equal(8192))
			Expect(r.StateWhileRegistered).To(Equal("RUNNING"))
			Expect(r.ClusterNodes).To(Equal(1))
			Expect(r.State).To(Equal("FINISHED"))
			Expect(r.FinalStatus).To(Equal("SUCCEEDED"))
			Expect(r.Diagnostics).To(Equal("unregistered by the probe"))
			Expect(r.AMHost).To(Equal("127.0.0.1"))
			// A forged password fails SASL; a finished attempt's token is no
			// longer known — the exceptions Hadoop's client expects.
			Expect(r.ForgedToken).To(ContainSubstring("DIGEST-MD5: digest response format violation. Mismatched response."))
			Expect(r.FinishedAttemptToken).To(ContainSubstring("not found in AMRMTokenSecretManager."))
			Expect(errOut).To(ContainSubstring("SecretManager$InvalidToken"))

			status, _, err := dist.Yarn(ctx, conf, "alice", "application", "-list", "-appStates", "FINISHED")
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(MatchRegexp(`unmanaged-am\s+YARN\s+alice\s+root.default\s+FINISHED\s+SUCCEEDED`))
		}, SpecTimeout(5*time.Minute))
	}
})
