// Command coredns is CoreDNS, built at the version pinned in go.mod with
// the plugins of the Corefile kind and kubeadm give a cluster (coredns.yaml)
// and no others: the kind-style cluster's DNS, as its kube-dns Service.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

// The plugins' order in a server block, as CoreDNS's plugin.cfg orders
// them: the order a query passes through them, whatever the Corefile's.
func init() {
	dnsserver.Directives = []string{"reload", "ready", "health", "prometheus", "errors", "log", "loadbalance", "cache",
		"hosts", "kubernetes", "loop", "forward"}
}

func main() { coremain.Run() }
