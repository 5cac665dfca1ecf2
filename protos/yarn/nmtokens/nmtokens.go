// Package nmtokens is the secret manager shared by the ResourceManager
// facade, which issues container tokens and NMTokens, and each node's
// plugin, which checks them: an AM may start a container only with the
// container token the RM granted, over a connection authenticated by the
// NMToken of its attempt. Both sides hold the same master key (a
// Kubernetes Secret, or a file in the embedded mode); passwords are
// HMAC-SHA1 of the identifier, as Hadoop's SecretManager makes them.
package nmtokens

import (
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
)

// Token kinds, as Hadoop names them.
const (
	ContainerTokenKind = "ContainerToken"
	NMTokenKind        = "NMToken"
)

// keyID names the single master key.
const keyID = 1

// Keys issues and verifies both kinds of token.
type Keys struct {
	key []byte
	now func() time.Time
}

// New returns Keys over a master key.
func New(key []byte) *Keys { return &Keys{key: key, now: time.Now} }

func (k *Keys) password(identifier []byte) []byte {
	m := hmac.New(sha1.New, k.key)
	m.Write(identifier)
	return m.Sum(nil)
}

// ContainerGrant is what a container token vouches for.
type ContainerGrant struct {
	Container           records.ContainerID
	NodeID              string // host:port of the node plugin
	User                string // the application's submitter
	Resource            records.Resource
	Priority            int32
	AllocationRequestID int64
	// RMIdentifier is the RM incarnation (its cluster timestamp).
	RMIdentifier int64
	Expiry       time.Time
	// Tier and Queue are the RM's decisions the node needs to build the
	// pod; they travel signed, as allocation tags.
	Tier  records.Tier
	Queue string
}

// Allocation tags carrying the RM's decisions, followed by the tier's
// name and the queue. They are translator/wellknown's AllocationTagTier
// and AllocationTagQueue, which this package, below translator, cannot
// import; a test there keeps the two equal.
const (
	TagTier  = "weft.io/tier="
	TagQueue = "weft.io/queue="
)

// ContainerToken issues the token an AM presents to start a container.
func (k *Keys) ContainerToken(g ContainerGrant) (*commonpb.TokenProto, error) {
	identifier, err := proto.Marshal(&yarnpb.ContainerTokenIdentifierProto{
		ContainerId: wire.ContainerID(g.Container), NmHostAddr: proto.String(g.NodeID), AppSubmitter: proto.String(g.User),
		Resource:        wire.Resource(g.Resource),
		ExpiryTimeStamp: proto.Int64(g.Expiry.UnixMilli()), MasterKeyId: proto.Int32(keyID), RmIdentifier: proto.Int64(g.RMIdentifier),
		Priority: &yarnpb.PriorityProto{Priority: proto.Int32(g.Priority)}, CreationTime: proto.Int64(k.now().UnixMilli()),
		ContainerType: yarnpb.ContainerTypeProto_TASK.Enum(), AllocationRequestId: proto.Int64(g.AllocationRequestID),
		AllocationTags: []string{TagTier + g.Tier.String(), TagQueue + g.Queue},
	})
	if err != nil {
		return nil, err
	}
	return &commonpb.TokenProto{Identifier: identifier, Password: k.password(identifier),
		Kind: proto.String(ContainerTokenKind), Service: proto.String(g.NodeID)}, nil
}

