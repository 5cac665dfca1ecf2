package kube

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// backend answers each line with its name and the line.
func backend(t *testing.T, name string) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					io.WriteString(c, name+":"+sc.Text()+"\n")
				}
			}()
		}
	}()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

func slice(name string, port int32, ready ...bool) *discoveryv1.EndpointSlice {
	portName := "client"
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "weft-system", Labels: map[string]string{discoveryv1.LabelServiceName: "weft-rm"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port}},
	}
	for _, r := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &r}})
	}
	return s
}

func roundTrip(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestServiceProxyFollowsReadyEndpoints(t *testing.T) {
	ctx := context.Background()
	a, b := backend(t, "a"), backend(t, "b")
	client := fake.NewClientset(slice("weft-rm-1", a, true))
	c := &Cluster{Client: client}
	p, err := c.ProxyService("weft-system", "weft-rm", "client")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	if got, err := roundTrip(t, p.Addr()); err != nil || got != "a:hello\n" {
		t.Fatalf("through the proxy: %q, %v; want a's answer", got, err)
	}

	// The endpoint becomes not ready (its pod gone): a new connection is
	// refused service, as kube-proxy rejects one with no endpoint.
	slices := client.DiscoveryV1().EndpointSlices("weft-system")
	if _, err := slices.Update(ctx, slice("weft-rm-1", a, false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(t, p.Addr()); err == nil {
		t.Fatalf("no ready endpoint, yet an answer: %q", got)
	}

	// Another pod's endpoint is ready: new connections go there.
	if _, err := slices.Create(ctx, slice("weft-rm-2", b, true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(t, p.Addr()); err != nil || got != "b:hello\n" {
		t.Fatalf("after the switch: %q, %v; want b's answer", got, err)
	}
}
