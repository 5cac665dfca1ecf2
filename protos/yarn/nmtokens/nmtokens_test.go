package nmtokens

import (
	"testing"
	"time"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
)

func remoteClass(err error) string {
	if re, ok := err.(*ipc.RemoteError); ok {
		return re.Class
	}
	return ""
}

func TestContainerToken(t *testing.T) {
	k := New([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Unix(1_800_000_000, 0)
	k.now = func() time.Time { return now }
	c := records.ContainerID{Attempt: records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 42, ID: 7}, ID: 1}, ID: 3}
	grant := ContainerGrant{Container: c, NodeID: "node-a:8041", User: "alice", Resource: records.Resource{MemoryMB: 1024, VCores: 1},
		Priority: 5, AllocationRequestID: 9, RMIdentifier: 42, Expiry: now.Add(time.Minute), Tier: records.TierLow, Queue: "root.etl"}
	tok, err := k.ContainerToken(grant)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.VerifyContainerToken(tok, "node-a:8041")
	if err != nil {
		t.Fatal(err)
	}
	if got.Container != c || got.User != "alice" || got.Tier != records.TierLow || got.Queue != "root.etl" || got.Resource != grant.Resource || got.Priority != 5 {
		t.Errorf("verified grant %+v", got)
	}
	other := New([]byte("another key, another RM.........."))
	expired := *k
	expired.now = func() time.Time { return now.Add(2 * time.Minute) }
	tampered := commonpb.TokenProto{Identifier: tok.Identifier, Kind: tok.Kind, Service: tok.Service}
	tampered.Password = append([]byte{}, tok.Password...)
	tampered.Password[0] ^= 1
	for _, tc := range []struct {
		name string
		keys *Keys
		node string
		tok  *commonpb.TokenProto
	}{
		{"another node", k, "node-b:8041", tok},
		{"another key", other, "node-a:8041", tok},
		{"tampered password", k, "node-a:8041", &tampered},
		{"expired", &expired, "node-a:8041", tok},
		{"no token", k, "node-a:8041", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.keys.VerifyContainerToken(tc.tok, tc.node); remoteClass(err) != ipc.ClassInvalidToken {
				t.Errorf("err = %v, want InvalidToken", err)
			}
		})
	}
}

func TestNMToken(t *testing.T) {
	k := New([]byte("0123456789abcdef0123456789abcdef"))
	att := records.AttemptID{App: records.ApplicationID{ClusterTimestamp: 42, ID: 7}, ID: 2}
	tok, err := k.NMToken(att, "node-a", 8041, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if tok.GetService() != "node-a:8041" || tok.GetKind() != NMTokenKind {
		t.Errorf("token %v", tok)
	}
	pw, user, err := NodeAuthenticator{Keys: k, NodeID: "node-a:8041"}.RetrievePassword(tok.GetIdentifier())
	if err != nil || user != att.String() || string(pw) != string(tok.GetPassword()) {
		t.Errorf("RetrievePassword = %x, %q, %v", pw, user, err)
	}
	if _, _, err := (NodeAuthenticator{Keys: k, NodeID: "node-b:8041"}).RetrievePassword(tok.GetIdentifier()); remoteClass(err) != ipc.ClassInvalidToken {
		t.Errorf("another node's NMToken: %v", err)
	}
	if _, _, err := (NodeAuthenticator{Keys: k, NodeID: "node-a:8041"}).RetrievePassword([]byte{0xff, 0x01}); remoteClass(err) != ipc.ClassInvalidToken {
		t.Errorf("garbage identifier: %v", err)
	}
}
