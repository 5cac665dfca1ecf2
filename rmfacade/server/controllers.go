package server

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/translator"
)

// newControllerManager returns the controller-runtime manager the RM's
// controllers run under: its cache watches the pods of this RM's
// containers in the jobs namespace — ended ones included, whose exit
// codes fail attempts and complete containers — and the Queue objects.
// It runs no leader election of its own: a Server serves only while its
// replica leads (RunHA), and its controllers stop with Serve's context,
// when the Lease is lost or the store fenced.
func (s *Server) newControllerManager() (manager.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	selector, err := labels.Parse(translator.Selector(s.cfg.Launcher.ClusterID))
	if err != nil {
		return nil, fmt.Errorf("pod selector: %w", err)
	}
	pods := cache.ByObject{Label: selector}
	if ns := s.cfg.Launcher.Namespace; ns != "" {
		pods.Namespaces = map[string]cache.Config{ns: {}}
	}
	mgr, err := manager.New(s.cfg.Kubernetes, manager.Options{
		Scheme: scheme, Logger: logr.FromSlogHandler(s.cfg.Logger.Handler()),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: pods}},
		// The RM serves its own metrics on the web port.
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// A process may hold several Servers over its life (tests do).
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
		GracefulShutdownTimeout: ptr.To(5 * time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	return mgr, nil
}
