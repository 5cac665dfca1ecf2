package colocation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// NewManager returns a controller-runtime manager for one node's agent.
// Its cache watches only what the agent reads — its own Node, the pods
// bound to it and the configuration ConfigMap — so a node's agent costs
// the API server one node's worth of watches, whatever the cluster's
// size. Its own metrics and health servers are off: the node plugin
// serves the agent's metrics. (The package controller-runtime itself is
// not imported anywhere in Weft: it registers a --kubeconfig flag on the
// process's flags, which Weft's commands define themselves.)
func NewManager(cfg *rest.Config, o Options) (manager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	byObject := map[client.Object]cache.ByObject{
		&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", o.NodeName)},
		&corev1.Pod{}:  {Field: fields.OneTermEqualSelector("spec.nodeName", o.NodeName)},
	}
	if o.ConfigName != "" {
		byObject[&corev1.ConfigMap{}] = cache.ByObject{
			Namespaces: map[string]cache.Config{o.ConfigNamespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", o.ConfigName),
		}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{ByObject: byObject},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return nil, fmt.Errorf("colocation: manager: %w", err)
	}
	return mgr, nil
}
