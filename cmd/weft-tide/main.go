// Command weft-tide runs the tidal controller: it lends the nodes of each
// TidePool whole to batch work in the online services' trough and takes
// them back, after notice, at their peak. Several replicas may run: one
// leads (a coordination Lease), the others wait.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/weft-sh/weft/scheduler/tide"
	"github.com/weft-sh/weft/translator/kubeclient"
)

func main() {
	var kubeconfig, leaseNamespace, metricsAddr, schedulerName string
	var leaderElect bool
	flag.StringVar(&kubeconfig, "kubeconfig", "in-cluster", "kubeconfig; \"in-cluster\" for the pod's service account")
	flag.BoolVar(&leaderElect, "leader-elect", true, "run only while holding the weft-tide Lease, so that replicas never move nodes at once")
	flag.StringVar(&leaseNamespace, "leader-election-namespace", "weft-system", "namespace of the weft-tide Lease")
	flag.StringVar(&metricsAddr, "metrics-address", "0", "address of the controller's Prometheus metrics (0: off)")
	flag.StringVar(&schedulerName, "batch-scheduler-name", "weft-scheduler", "the scheduler whose pods are batch work (Weft's)")
	busy := flag.Duration("busy-interval", 2*time.Second, "how soon a pool with a move under way is looked at again")
	parallelism := flag.Int("parallelism", 16, "nodes (and pods) written to at once")
	qps := flag.Float64("kube-api-qps", 50, "API requests per second (a hundred nodes moved is some four hundred requests)")
	burst := flag.Int("kube-api-burst", 100, "API request burst")
	var level slog.Level
	flag.TextVar(&level, "log-level", slog.LevelInfo, "DEBUG, INFO, WARN or ERROR")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctrllog.SetLogger(logr.FromSlogHandler(logger.Handler()))

	var cfg *rest.Config
	var err error
	if kubeconfig == "in-cluster" {
		cfg, err = rest.InClusterConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	if err != nil {
		fail(2, "kubernetes: %v", err)
	}
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	kubeclient.Uncompressed(cfg) // as kube-controller-manager's: it lists every node
	scheme, err := tide.NewScheme()
	if err != nil {
		fail(1, "%v", err)
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: metricsAddr}, HealthProbeBindAddress: "0",
		LeaderElection: leaderElect, LeaderElectionID: "weft-tide", LeaderElectionNamespace: leaseNamespace,
		// A deposed leader stops at once rather than finishing its work.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		fail(1, "manager: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := tide.NewReconciler(mgr.GetClient(), mgr.GetEventRecorderFor("weft-tide"), tide.Options{
		BatchSchedulerName: schedulerName, Logger: logger, Busy: *busy, Parallelism: *parallelism, APIReader: mgr.GetAPIReader()})
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		fail(1, "%v", err)
	}
	logger.Info("tidal controller starting", "leaderElect", leaderElect)
	if err := mgr.Start(ctx); err != nil {
		fail(1, "%v", err)
	}
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "weft-tide: "+format+"\n", args...)
	os.Exit(code)
}