// VerifyContainerToken checks a container token's signature, expiry and
// node, and returns what it grants. Errors are InvalidToken RemoteErrors
// with YARN's wording.
func (k *Keys) VerifyContainerToken(t *commonpb.TokenProto, nodeID string) (*ContainerGrant, error) {
	id := &yarnpb.ContainerTokenIdentifierProto{}
	if t == nil || proto.Unmarshal(t.GetIdentifier(), id) != nil || id.GetContainerId() == nil {
		return nil, ipc.Errorf(ipc.ClassInvalidToken, "Invalid container token used for starting container")
	}
	c := wire.ContainerIDOf(id.GetContainerId())
	if !hmac.Equal(k.password(t.GetIdentifier()), t.GetPassword()) || id.GetMasterKeyId() != keyID {
		return nil, ipc.Errorf(ipc.ClassInvalidToken, "Invalid container token used for starting container on : %s", nodeID)
	}
	if id.GetNmHostAddr() != nodeID {
		return nil, ipc.Errorf(ipc.ClassInvalidToken, "Given Container %s identifier is not valid for current Node manager. Expected : %s Found : %s",
			c, nodeID, id.GetNmHostAddr())
	}
	expiry := time.UnixMilli(id.GetExpiryTimeStamp())
	if k.now().After(expiry) {
		return nil, ipc.Errorf(ipc.ClassInvalidToken, "This token is expired. current time is %d found %d", k.now().UnixMilli(), id.GetExpiryTimeStamp())
	}
	var tier records.Tier
	var queue string
	for _, t := range id.GetAllocationTags() {
		if v, ok := strings.CutPrefix(t, TagTier); ok {
			tier, _ = records.ParseTier(v)
		}
		if v, ok := strings.CutPrefix(t, TagQueue); ok {
			queue = v
		}
	}
	return &ContainerGrant{Container: c, NodeID: id.GetNmHostAddr(), User: id.GetAppSubmitter(), Tier: tier, Queue: queue,
		Resource: wire.ResourceOf(id.GetResource()),
		Priority: id.GetPriority().GetPriority(), AllocationRequestID: id.GetAllocationRequestId(),
		RMIdentifier: id.GetRmIdentifier(), Expiry: expiry}, nil
}

// NMToken issues the token an attempt's AM authenticates to a node with.
func (k *Keys) NMToken(attempt records.AttemptID, host string, port int32, user string) (*commonpb.TokenProto, error) {
	identifier, err := proto.Marshal(&yarnpb.NMTokenIdentifierProto{AppAttemptId: wire.AttemptID(attempt),
		NodeId: &yarnpb.NodeIdProto{Host: proto.String(host), Port: proto.Int32(port)}, AppSubmitter: proto.String(user), KeyId: proto.Int32(keyID)})
	if err != nil {
		return nil, err
	}
	return &commonpb.TokenProto{Identifier: identifier, Password: k.password(identifier),
		Kind: proto.String(NMTokenKind), Service: proto.String(fmt.Sprintf("%s:%d", host, port))}, nil
}

// NMTokenIdentity is who an NMToken authenticates.
type NMTokenIdentity struct {
	Attempt records.AttemptID
	NodeID  string
	User    string
}

// ParseNMToken decodes an NMToken identifier.
func ParseNMToken(identifier []byte) (*NMTokenIdentity, error) {
	id := &yarnpb.NMTokenIdentifierProto{}
	if proto.Unmarshal(identifier, id) != nil || id.GetAppAttemptId() == nil {
		return nil, ipc.Errorf(ipc.ClassInvalidToken, "malformed NMToken identifier")
	}
	return &NMTokenIdentity{Attempt: wire.AttemptIDOf(id.GetAppAttemptId()), NodeID: wire.NodeIDString(id.GetNodeId()), User: id.GetAppSubmitter()}, nil
}

// NodeAuthenticator is the node side: an ipc.TokenAuthenticator accepting
// NMTokens issued for this node. The authenticated user is the attempt,
// as Hadoop's NMTokenIdentifier names it.
type NodeAuthenticator struct {
	Keys   *Keys
	NodeID string
}

// RetrievePassword implements ipc.TokenAuthenticator.
func (a NodeAuthenticator) RetrievePassword(identifier []byte) ([]byte, string, error) {
	id, err := ParseNMToken(identifier)
	if err != nil {
		return nil, "", err
	}
	if id.NodeID != a.NodeID {
		return nil, "", ipc.Errorf(ipc.ClassInvalidToken, "Given NMToken for application : %s is not valid for current node manager.expected : %s found : %s",
			id.Attempt.App, a.NodeID, id.NodeID)
	}
	return a.Keys.password(identifier), id.Attempt.String(), nil
}
