// Package sasl implements the SASL mechanism Hadoop uses for token
// authentication, DIGEST-MD5 (RFC 2831), with the "auth" quality of
// protection (hadoop.rpc.protection=authentication).
package sasl

//lint:file-ignore ST1005 the messages are Java DigestMD5Server's, word for word: clients see them.

import (
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Mechanism is the SASL mechanism name.
const Mechanism = "DIGEST-MD5"

// maxMessageSize bounds what a peer may send in one step; real messages are
// a few hundred bytes.
const maxMessageSize = 4096

// ErrMismatchedResponse is returned when the client's digest does not match
// the password: a wrong or forged token.
var ErrMismatchedResponse = errors.New("DIGEST-MD5: digest response format violation. Mismatched response.")

// PasswordLookup returns the password for a SASL username. For Hadoop
// tokens the username is the base64 token identifier and the password the
// base64 token password.
type PasswordLookup func(username string) (password []byte, err error)

// Server is the server side of one DIGEST-MD5 exchange.
type Server struct {
	realm     string
	digestURI string
	nonce     string
	lookup    PasswordLookup

	challenged bool
	complete   bool
	username   string
}

// NewServer returns a server for protocol/serverID (Hadoop uses protocol ""
// and server id "default", so the digest-uri is "/default").
func NewServer(protocol, serverID string, lookup PasswordLookup) (*Server, error) {
	nonce, err := randomToken()
	if err != nil {
		return nil, err
	}
	return &Server{realm: serverID, digestURI: protocol + "/" + serverID, nonce: nonce, lookup: lookup}, nil
}

// Challenge returns the server's first message (RFC 2831 §2.1.1).
func (s *Server) Challenge() []byte {
	s.challenged = true
	return []byte(fmt.Sprintf(`realm="%s",nonce="%s",qop="auth",charset=utf-8,algorithm=md5-sess`, s.realm, s.nonce))
}

// Respond verifies the client's digest-response (§2.1.2) and returns the
// response-auth the server must send back (§2.1.3).
func (s *Server) Respond(msg []byte) ([]byte, error) {
	if !s.challenged || s.complete {
		return nil, errors.New("DIGEST-MD5: response out of sequence")
	}
	if len(msg) > maxMessageSize {
		return nil, errors.New("DIGEST-MD5: response too long")
	}
	d, err := parseDirectives(string(msg))
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"username", "nonce", "cnonce", "nc", "digest-uri", "response"} {
		if d[k] == "" {
			return nil, fmt.Errorf("DIGEST-MD5: digest response format violation. Missing %s.", k)
		}
	}
	if d["nonce"] != s.nonce {
		return nil, errors.New("DIGEST-MD5: digest response format violation. Mismatched nonce.")
	}
	if q := d["qop"]; q != "" && q != "auth" {
		return nil, fmt.Errorf("DIGEST-MD5: qop %q not offered; only authentication is supported", q)
	}
	if d["nc"] != "00000001" {
		return nil, errors.New("DIGEST-MD5: digest response format violation. Nonce count does not match.")
	}
	if r, ok := d["realm"]; ok && r != s.realm {
		return nil, errors.New("DIGEST-MD5: digest response format violation. Mismatched realm.")
	}
	if d["digest-uri"] != s.digestURI {
		return nil, errors.New("DIGEST-MD5: digest response format violation. Mismatched URI.")
	}
	password, err := s.lookup(d["username"])
	if err != nil {
		return nil, err
	}
	p := digestParams{username: d["username"], realm: s.realm, password: password, nonce: s.nonce,
		cnonce: d["cnonce"], nc: d["nc"], authzid: d["authzid"], digestURI: s.digestURI}
	want := p.response("AUTHENTICATE")
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(d["response"]))) != 1 {
		return nil, ErrMismatchedResponse
	}
	s.complete = true
	s.username = d["username"]
	return []byte("rspauth=" + p.response("")), nil
}

// Complete reports whether the exchange succeeded.
func (s *Server) Complete() bool { return s.complete }

// Username is the authenticated SASL username once Complete.
func (s *Server) Username() string { return s.username }

