// Package kubeclient builds the clientsets of built-in kinds that Weft's
// processes use — the RM's launcher, binder and state store, the node
// plugin, the benchmarks' own binders — with the encoding Kubernetes' own
// components use, and waits for their informers' first lists
// (WaitForSync). The RM and the node plugin both need it, so it belongs to
// neither of them.
package kubeclient

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"golang.org/x/net/http2"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Protobuf content types: what a clientset of built-in kinds sends, and
// what it accepts back (JSON as the fallback for a server, or a test
// double, that answers JSON).
const (
	ContentType        = runtime.ContentTypeProtobuf
	AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
)

// Protobuf returns a copy of cfg that speaks protobuf to the API server.
// kube-scheduler and kube-controller-manager do the same: component-base's
// ClientConnectionConfiguration.ContentType defaults to
// "application/vnd.kubernetes.protobuf", because encoding and decoding
// protobuf costs far less CPU than JSON for the lists and watches of
// thousands of nodes and pods, bindings and pod creates. Only for
// clientsets of built-in kinds: the API server serves custom resources in
// JSON alone, so cfg itself — shared with controller-runtime and dynamic
// clients of Weft's CRDs — is left as it is. controller-runtime needs no
// copy: with cfg.ContentType empty it already picks protobuf per kind for
// the kinds client-go's scheme knows (apiutil.RESTClientForGVK), and
// setting it on cfg would send its Queue requests in protobuf too.
//
// The copy also gets a transport of its own that dials only when it must
// (multiplexed), when cfg allows one, and asks for responses uncompressed
// (Uncompressed).
func Protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = ContentType
	c.AcceptContentTypes = AcceptContentTypes
	Uncompressed(c)
	if err := multiplexed(c); err != nil {
		return rest.CopyConfig(cfg) // cfg's TLS unreadable: its own transport will say so
	}
	return c
}

// Uncompressed makes cfg's clients ask the API server for responses as
// they are, not gzipped. Go's HTTP transports ask for gzip by default, and
// the API server compresses every response over 128 KiB — each list of
// nodes and pods. On the networks between control-plane components that
// costs CPU on both ends and lengthens the list rather than shortening it,
// which is why kube-scheduler and kube-controller-manager turn it off
// (kubernetes/kubernetes#80919, rest.Config.DisableCompression). On
// test/bench/binding's API server a list of 1,000 nodes costs it ~60 ms
// of CPU gzipped, ~25 ms not (2.2 MB either way on loopback); gzipped, the
// lists weft-rm makes when it starts, before its first binding, cost a
// third of a second of the API server's CPU a round.
func Uncompressed(cfg *rest.Config) { cfg.DisableCompression = true }

// multiplexed gives c a transport that speaks HTTP/2 alone and opens a
// connection to the API server only when the ones it holds carry as many
// requests as the server allows on one (SETTINGS_MAX_CONCURRENT_STREAMS),
// one dial at a time. client-go's own transport is net/http's, which
// negotiates HTTP/2 per connection: while more requests are in flight than
// its open connections take, each waiting request dials a connection of
// its own, and those HTTP/2 does not need are closed once negotiated. A
// scheduler starting 256 bindings at once opened about 200 TLS
// connections in a second that way, each a handshake for it and for the
// API server (test/bench/binding: its first bind a second after its
// first cycle; the handshakes 6–12% of weft-rm's CPU while binding).
//
// Left as it is: a config with a transport of its own, a proxy (a
// transport of HTTP/2 alone does not speak CONNECT), or plain HTTP.
// The credentials client-go wraps around a transport (tokens, a token
// file re-read, impersonation) still wrap this one; client certificates
// are read once, as tls.Config holds them.
func multiplexed(c *rest.Config) error {
	if c.Transport != nil || c.Proxy != nil {
		return nil
	}
	u, err := url.Parse(c.Host)
	if err != nil || u.Scheme != "https" {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	tlsConf, err := rest.TLSConfigFor(c)
	if err != nil || tlsConf == nil {
		return err
	}
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	c.Transport = &http2.Transport{
		TLSClientConfig:    tlsConf,
		DisableCompression: c.DisableCompression,
		DialTLSContext: func(ctx context.Context, network, addr string, cfg *tls.Config) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				conn.Close()
				return nil, err
			}
			return tc, nil
		},
		// client-go's health check of an HTTP/2 connection: a ping after
		// 30 s without a frame, the connection dropped 15 s after.
		ReadIdleTimeout: 30 * time.Second,
		PingTimeout:     15 * time.Second,
	}
	// The transport holds the TLS settings: client-go refuses both.
	c.TLSClientConfig = rest.TLSClientConfig{}
	return nil
}

// New is a clientset of built-in kinds on a protobuf copy of cfg.
func New(cfg *rest.Config) (*kubernetes.Clientset, error) {
	client, err := kubernetes.NewForConfig(Protobuf(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}
