package sasl

import (
	"errors"
	"strings"
	"testing"
)

// The worked example of RFC 2831 §4.
func TestRFC2831Vector(t *testing.T) {
	p := digestParams{username: "chris", realm: "elwood.innosoft.com", password: []byte("secret"),
		nonce: "OA6MG9tEQGm2hh", cnonce: "OA6MHXh6VqTrRk", nc: "00000001", digestURI: "imap/elwood.innosoft.com"}
	if got, want := p.response("AUTHENTICATE"), "d388dad90d4bbd760a152321f2143af7"; got != want {
		t.Errorf("response = %s, want %s", got, want)
	}
	if got, want := p.response(""), "ea40f60335c427b5527b84dbabcdfffd"; got != want {
		t.Errorf("rspauth = %s, want %s", got, want)
	}
}

func TestExchange(t *testing.T) {
	passwords := map[string]string{"dG9rZW4=": "c2VjcmV0"}
	lookup := func(u string) ([]byte, error) {
		if p, ok := passwords[u]; ok {
			return []byte(p), nil
		}
		return nil, errors.New("unknown token")
	}
	tests := []struct {
		name, user, password string
		tamper               func(string) string
		wantErr              string
	}{
		{name: "ok", user: "dG9rZW4=", password: "c2VjcmV0"},
		{name: "wrong password", user: "dG9rZW4=", password: "d3Jvbmc=", wantErr: "Mismatched response"},
		{name: "unknown user", user: "bm9ib2R5", password: "x", wantErr: "unknown token"},
		{name: "replayed nonce count", user: "dG9rZW4=", password: "c2VjcmV0", tamper: func(s string) string { return strings.Replace(s, "nc=00000001", "nc=00000002", 1) }, wantErr: "Nonce count"},
		{name: "other uri", user: "dG9rZW4=", password: "c2VjcmV0", tamper: func(s string) string {
			return strings.Replace(s, `digest-uri="/default"`, `digest-uri="hdfs/default"`, 1)
		}, wantErr: "Mismatched URI"},
		{name: "integrity qop", user: "dG9rZW4=", password: "c2VjcmV0", tamper: func(s string) string { return strings.Replace(s, "qop=auth", "qop=auth-int", 1) }, wantErr: "qop"},
		{name: "unterminated", user: "dG9rZW4=", password: "c2VjcmV0", tamper: func(s string) string { return s + `,x="open` }, wantErr: "unterminated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := NewServer("", "default", lookup)
			if err != nil {
				t.Fatal(err)
			}
			cl := NewClient(tc.user, []byte(tc.password), "", "default")
			resp, err := cl.Respond(srv.Challenge())
			if err != nil {
				t.Fatal(err)
			}
			if tc.tamper != nil {
				resp = []byte(tc.tamper(string(resp)))
			}
			rspauth, err := srv.Respond(resp)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := cl.Verify(rspauth); err != nil {
				t.Fatal(err)
			}
			if !srv.Complete() || srv.Username() != tc.user {
				t.Fatalf("complete=%v user=%q", srv.Complete(), srv.Username())
			}
			if _, err := srv.Respond(resp); err == nil {
				t.Fatal("second response accepted")
			}
		})
	}
}

func FuzzParseDirectives(f *testing.F) {
	f.Add(`realm="default",nonce="abc",qop="auth",charset=utf-8,algorithm=md5-sess`)
	f.Add(`username="a\"b",nc=00000001,response=0123`)
	f.Add(`x="`)
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDirectives(s)
		if err == nil && d == nil {
			t.Fatal("nil map without error")
		}
	})
}

func FuzzServerRespond(f *testing.F) {
	f.Add([]byte(`charset=utf-8,username="dG9rZW4=",realm="default",nonce="n",nc=00000001,cnonce="c",digest-uri="/default",maxbuf=65536,response=00,qop=auth`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		srv, err := NewServer("", "default", func(string) ([]byte, error) { return []byte("pw"), nil })
		if err != nil {
			t.Fatal(err)
		}
		srv.Challenge()
		if _, err := srv.Respond(msg); err == nil {
			t.Fatal("a response without the server's nonce was accepted")
		}
	})
}
