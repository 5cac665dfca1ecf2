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
	"strconv"
	"strings"
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
// (kubernetes/kubernetes#80919, rest.Config.DisableCompression). Measured
// against test/bench/binding's API server: a list of 1,000 nodes took it
// ~60 ms of CPU gzipped, ~25 ms not (2.2 MB either way on loopback); the
// lists weft-rm makes when it starts, before its first binding, were a
// third of a second of the API server's CPU a round.
func Uncompressed(cfg *rest.Config) { cfg.DisableCompression = true }

// multiplexed gives c a transport that speaks HTTP/2 alone (watches
// aside, see watchesApart) and opens a connection to the API server only
// when the ones it holds carry as many requests as the server allows on
// one (SETTINGS_MAX_CONCURRENT_STREAMS), one dial at a time. client-go's own transport is net/http's, which
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
	multiplexed := &http2.Transport{
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
	c.Transport = &watchesApart{multiplexed: multiplexed, watches: watchTransport(tlsConf, c.Dial, c.DisableCompression)}
	// The transport holds the TLS settings: client-go refuses both.
	c.TLSClientConfig = rest.TLSClientConfig{}
	return nil
}

// watchesApart sends watches over HTTP/1.1, a connection each, and every
// other request over the multiplexed HTTP/2 transport.
//
// A watch is one long response that the API server writes an event at a
// time. Over HTTP/2 each event is DATA frames that the transport's read
// loop takes off the connection and hands to the watch's reader through a
// pipe (a goroutine wakeup an event), and for every 4 KiB read the
// transport writes a WINDOW_UPDATE back (x/net/http2's inflowMinRefresh,
// not configurable) — a TLS write for weft-rm, and a frame the API
// server's own read loop must take and hand on; the API server's side of
// each event passes its HTTP/2 serve loop and frame writer. Over HTTP/1.1
// the watch's reader reads its connection itself and the API server
// writes each event straight to it. A binding round of test/bench/binding
// brings weft-rm's pod watch ~11,000 events (each pod's creation, its
// binding, its status); on the HTTP/2 path the transport's work was
// ~0.1–0.35 s of weft-rm's CPU a round. client-go's own transport sends
// watches over HTTP/1.1 too whenever it could not negotiate HTTP/2.
//
// Watches are few (one a kind) and long, so a connection each costs
// little; their connections return to watches' idle pool when a watch
// ends (the API server's timeout, every 5–10 minutes) and the next
// watch of the kind reuses one.
type watchesApart struct {
	multiplexed, watches http.RoundTripper
}

func (t *watchesApart) RoundTrip(r *http.Request) (*http.Response, error) {
	if isWatch(r) {
		return t.watches.RoundTrip(r)
	}
	return t.multiplexed.RoundTrip(r)
}

// isWatch tells a watch request (client-go's Watch sends watch=true, a
// streaming list too) from the rest.
func isWatch(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.Contains(r.URL.RawQuery, "watch=") {
		return false
	}
	w, err := strconv.ParseBool(r.URL.Query().Get("watch"))
	return err == nil && w
}

// watchTransport is the HTTP/1.1 transport of watches. Without HTTP/2's
// pings (the multiplexed transport's health check, a dead connection
// dropped ~45 s after its last frame), TCP keep-alive finds a dead API
// server: a watch with no events is idle, and after 30 s of it the kernel
// probes the peer every 5 s, dropping the connection when 3 go unanswered
// — the reflector then lists and watches anew.
func watchTransport(tlsConf *tls.Config, dial func(ctx context.Context, network, addr string) (net.Conn, error), uncompressed bool) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second,
			KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}}).DialContext
	}
	t := &http.Transport{
		DialContext:         dial,
		TLSClientConfig:     tlsConf.Clone(),
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  uncompressed,
		MaxIdleConnsPerHost: 25, // client-go's own (utilnet.SetTransportDefaults)
		IdleConnTimeout:     90 * time.Second,
		Protocols:           new(http.Protocols),
	}
	t.Protocols.SetHTTP1(true)
	return t
}

// New is a clientset of built-in kinds on a protobuf copy of cfg.
func New(cfg *rest.Config) (*kubernetes.Clientset, error) {
	client, err := kubernetes.NewForConfig(Protobuf(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}
