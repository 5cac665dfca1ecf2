// Package kubeclient builds the clientsets of built-in kinds that Weft's
// processes use — the RM's launcher, binder and state store, the node
// plugin, the benchmarks' own binders — with the encoding Kubernetes' own
// components use. The RM and the node plugin both need it, so it belongs
// to neither of them.
package kubeclient

import (
	"fmt"

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
func Protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = ContentType
	c.AcceptContentTypes = AcceptContentTypes
	return c
}

// New is a clientset of built-in kinds on a protobuf copy of cfg.
func New(cfg *rest.Config) (*kubernetes.Clientset, error) {
	client, err := kubernetes.NewForConfig(Protobuf(cfg))
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return client, nil
}
