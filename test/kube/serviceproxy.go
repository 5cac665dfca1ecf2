package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceProxy stands in for kube-proxy, which the local cluster does not
// run: it listens on a free port of 127.0.0.1 and sends each connection to
// a ready endpoint of one port of a Service, as the Service's
// EndpointSlices hold them when the connection arrives — what kube-proxy's
// rules do for a ClusterIP. With no ready endpoint a connection is closed
// at once, as kube-proxy rejects one. Everything else (the Service's
// selector, the EndpointSlice controller, readiness) is the cluster's own.
type ServiceProxy struct {
	c                  *Cluster
	namespace, service string
	port               string
	ln                 net.Listener
	wg                 sync.WaitGroup
	mu                 sync.Mutex
	conns              map[net.Conn]bool
}

// ProxyService starts a ServiceProxy for the port named port of the
// Service namespace/service.
func (c *Cluster) ProxyService(namespace, service, port string) (*ServiceProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ServiceProxy{c: c, namespace: namespace, service: service, port: port, ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address clients use in place of the Service's.
func (p *ServiceProxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening and ends the connections in flight.
func (p *ServiceProxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Endpoint is the address a new connection goes to now: the first ready
// endpoint of the Service's port.
func (p *ServiceProxy) Endpoint(ctx context.Context) (string, error) {
	slices, err := p.c.Client.DiscoveryV1().EndpointSlices(p.namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + p.service})
	if err != nil {
		return "", err
	}
	for _, sl := range slices.Items {
		port := int32(0)
		for _, sp := range sl.Ports {
			if sp.Name != nil && *sp.Name == p.port && sp.Port != nil {
				port = *sp.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready && len(ep.Addresses) > 0 {
				return net.JoinHostPort(local(ep.Addresses[0]), strconv.Itoa(int(port))), nil
			}
		}
	}
	return "", fmt.Errorf("service %s/%s has no ready endpoint for port %q", p.namespace, p.service, p.port)
}

// local is where to dial an endpoint address: 127.0.0.1 for one of this
// machine's own addresses — a pod on the node's network (deploy/local.yaml
// puts them there), whose servers listen on loopback only, as every server of
// this machine does — else the address itself.
func local(addr string) string {
	ip := net.ParseIP(addr)
	ifaddrs, err := net.InterfaceAddrs()
	if ip == nil || err != nil {
		return addr
	}
	for _, a := range ifaddrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return "127.0.0.1"
		}
	}
	return addr
}

func (p *ServiceProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		} else if err != nil {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(in)
		}()
	}
}

func (p *ServiceProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
}

func (p *ServiceProxy) forward(in net.Conn) {
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	addr, err := p.Endpoint(ctx)
	cancel()
	if err != nil {
		return
	}
	out, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return
	}
	defer out.Close()
	p.track(in, true)
	p.track(out, true)
	defer p.track(in, false)
	defer p.track(out, false)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		// Half-close so that the other direction drains, as TCP through
		// kube-proxy's NAT would.
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	<-done
}
