// Package amrm serves YARN's ApplicationMasterProtocol (port 8030) to
// ApplicationMasters, authenticated by AMRMTokens.
package amrm

import (
	"crypto/hmac"
	"crypto/sha1"

	"google.golang.org/protobuf/proto"

	commonpb "github.com/weft-sh/weft/protos/hadoop/common"
	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/protos/yarn/wire"
)

// TokenKind is the kind of AMRMTokens.
const TokenKind = "YARN_AM_RM_TOKEN"

// keyID names the single master key.
const keyID = 1

// Tokens issues and verifies AMRMTokens: an attempt id signed with the
// RM's master key (HMAC-SHA1, as Hadoop's SecretManager). A token is good
// while its attempt is its application's current, unfinished attempt, so
// nothing per token is stored.
type Tokens struct {
	key []byte
	mgr interface {
		LiveAttempt(records.AttemptID) (*records.Application, *records.Attempt, error)
	}
}

// NewTokens returns the AMRMToken secret manager.
// It asks mgr whether the attempt a token names is still live.
func NewTokens(mgr interface {
	LiveAttempt(records.AttemptID) (*records.Application, *records.Attempt, error)
}, key []byte) *Tokens {
	return &Tokens{key: key, mgr: mgr}
}

func (t *Tokens) password(identifier []byte) []byte {
	m := hmac.New(sha1.New, t.key)
	m.Write(identifier)
	return m.Sum(nil)
}

// Issue returns the AMRMToken of an attempt. Its service is left empty:
// clients set it to the scheduler address they use.
func (t *Tokens) Issue(id records.AttemptID) (*commonpb.TokenProto, error) {
	identifier, err := proto.Marshal(&yarnpb.AMRMTokenIdentifierProto{AppAttemptId: wire.AttemptID(id), KeyId: proto.Int32(keyID)})
	if err != nil {
		return nil, err
	}
	return &commonpb.TokenProto{Identifier: identifier, Password: t.password(identifier), Kind: proto.String(TokenKind), Service: proto.String("")}, nil
}

// attemptOf decodes an AMRMToken identifier.
func attemptOf(identifier []byte) (records.AttemptID, int32, error) {
	id := &yarnpb.AMRMTokenIdentifierProto{}
	if err := proto.Unmarshal(identifier, id); err != nil || id.GetAppAttemptId() == nil {
		return records.AttemptID{}, 0, ipc.Errorf(ipc.ClassInvalidToken, "malformed AMRMToken identifier")
	}
	return wire.AttemptIDOf(id.GetAppAttemptId()), id.GetKeyId(), nil
}

// RetrievePassword implements ipc.TokenAuthenticator: the token's user is
// its attempt, as Hadoop's AMRMTokenIdentifier names it.
func (t *Tokens) RetrievePassword(identifier []byte) ([]byte, string, error) {
	attempt, key, err := attemptOf(identifier)
	if err != nil {
		return nil, "", err
	}
	if key != keyID {
		return nil, "", ipc.Errorf(ipc.ClassInvalidToken, "Invalid AMRMToken from %s", attempt)
	}
	if _, _, err := t.mgr.LiveAttempt(attempt); err != nil {
		return nil, "", ipc.Errorf(ipc.ClassInvalidToken, "%s not found in AMRMTokenSecretManager.", attempt)
	}
	return t.password(identifier), attempt.String(), nil
}