// Client is the client side of one DIGEST-MD5 exchange.
type Client struct {
	username, protocol, serverID string
	password                     []byte
	expectRspAuth                string
}

// NewClient returns a client for the given credentials.
func NewClient(username string, password []byte, protocol, serverID string) *Client {
	return &Client{username: username, password: password, protocol: protocol, serverID: serverID}
}

// Respond answers the server's challenge.
func (c *Client) Respond(challenge []byte) ([]byte, error) {
	d, err := parseDirectives(string(challenge))
	if err != nil {
		return nil, err
	}
	if d["nonce"] == "" {
		return nil, errors.New("DIGEST-MD5: challenge without nonce")
	}
	cnonce, err := randomToken()
	if err != nil {
		return nil, err
	}
	realm := d["realm"]
	p := digestParams{username: c.username, realm: realm, password: c.password, nonce: d["nonce"],
		cnonce: cnonce, nc: "00000001", digestURI: c.protocol + "/" + c.serverID}
	c.expectRspAuth = "rspauth=" + p.response("")
	return []byte(fmt.Sprintf(`charset=utf-8,username="%s",realm="%s",nonce="%s",nc=%s,cnonce="%s",digest-uri="%s",maxbuf=65536,response=%s,qop=auth`,
		quote(c.username), quote(realm), quote(p.nonce), p.nc, p.cnonce, quote(p.digestURI), p.response("AUTHENTICATE"))), nil
}

// Verify checks the server's response-auth, proving it knew the password.
func (c *Client) Verify(rspauth []byte) error {
	if c.expectRspAuth == "" || subtle.ConstantTimeCompare([]byte(c.expectRspAuth), rspauth) != 1 {
		return errors.New("DIGEST-MD5: server's rspauth does not match")
	}
	return nil
}

type digestParams struct {
	username, realm                       string
	password                              []byte
	nonce, cnonce, nc, authzid, digestURI string
}

// response computes request-digest (method "AUTHENTICATE") or the server's
// response-auth (method "") per RFC 2831 §2.1.2.1 with qop=auth.
func (p digestParams) response(method string) string {
	inner := md5.Sum([]byte(p.username + ":" + p.realm + ":" + string(p.password)))
	a1 := append(inner[:], []byte(":"+p.nonce+":"+p.cnonce)...)
	if p.authzid != "" {
		a1 = append(a1, []byte(":"+p.authzid)...)
	}
	ha1 := md5.Sum(a1)
	ha2 := md5.Sum([]byte(method + ":" + p.digestURI))
	kd := hex.EncodeToString(ha1[:]) + ":" + p.nonce + ":" + p.nc + ":" + p.cnonce + ":auth:" + hex.EncodeToString(ha2[:])
	sum := md5.Sum([]byte(kd))
	return hex.EncodeToString(sum[:])
}

// parseDirectives parses a comma-separated list of key=value pairs whose
// values may be quoted strings with backslash escapes.
func parseDirectives(s string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	for i < len(s) {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ',') {
			i++
		}
		if i == len(s) {
			break
		}
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 {
			return nil, fmt.Errorf("DIGEST-MD5: malformed directive at %q", s[i:])
		}
		key := strings.ToLower(strings.TrimSpace(s[i : i+eq]))
		i += eq + 1
		var val strings.Builder
		if i < len(s) && s[i] == '"' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					val.WriteByte(s[i])
					i++
					continue
				}
				if c == '"' {
					closed = true
					break
				}
				val.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("DIGEST-MD5: unterminated quoted value for %s", key)
			}
		} else {
			end := strings.IndexByte(s[i:], ',')
			if end < 0 {
				end = len(s) - i
			}
			val.WriteString(strings.TrimSpace(s[i : i+end]))
			i += end
		}
		if _, dup := out[key]; dup && key != "realm" && key != "qop" {
			return nil, fmt.Errorf("DIGEST-MD5: duplicate directive %s", key)
		}
		out[key] = val.String()
	}
	return out, nil
}

func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

func randomToken() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("DIGEST-MD5: nonce: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}
