package clientrm

import (
	"crypto/hmac"
	"crypto/sha1"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	yarnpb "github.com/weft-sh/weft/protos/hadoop/yarn"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// DelegationTokenKind is the kind of RM delegation tokens.
const DelegationTokenKind = "RM_DELEGATION_TOKEN"

// TokenOptions configures delegation tokens; zero values take YARN's
// defaults.
type TokenOptions struct {
	// RenewInterval is yarn.resourcemanager.delegation.token.renew-interval (24h).
	RenewInterval time.Duration
	// MaxLifetime is yarn.resourcemanager.delegation.token.max-lifetime (7d).
	MaxLifetime time.Duration
	Now         func() time.Time
}

// DelegationTokens issues and verifies RM delegation tokens: the secret
// manager of the client port's TOKEN authentication. Passwords are
// HMAC-SHA1 of the identifier under a master key, as Hadoop's
// SecretManager computes them; issued tokens live in the state store.
type DelegationTokens struct {
	store *state.Store
	key   []byte
	keyID int32
	opts  TokenOptions

	mu  sync.Mutex
	seq int32
}

// masterKeyID names the single master key; key rolling is not needed
// while the key lives on the RM's own disk.
const masterKeyID = 1

// NewDelegationTokens returns a token manager with the given master key.
func NewDelegationTokens(store *state.Store, key []byte, opts TokenOptions) *DelegationTokens {
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = 24 * time.Hour
	}
	if opts.MaxLifetime <= 0 {
		opts.MaxLifetime = 7 * 24 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &DelegationTokens{store: store, key: key, keyID: masterKeyID, opts: opts}
	for _, t := range store.Snapshot().Tokens() {
		d.seq = max(d.seq, t.Sequence)
	}
	return d
}

func (d *DelegationTokens) password(identifier []byte) []byte {
	m := hmac.New(sha1.New, d.key)
	m.Write(identifier)
	return m.Sum(nil)
}

// Issue creates a token for owner, renewable by renewer.
func (d *DelegationTokens) Issue(owner, renewer, realUser string) (identifier, password []byte, err error) {
	now := d.opts.Now().UnixMilli()
	d.mu.Lock()
	d.seq++
	seq := d.seq
	d.mu.Unlock()
	rec := &records.DelegationToken{Sequence: seq, Owner: owner, Renewer: renewer, RealUser: realUser, IssueDate: now,
		MaxDate: now + d.opts.MaxLifetime.Milliseconds(), RenewDate: now + d.opts.RenewInterval.Milliseconds()}
	if err := d.store.Update(func(w *state.WriteTxn) error { return w.PutToken(rec) }); err != nil {
		return nil, nil, err
	}
	identifier, err = proto.Marshal(&yarnpb.YARNDelegationTokenIdentifierProto{
		Owner: proto.String(owner), Renewer: proto.String(renewer), RealUser: proto.String(realUser),
		IssueDate: proto.Int64(rec.IssueDate), MaxDate: proto.Int64(rec.MaxDate),
		SequenceNumber: proto.Int32(seq), MasterKeyId: proto.Int32(d.keyID),
	})
	if err != nil {
		return nil, nil, err
	}
	return identifier, d.password(identifier), nil
}

// decode parses an identifier and finds its stored token.
func (d *DelegationTokens) decode(identifier []byte) (*yarnpb.YARNDelegationTokenIdentifierProto, *records.DelegationToken, error) {
	id := &yarnpb.YARNDelegationTokenIdentifierProto{}
	if err := proto.Unmarshal(identifier, id); err != nil {
		return nil, nil, ipc.Errorf(ipc.ClassInvalidToken, "malformed RM delegation token identifier: %v", err)
	}
	rec := d.store.Snapshot().Token(id.GetSequenceNumber())
	if id.GetMasterKeyId() != d.keyID || rec == nil || rec.Owner != id.GetOwner() {
		return nil, nil, ipc.Errorf(ipc.ClassInvalidToken, "token (%s) can't be found in cache", describe(id))
	}
	return id, rec, nil
}

func describe(id *yarnpb.YARNDelegationTokenIdentifierProto) string {
	return fmt.Sprintf("RM_DELEGATION_TOKEN owner=%s, renewer=%s, realUser=%s, issueDate=%d, maxDate=%d, sequenceNumber=%d, masterKeyId=%d",
		id.GetOwner(), id.GetRenewer(), id.GetRealUser(), id.GetIssueDate(), id.GetMaxDate(), id.GetSequenceNumber(), id.GetMasterKeyId())
}

// RetrievePassword implements ipc.TokenAuthenticator.
func (d *DelegationTokens) RetrievePassword(identifier []byte) ([]byte, string, error) {
	id, rec, err := d.decode(identifier)
	if err != nil {
		return nil, "", err
	}
	if now := d.opts.Now().UnixMilli(); rec.RenewDate < now {
		return nil, "", ipc.Errorf(ipc.ClassInvalidToken, "token (%s) is expired, current time: %d expected renewal time: %d",
			describe(id), now, rec.RenewDate)
	}
	return d.password(identifier), id.GetOwner(), nil
}

// verify checks that identifier/password form a token this RM issued.
func (d *DelegationTokens) verify(identifier, password []byte) (*yarnpb.YARNDelegationTokenIdentifierProto, *records.DelegationToken, error) {
	id, rec, err := d.decode(identifier)
	if err != nil {
		return nil, nil, err
	}
	if !hmac.Equal(password, d.password(identifier)) {
		return nil, nil, ipc.Errorf(ipc.ClassInvalidToken, "password doesn't match for token (%s)", describe(id))
	}
	return id, rec, nil
}

// Renew extends a token's life by the renew interval, up to its max date,
// and returns the new expiry. Only its renewer may renew it.
func (d *DelegationTokens) Renew(identifier, password []byte, user string) (int64, error) {
	id, rec, err := d.verify(identifier, password)
	if err != nil {
		return 0, err
	}
	if id.GetRenewer() == "" || id.GetRenewer() != user {
		return 0, ipc.Errorf(ipc.ClassAccessControlException, "%s tries to renew a token (%s) with non-matching renewer %s", user, describe(id), id.GetRenewer())
	}
	now := d.opts.Now().UnixMilli()
	if rec.MaxDate < now {
		return 0, ipc.Errorf(ipc.ClassInvalidToken, "%s tried to renew an expired token (%s) max expiration date: %d currentTime: %d", user, describe(id), rec.MaxDate, now)
	}
	n := *rec
	n.RenewDate = min(now+d.opts.RenewInterval.Milliseconds(), rec.MaxDate)
	if err := d.store.Update(func(w *state.WriteTxn) error { return w.PutToken(&n) }); err != nil {
		return 0, err
	}
	return n.RenewDate, nil
}

// Cancel revokes a token. Its owner or renewer may cancel it.
func (d *DelegationTokens) Cancel(identifier []byte, user string) error {
	id, _, err := d.decode(identifier)
	if err != nil {
		return err
	}
	if user != id.GetOwner() && user != id.GetRenewer() {
		return ipc.Errorf(ipc.ClassAccessControlException, "%s is not authorized to cancel the token %d", user, id.GetSequenceNumber())
	}
	return d.store.Update(func(w *state.WriteTxn) error { return w.DeleteToken(id.GetSequenceNumber()) })
}
