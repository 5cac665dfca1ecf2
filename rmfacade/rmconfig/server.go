package rmconfig

import (
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/server"
	"github.com/weft-sh/weft/scheduler"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/kubeclient"
)

// Server returns what the server is built from: its Config, and its HA
// when HA.ID is set. c must be valid (Validate); the kubeconfig is read
// here.
func (c *Configuration) Server(logger *slog.Logger) (server.Config, *server.HA, error) {
	cfg := server.Config{
		ClientAddr: c.Addresses.Client, SchedulerAddr: c.Addresses.Scheduler, WebAddr: c.Addresses.Webapp,
		DataDir: c.State.DataDir, StateNamespace: c.State.Namespace, NMKeySecret: c.State.NMKeySecret, NMKeyFile: c.State.NMKeyFile,
		Queues:             c.Queues,
		NodeCooldown:       c.Nodes.Cooldown.Duration,
		CapacityStaleAfter: c.Nodes.CapacityStaleAfter.Duration,
		NodeExpiry:         c.Nodes.Expiry.Duration,
		LocalNode:          c.Nodes.LocalNode,
		BindParallelism:    c.Scheduling.BindParallelism,
		AMExpiry:           c.Applications.AMExpiry.Duration,
		Profiling:          c.Profiling,
		Logger:             logger,
	}
	maxCompleted := c.Applications.MaxCompleted
	cfg.RM.MaxCompletedApplications = &maxCompleted
	cfg.RM.MaximumAllocation = records.Resource{MemoryMB: c.Applications.MaximumAllocationMB, VCores: c.Applications.MaximumAllocationVCores}
	cfg.Allocator.PreemptionGrace = c.Scheduling.PreemptionGrace.Duration
	cfg.Allocator.Scheduler.PercentageOfNodesToScore = c.Scheduling.PercentageOfNodesToScore
	if c.Scheduling.PercentageOfNodesToScore == 0 {
		cfg.Allocator.Scheduler.PercentageOfNodesToScore = scheduler.AdaptivePercentage
	}

	k := c.Kubernetes
	p, err := translator.ProfileByName(k.Profile)
	if err != nil {
		return server.Config{}, nil, err
	}
	p.MilliCPUPerVCore, p.StrictCPU = k.MilliCPUPerVCore, k.StrictCPU
	cfg.Launcher.Profile = p
	cfg.Launcher.Runtime = k.ContainerRuntime
	cfg.Launcher.ClusterID, cfg.Launcher.Namespace, cfg.Launcher.SchedulerName = c.ClusterID, k.Namespace, k.SchedulerName
	cfg.Launcher.NMPort, cfg.Launcher.NMHTTPPort = c.Nodes.NMPort, c.Nodes.NMHTTPPort
	cfg.Launcher.ContainerAllocationExpiry = c.Applications.ContainerAllocationExpiry.Duration
	switch k.Kubeconfig {
	case "":
	case "in-cluster":
		cfg.Kubernetes, err = rest.InClusterConfig()
	default:
		cfg.Kubernetes, err = clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	}
	if err != nil {
		return server.Config{}, nil, fmt.Errorf("kubernetes: %w", err)
	}
	if cfg.Kubernetes != nil {
		cfg.Kubernetes.QPS, cfg.Kubernetes.Burst = k.QPS, k.Burst
		kubeclient.Uncompressed(cfg.Kubernetes) // as kube-scheduler's (controller-runtime's lists too)
	}
	if c.HA.ID == "" {
		return cfg, nil, nil
	}
	return cfg, &server.HA{ID: c.HA.ID, LeaseDuration: c.HA.LeaseDuration.Duration, RenewDeadline: c.HA.RenewDeadline.Duration,
		RetryPeriod: c.HA.RetryPeriod.Duration, Pod: c.HA.Pod}, nil
}
