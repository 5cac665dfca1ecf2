package e2e

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/weft-sh/weft/test/hadoop"
)

// submitted is what sh.weft.interop.SubmitApp prints.
type submitted struct {
	ApplicationID, State, FinalStatus, Queue, User, Name, Type, Attempt string
	Tags                                                                []string
	Priority                                                            int
}

// For each pinned Hadoop release, its real clients against a weft-rm: a
// user changes nothing but yarn-site.xml.
var _ = Describe("Hadoop clients against weft-rm", func() {
	for _, version := range hadoop.Versions {
		Context("Hadoop "+version, Ordered, func() {
			var (
				dist *hadoop.Dist
				rm   *RM
				conf string
			)
			BeforeAll(func(ctx SpecContext) {
				var err error
				dist, err = hadoop.Client(ctx, version)
				Expect(err).NotTo(HaveOccurred())
				rm = startRM(ctx)
				conf = filepath.Join(GinkgoT().TempDir(), "conf")
				scheduler, err := FreeAddr()
				Expect(err).NotTo(HaveOccurred())
				Expect(hadoop.WriteConf(conf, rm.ClientAddr, scheduler, rm.WebAddr)).To(Succeed())
			}, NodeTimeout(10*time.Minute))

			yarn := func(ctx SpecContext, args ...string) string {
				out, errOut, err := dist.Yarn(ctx, conf, "alice", args...)
				Expect(err).NotTo(HaveOccurred(), "yarn %v: %s", args, errOut)
				return out
			}
			submit := func(ctx SpecContext, args ...string) submitted {
				out, errOut, err := dist.Run(ctx, conf, "alice", "sh.weft.interop.SubmitApp", args...)
				Expect(err).NotTo(HaveOccurred(), errOut)
				var s submitted
				Expect(json.Unmarshal([]byte(out), &s)).To(Succeed(), out)
				return s
			}

			It("submits with YarnClient and sees the application ACCEPTED", func(ctx SpecContext) {
				s := submit(ctx, "--name", "wordcount", "--type", "MAPREDUCE", "--tags", "Nightly,etl", "--am-memory", "1536")
				Expect(s.State).To(Equal("ACCEPTED"))
				Expect(s.FinalStatus).To(Equal("UNDEFINED"))
				Expect(s.Queue).To(Equal("root.default")) // the full path, as Hadoop 3.4 reports it
				Expect(s.User).To(Equal("alice"))
				Expect(s.Type).To(Equal("MAPREDUCE"))
				Expect(s.Tags).To(ConsistOf("nightly", "etl"))
				Expect(s.Attempt).To(Equal(strings.Replace(s.ApplicationID, "application_", "appattempt_", 1) + "_000001"))
			})

			It("answers yarn application -list, -status and -kill", func(ctx SpecContext) {
				s := submit(ctx, "--name", "to-kill")
				list := yarn(ctx, "application", "-list", "-appStates", "ALL")
				Expect(list).To(MatchRegexp(`Total number of applications .*:\d+`))
				Expect(list).To(MatchRegexp(s.ApplicationID + `\s+to-kill\s+YARN\s+alice\s+root.default\s+ACCEPTED\s+UNDEFINED`))

				status := yarn(ctx, "application", "-status", s.ApplicationID)
				Expect(status).To(ContainSubstring("Application-Id : " + s.ApplicationID))
				Expect(status).To(ContainSubstring("Application-Name : to-kill"))
				Expect(status).To(ContainSubstring("State : ACCEPTED"))
				Expect(status).To(ContainSubstring("Queue : root.default"))

				Expect(yarn(ctx, "application", "-kill", s.ApplicationID)).To(ContainSubstring("Killing application " + s.ApplicationID))
				status = yarn(ctx, "application", "-status", s.ApplicationID)
				Expect(status).To(ContainSubstring("State : KILLED"))
				Expect(status).To(ContainSubstring("Final-State : KILLED"))
				Expect(yarn(ctx, "application", "-list", "-appStates", "KILLED")).To(ContainSubstring(s.ApplicationID))
				Expect(yarn(ctx, "application", "-list")).NotTo(ContainSubstring(s.ApplicationID))

				// The CLI prints this only when it catches ApplicationNotFoundException,
				// so it proves the RemoteException class reached it intact.
				unknown, _, _ := dist.Yarn(ctx, conf, "alice", "application", "-status", "application_1_0001")
				Expect(unknown).To(ContainSubstring("Application with id 'application_1_0001' doesn't exist in RM or Timeline Server."))
			})

			It("answers yarn node -list -all and yarn queue -status", func(ctx SpecContext) {
				nodes := yarn(ctx, "node", "-list", "-all")
				Expect(nodes).To(ContainSubstring("Total Nodes:1"))
				Expect(nodes).To(MatchRegexp(`:8041\s+RUNNING\s+\S+:8042\s+0`))
				queue := yarn(ctx, "queue", "-status", "default")
				Expect(queue).To(ContainSubstring("Queue Name : default"))
				Expect(queue).To(ContainSubstring("State : RUNNING"))
				Expect(queue).To(ContainSubstring("Capacity : 100.00%"))
				Expect(queue).To(ContainSubstring("Preemption : enabled"))
				// An unknown queue ends the CLI at once with YARN's message
				// (an IOException would be retried by the client forever).
				unknown, _, _ := dist.Yarn(ctx, conf, "alice", "queue", "-status", "nosuch")
				Expect(unknown).To(ContainSubstring("Cannot get queue from RM by queueName = nosuch, please check."))
			})

			It("refuses a submission to an unknown queue with YARN's message", func(ctx SpecContext) {
				_, errOut, err := dist.Run(ctx, conf, "alice", "sh.weft.interop.SubmitApp", "--queue", "nope")
				Expect(err).To(HaveOccurred())
				Expect(errOut).To(ContainSubstring("to unknown queue: nope"))
			})

			It("authenticates with an RM delegation token and refuses a forged one", func(ctx SpecContext) {
				out, errOut, err := dist.Run(ctx, conf, "alice", "sh.weft.interop.TokenProbe")
				Expect(err).NotTo(HaveOccurred(), errOut)
				var probe struct{ TokenKind, GoodToken, BadToken string }
				Expect(json.Unmarshal([]byte(out), &probe)).To(Succeed(), out)
				Expect(probe.TokenKind).To(Equal("RM_DELEGATION_TOKEN"))
				// The app belongs to the token's owner, not the UGI holding it.
				Expect(probe.GoodToken).To(Equal("ok:user=alice"))
				Expect(probe.BadToken).To(ContainSubstring("DIGEST-MD5: digest response format violation. Mismatched response."))
				Expect(errOut).To(ContainSubstring("javax.security.sasl.SaslException"))
			})

			It("keeps serving Java clients after malformed traffic", func(ctx SpecContext) {
				garbage := [][]byte{
					[]byte("\x16\x03\x01\x02\x00random bytes that are not hrpc"),
					append([]byte("hrpc\x09\x00\x00"), binary.BigEndian.AppendUint32(nil, 0x7fffffff)...), // 2 GiB frame
					append([]byte("hrpc\x09\x00\x00"), 0, 0, 0, 50, 1, 2, 3),                              // truncated frame
					[]byte("hrpc\x09\x00\xdf\x00\x00\x00\x04\x01\x02\x03\x04"),                            // garbage SASL
					[]byte("GET /ws/v1/cluster HTTP/1.1\r\nHost: x\r\n\r\n"),
				}
				for _, g := range garbage {
					c, err := net.Dial("tcp", rm.ClientAddr)
					Expect(err).NotTo(HaveOccurred())
					c.Write(g)
					if tcp, ok := c.(*net.TCPConn); ok {
						tcp.CloseWrite()
					}
					c.SetReadDeadline(time.Now().Add(10 * time.Second))
					buf := make([]byte, 4096)
					for {
						if _, err := c.Read(buf); err != nil {
							break
						}
					}
					c.Close()
				}
				Expect(submit(ctx, "--name", "after-garbage").State).To(Equal("ACCEPTED"))
			})

			It("lists the same applications after a restart", func(ctx SpecContext) {
				before := yarn(ctx, "application", "-list", "-appStates", "ALL")
				Expect(rm.Stop()).To(Succeed())
				Expect(rm.Start(ctx)).To(Succeed())
				after := yarn(ctx, "application", "-list", "-appStates", "ALL")
				rows := func(s string) []string {
					var out []string
					for _, l := range strings.Split(s, "\n") {
						if strings.HasPrefix(l, "application_") {
							out = append(out, strings.Join(strings.Fields(l), " "))
						}
					}
					return out
				}
				Expect(rows(before)).NotTo(BeEmpty())
				Expect(rows(after)).To(ConsistOf(rows(before)))
			})
		})
	}
})
