package e2e

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/weft-sh/weft/test/hadoop"
	"github.com/weft-sh/weft/translator/credentials"
)

// render prints credentials the way CredentialsTool does, to compare.
func render(c *credentials.Credentials) (tokens, secrets string) {
	var t, s []string
	for alias, tok := range c.Tokens {
		t = append(t, fmt.Sprintf("%s=%s/%s/%s/%s", alias, hex.EncodeToString(tok.Identifier), hex.EncodeToString(tok.Password), tok.Kind, tok.Service))
	}
	for alias, v := range c.Secrets {
		s = append(s, alias+"="+hex.EncodeToString(v))
	}
	sort.Strings(t)
	sort.Strings(s)
	return "{" + strings.Join(t, ", ") + "}", "{" + strings.Join(s, ", ") + "}"
}

// The container's HADOOP_TOKEN_FILE_LOCATION file: Go reads what Hadoop
// writes in both encodings, and Hadoop reads what Go writes.
var _ = Describe("Hadoop token storage", func() {
	for _, version := range hadoop.Versions {
		It("round-trips with Hadoop "+version+"'s Credentials", func(ctx SpecContext) {
			dist, err := hadoop.Client(ctx, version)
			Expect(err).NotTo(HaveOccurred())
			dir := GinkgoT().TempDir()
			writable, protobuf := filepath.Join(dir, "writable"), filepath.Join(dir, "protobuf")
			_, errOut, err := dist.Run(ctx, dir, "alice", "sh.weft.interop.CredentialsTool", "write", writable, protobuf)
			Expect(err).NotTo(HaveOccurred(), errOut)

			read := func(path string) (string, string) {
				out, errOut, err := dist.Run(ctx, dir, "alice", "sh.weft.interop.CredentialsTool", "read", path)
				Expect(err).NotTo(HaveOccurred(), errOut)
				var r struct{ Tokens, Secrets string }
				Expect(json.Unmarshal([]byte(out), &r)).To(Succeed(), out)
				return r.Tokens, r.Secrets
			}
			javaTokens, javaSecrets := read(writable)
			Expect(javaTokens).To(ContainSubstring("RM_DELEGATION_TOKEN"))

			merged := credentials.New()
			for _, path := range []string{writable, protobuf} {
				b, err := os.ReadFile(path)
				Expect(err).NotTo(HaveOccurred())
				c, err := credentials.Parse(b)
				Expect(err).NotTo(HaveOccurred(), path)
				tokens, secrets := render(c)
				Expect(tokens).To(Equal(javaTokens), path)
				Expect(secrets).To(Equal(javaSecrets), path)
				merged.Merge(c)
			}

			// What the AM's pod gets: the client's tokens plus its AMRMToken.
			merged.Tokens["appattempt_1_0001_000001"] = credentials.Token{Identifier: []byte{8, 1}, Password: []byte{9}, Kind: "YARN_AM_RM_TOKEN", Service: "127.0.0.1:8030"}
			out := filepath.Join(dir, "container_tokens")
			b, err := merged.Bytes()
			Expect(err).NotTo(HaveOccurred())
			Expect(os.WriteFile(out, b, 0o600)).To(Succeed())
			tokens, secrets := read(out)
			wantTokens, wantSecrets := render(merged)
			Expect(tokens).To(Equal(wantTokens))
			Expect(secrets).To(Equal(wantSecrets))
		})
	}
})
