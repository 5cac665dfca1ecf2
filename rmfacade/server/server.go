// Package server wires the ResourceManager facade together: the state
// store, the application lifecycle, the IPC client protocol and the REST
// API, each on its own listener.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/dynamic"
	k8srest "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/quota/api/v1alpha1"
	"github.com/weft-sh/weft/rmfacade/allocator"
	"github.com/weft-sh/weft/rmfacade/amlauncher"
	"github.com/weft-sh/weft/rmfacade/amrm"
	"github.com/weft-sh/weft/rmfacade/clientrm"
	"github.com/weft-sh/weft/rmfacade/nodesync"
	"github.com/weft-sh/weft/rmfacade/podsync"
	"github.com/weft-sh/weft/rmfacade/queuesync"
	"github.com/weft-sh/weft/rmfacade/rest"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/state/kubestore"
	"github.com/weft-sh/weft/scheduler/podbinder"
	"github.com/weft-sh/weft/translator/kubeclient"
	"github.com/weft-sh/weft/translator/masterkey"
)

// Config configures the facade. Addresses default to YARN's ports on
// loopback.
type Config struct {
	// ClientAddr serves ApplicationClientProtocol (yarn.resourcemanager.address).
	ClientAddr string
	// SchedulerAddr serves ApplicationMasterProtocol
	// (yarn.resourcemanager.scheduler.address).
	SchedulerAddr string
	// WebAddr serves the REST API and UI (yarn.resourcemanager.webapp.address).
	WebAddr string
	// DataDir holds the embedded state store.
	DataDir string
	// Queues is the queue tree. When empty it comes from the cluster's
	// Queue objects (with Kubernetes), else quota.DefaultQueues.
	Queues []quota.QueueConfig
	// RM tunes the application lifecycle.
	RM rm.Options
	// Allocator tunes scheduling cycles (its Logger is Logger).
	Allocator allocator.Options
	// NodeCooldown keeps new containers off a node for this long after the
	// online load grew into Weft's capacity there (nodesync.Options.Cooldown).
	NodeCooldown time.Duration
	// CapacityStaleAfter is how old a node agent's heartbeat may be before
	// the capacity it published is read as none
	// (nodesync.Options.CapacityStaleAfter).
	CapacityStaleAfter time.Duration
	// NodeExpiry is how long a node may be not Ready before it is LOST and
	// its containers end (nodesync.Options.NodeExpiry,
	// yarn.nm.liveness-monitor.expiry-interval-ms).
	NodeExpiry time.Duration
	// BindParallelism is how many pod bindings are in flight at once
	// (default podbinder's).
	BindParallelism int
	// LocalNode registers this machine as the cluster's one node, for the
	// embedded default without Kubernetes.
	LocalNode bool
	// Kubernetes, when set, is the cluster AMs run on: the AM launcher
	// creates their pods there. Without it weft-rm admits applications
	// but launches nothing (the embedded default).
	Kubernetes *k8srest.Config
	// Launcher configures AM pods; its SchedulerAddr defaults to
	// SchedulerAddr.
	Launcher amlauncher.Options
	// NMKeySecret ("namespace/name"), with Kubernetes, holds the master key
	// of container tokens and NMTokens in a Secret the RM creates when
	// missing and node plugins read. It wins over NMKeyFile.
	NMKeySecret string
	// NMKeyFile holds the master key of container tokens and NMTokens,
	// shared with the node plugins (a mounted Secret on a cluster); created
	// when missing. Default: a key kept in DataDir.
	NMKeyFile string
	// AMExpiry is how long a registered AM may be silent before its
	// attempt fails (yarn.am.liveness-monitor.expiry-interval-ms, default
	// 10 minutes).
	AMExpiry time.Duration
	// TokenKey is the master key of RM delegation tokens (default: a key
	// created once and kept in DataDir, so tokens survive restarts).
	TokenKey []byte
	// StateNamespace, with Kubernetes, keeps the state store and the RM's
	// master keys in Secrets of this namespace (kubestore) instead of
	// DataDir, so that they outlive the RM's node and a standby can take
	// over. Empty: the embedded store in DataDir.
	StateNamespace string
	// MayWrite, when set, is asked before every state write: leader
	// election's fence (a deposed leader writes nothing).
	MayWrite func() bool
	// HA says this RM runs with leader election (REST cluster info).
	HA bool
	// Profiling serves Go's profiles (net/http/pprof) under /debug/pprof/
	// on the web address, as kube-scheduler's --profiling does on its
	// port: how a heap or CPU profile of a loaded RM is taken. Off by
	// default, since the web address answers anyone who can reach it.
	Profiling bool
	Logger    *slog.Logger
}

func (c *Config) setDefaults() {
	if c.ClientAddr == "" {
		c.ClientAddr = "127.0.0.1:8032"
	}
	if c.SchedulerAddr == "" {
		c.SchedulerAddr = "127.0.0.1:8030"
	}
	if c.WebAddr == "" {
		c.WebAddr = "127.0.0.1:8088"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RM.Logger == nil {
		c.RM.Logger = c.Logger
	}
	if c.Launcher.SchedulerName == "" {
		c.Launcher.SchedulerName = podbinder.DefaultSchedulerName
	}
	if c.Launcher.ClusterID == "" {
		c.Launcher.ClusterID = "weft"
	}
}

// Server is a running facade.
type Server struct {
	cfg     Config
	store   *state.Store
	Manager *rm.Manager

	// controllers runs the RM's controllers (with Kubernetes): the AM
	// launcher, the container pods', the nodes' and the Queues'.
	controllers       manager.Manager
	nodes             *nodesync.Syncer
	allocator         *allocator.Allocator
	binder            *podbinder.Binder
	pods              cache.SharedIndexInformer
	queuesFromCluster bool
	// queueSync follows the cluster's Queue objects when the tree comes
	// from them.
	queueSync *queuesync.Reconciler
	// crds are the Queue objects the tree was first read from, if it was.
	crds       []v1alpha1.Queue
	ipc, amIPC *ipc.Server
	am         *amrm.Service
	web        *http.Server
	// metrics holds the RM's Prometheus series (and Go's, the process's).
	metrics            *prometheus.Registry
	lnIPC, lnAM, lnWeb net.Listener
	// fenced is closed when the state store in the API server stops
	// writing (another RM leads); nil for the embedded store.
	fenced <-chan struct{}
}

// New opens the store and binds the listeners; Serve starts serving.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	fromCluster := cfg.Queues == nil && cfg.Kubernetes != nil
	var crds []v1alpha1.Queue
	if fromCluster {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		qs, objs, err := queuesync.Read(ctx, cfg.Kubernetes)
		cancel()
		if err != nil {
			return nil, err
		}
		cfg.Queues, crds = qs, objs
	}
	if cfg.Queues == nil {
		cfg.Queues = quota.DefaultQueues
	}
	tree, err := quota.NewTree(cfg.Queues)
	if err != nil {
		return nil, err
	}
	if cfg.Kubernetes == nil && cfg.RM.NoAMLaunch == "" {
		cfg.RM.NoAMLaunch = "weft-rm runs without a Kubernetes cluster (no --kubeconfig): it admits applications but has nowhere to " +
			"run their ApplicationMasters, so this one stays ACCEPTED. `make run` starts Weft with a local cluster, where it runs."
	}
	store, fenced, err := openState(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: store, Manager: rm.New(store, tree, cfg.RM), queuesFromCluster: fromCluster, crds: crds,
		metrics: prometheus.NewRegistry(), fenced: fenced}
	recovered, err := s.Manager.Recover(context.Background())
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("recover state: %w", err)
	}
	if recovered != (rm.Recovered{}) {
		cfg.Logger.Info("recovered the previous incarnation's work", "applications", recovered.Applications,
			"containers", recovered.Containers, "droppedUnacquired", recovered.Dropped, "removedCompleted", recovered.Removed)
	}
	s.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := s.init(); err != nil {
		store.Close()
		return nil, err
	}
	return s, nil
}

// openState opens the state store: in the API server with StateNamespace,
// else the embedded one in DataDir.
func openState(cfg Config) (*state.Store, <-chan struct{}, error) {
	if cfg.StateNamespace == "" || cfg.Kubernetes == nil {
		store, err := state.OpenDir(cfg.DataDir)
		return store, nil, err
	}
	// The store's own client, not rate-limited on this side: every state
	// change of the RM is one write, and queueing them behind the
	// launcher's and binder's calls would slow every client of the RM.
	// The API server's priority and fairness bounds it instead.
	rc := k8srest.CopyConfig(cfg.Kubernetes)
	rc.QPS, rc.Burst = -1, 0
	client, err := kubeclient.New(rc)
	if err != nil {
		return nil, nil, err
	}
	store, durable, err := kubestore.Open(client, kubestore.Options{Namespace: cfg.StateNamespace,
		Name: cfg.Launcher.ClusterID + "-rm-state", MayWrite: cfg.MayWrite, Logger: cfg.Logger})
	if err != nil {
		return nil, nil, err
	}
	return store, durable.Fenced(), nil
}

// stateStoreName is the state store's name in REST cluster info.
func (s *Server) stateStoreName() string {
	if s.fenced != nil {
		return kubestore.StoreName
	}
	return ""
}

// masterKey returns the RM's master key of one kind, created on first
// start: in a Secret beside the state in the API server, else in DataDir.
// Tokens signed with it stay valid across restarts and failovers.
func (s *Server) masterKey(name string) ([]byte, error) {
	if s.fenced == nil {
		return masterkey.FromFile(s.cfg.DataDir, name+".key")
	}
	return s.keyFromSecret(s.cfg.StateNamespace, s.cfg.Launcher.ClusterID+"-"+name)
}

// keyFromSecret reads a master key from a Secret, creating it on first
// start.
func (s *Server) keyFromSecret(namespace, name string) ([]byte, error) {
	client, err := kubeclient.New(s.cfg.Kubernetes)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return masterkey.FromSecret(ctx, client, namespace, name, true)
}

// init assembles the server: its listeners and keys, then the cluster
// mode's controllers and scheduler (with Kubernetes) or the embedded
// mode's one node, then the protocols over them.
func (s *Server) init() error {
	if err := s.listen(); err != nil {
		return err
	}
	key := s.cfg.TokenKey
	if key == nil {
		var err error
		if key, err = s.masterKey("rm-delegation-token"); err != nil {
			return err
		}
	}
	tokens := clientrm.NewDelegationTokens(s.store, key, clientrm.TokenOptions{})
	amKey, err := s.masterKey("rm-amrm-token")
	if err != nil {
		return err
	}
	amTokens := amrm.NewTokens(s.Manager, amKey)
	nmKey, err := s.nmKey()
	if err != nil {
		return fmt.Errorf("NM master key: %w", err)
	}
	if s.cfg.Kubernetes != nil {
		err = s.assembleCluster(amTokens)
	} else {
		err = s.assembleEmbedded()
	}
	if err != nil {
		return err
	}
	return s.serveProtocols(tokens, amTokens, nmKey)
}

// listen binds the client, AM and web addresses.
func (s *Server) listen() error {
	var err error
	if s.lnIPC, err = net.Listen("tcp", s.cfg.ClientAddr); err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.ClientAddr, err)
	}
	if s.lnAM, err = net.Listen("tcp", s.cfg.SchedulerAddr); err != nil {
		s.lnIPC.Close()
		return fmt.Errorf("listen %s: %w", s.cfg.SchedulerAddr, err)
	}
	if s.lnWeb, err = net.Listen("tcp", s.cfg.WebAddr); err != nil {
		s.lnIPC.Close()
		s.lnAM.Close()
		return fmt.Errorf("listen %s: %w", s.cfg.WebAddr, err)
	}
	return nil
}

// assembleEmbedded is the mode without Kubernetes: applications are
// admitted and nothing is launched, and this machine may stand for the
// cluster's one node.
func (s *Server) assembleEmbedded() error {
	if s.cfg.LocalNode {
		return s.registerLocalNode()
	}
	return nil
}

// assembleCluster is the mode with Kubernetes: the controllers that carry
// the RM's records into pods and the cluster's state into the records,
// the binder and the allocator, each a Runnable of one controller
// manager, started and stopped with it (Serve).
func (s *Server) assembleCluster(amTokens *amrm.Tokens) error {
	// Protobuf for the launcher's, binder's and informers' built-in
	// kinds; s.cfg.Kubernetes stays JSON for the Queue CRDs and the CNR.
	client, err := kubeclient.New(s.cfg.Kubernetes)
	if err != nil {
		return err
	}
	opts := s.cfg.Launcher
	if opts.SchedulerAddr == "" {
		opts.SchedulerAddr = s.lnAM.Addr().String()
	}
	if opts.Logger == nil {
		opts.Logger = s.cfg.Logger
	}
	if s.controllers, err = s.newControllerManager(); err != nil {
		return err
	}
	kc, api := s.controllers.GetClient(), s.controllers.GetAPIReader()
	opts.APIReader = api
	if err := amlauncher.New(s.Manager, kc, amTokens, opts).SetupWithManager(s.controllers); err != nil {
		return fmt.Errorf("AM launcher: %w", err)
	}
	containers := podsync.New(s.Manager, kc, podsync.Options{Namespace: opts.Namespace, ClusterID: opts.ClusterID,
		ContainerAllocationExpiry: opts.ContainerAllocationExpiry, APIReader: api, Logger: opts.Logger})
	if err := containers.SetupWithManager(s.controllers); err != nil {
		return fmt.Errorf("container pods: %w", err)
	}
	if err := s.setupQueueSync(); err != nil {
		return err
	}
	// One watch of the cluster's live pods serves the node view (what
	// others hold) and the binder (which of Weft's wait).
	s.pods = nodesync.LivePods(client)
	nopts := nodesync.Options{ClusterID: opts.ClusterID, SchedulerName: opts.SchedulerName,
		Profile: opts.Profile, NMPort: opts.NMPort, NMHTTPPort: opts.NMHTTPPort, Pods: s.pods, Cooldown: s.cfg.NodeCooldown,
		CapacityStaleAfter: s.cfg.CapacityStaleAfter, NodeExpiry: s.cfg.NodeExpiry}
	if opts.Profile.CapacityFromCNR {
		if nopts.CNR, err = dynamic.NewForConfig(s.cfg.Kubernetes); err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
	}
	if s.nodes, err = nodesync.New(s.Manager, client, nopts); err != nil {
		return err
	}
	if err := s.nodes.SetupWithManager(s.controllers); err != nil {
		return fmt.Errorf("node sync: %w", err)
	}
	// Weft's scheduler binds the pods that name it: AM pods, and any
	// other pod placed by its queue and tier labels.
	s.binder, err = podbinder.New(client, podbinder.Options{SchedulerName: opts.SchedulerName, Workers: s.cfg.BindParallelism,
		Informer: s.pods, Logger: s.cfg.Logger, OnPending: func() { s.allocator.Kick() }})
	if err != nil {
		return err
	}
	aopts := s.cfg.Allocator
	aopts.Logger = s.cfg.Logger
	aopts.Metrics = s.metrics
	aopts.Quotas = s.quotas
	aopts.Pods, aopts.Profile, aopts.ClusterID, aopts.Nodes = s.binder, opts.Profile, opts.ClusterID, s.nodes
	s.allocator = allocator.New(s.Manager, aopts)
	for _, r := range []manager.Runnable{
		manager.RunnableFunc(func(ctx context.Context) error { s.pods.Run(ctx.Done()); return nil }),
		manager.RunnableFunc(func(ctx context.Context) error { s.nodes.Run(ctx); return nil }),
		manager.RunnableFunc(func(ctx context.Context) error { s.binder.Run(ctx); return nil }),
		manager.RunnableFunc(s.schedule),
	} {
		if err := s.controllers.Add(r); err != nil {
			return err
		}
	}
	return nil
}

// serveProtocols builds the client protocol, the AM protocol (AMs must
// present their AMRMToken: SIMPLE is not accepted on 8030) and the web
// handler over what the mode assembled.
func (s *Server) serveProtocols(tokens *clientrm.DelegationTokens, amTokens *amrm.Tokens, nmKey []byte) error {
	amOpts := amrm.Options{Keys: nmtokens.New(nmKey), AMExpiry: s.cfg.AMExpiry, Logger: s.cfg.Logger}
	if s.allocator != nil {
		amOpts.Allocator = s.allocator
	}
	s.am = amrm.New(s.Manager, amOpts)
	var err error
	if s.amIPC, err = ipc.NewServer(ipc.Options{Name: "am-rm", Tokens: amTokens, Logger: s.cfg.Logger}, s.am.Service()); err != nil {
		return err
	}
	svc := clientrm.New(s.Manager, clientrm.Options{Tokens: tokens, AMTokens: amTokens, WebAddr: s.lnWeb.Addr().String(),
		Progress: s.am.Progress, Logger: s.cfg.Logger})
	if s.ipc, err = ipc.NewServer(ipc.Options{Name: "client-rm", Simple: true, Tokens: tokens, Logger: s.cfg.Logger}, svc.Service()); err != nil {
		return err
	}
	// The controllers' series (reconciles, errors, workqueue depth and
	// latency) are served beside the RM's own.
	var metrics prometheus.Gatherer = s.metrics
	if s.controllers != nil {
		metrics = firstWins{s.metrics, ctrlmetrics.Registry}
	}
	restOpts := rest.Options{Logger: s.cfg.Logger, WebAddr: s.lnWeb.Addr().String(),
		Metrics: promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}), StateStore: s.stateStoreName(), HA: s.cfg.HA,
		Progress: s.am.Progress}
	if s.allocator != nil {
		restOpts.Asks = s.allocator.Outstanding
	}
	var handler http.Handler = rest.NewHandler(s.Manager, restOpts)
	if s.cfg.Profiling {
		handler = withProfiling(handler)
	}
	s.web = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	return nil
}

func (s *Server) nmKey() ([]byte, error) {
	if s.cfg.NMKeySecret != "" && s.cfg.Kubernetes != nil {
		ns, name, ok := strings.Cut(s.cfg.NMKeySecret, "/")
		if !ok {
			return nil, fmt.Errorf("NM key secret %q is not namespace/name", s.cfg.NMKeySecret)
		}
		return s.keyFromSecret(ns, name)
	}
	path := s.cfg.NMKeyFile
	if path == "" {
		path = filepath.Join(s.cfg.DataDir, "nm-master.key")
	}
	return masterkey.FromFile(filepath.Split(path))
}

// ClientAddr, SchedulerAddr and WebAddr are the bound addresses.
func (s *Server) ClientAddr() string    { return s.lnIPC.Addr().String() }
func (s *Server) SchedulerAddr() string { return s.lnAM.Addr().String() }
func (s *Server) WebAddr() string       { return s.lnWeb.Addr().String() }

// Serve serves until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context) error {
	// Everything started here stops when Serve returns, whatever the cause.
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 4)
	controllersDone := make(chan struct{})
	go func() { errc <- s.ipc.Serve(s.lnIPC) }()
	go func() { errc <- s.amIPC.Serve(s.lnAM) }()
	go func() { errc <- s.web.Serve(s.lnWeb) }()
	go s.am.Run(ctx)
	s.cfg.Logger.Info("resource manager facade serving", "client", s.ClientAddr(), "scheduler", s.SchedulerAddr(), "web", s.WebAddr(),
		"clusterTimestamp", s.Manager.ClusterTimestamp())
	if s.controllers != nil {
		go func() {
			defer close(controllersDone)
			if err := s.controllers.Start(ctx); err != nil {
				errc <- fmt.Errorf("controllers: %w", err)
			}
		}()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	case <-s.fenced:
		// Another RM leads: stop serving before it is told anything
		// this one would answer from a view no longer current.
		err = kubestore.ErrFenced
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.ipc.Shutdown(shutdownCtx)
	s.amIPC.Shutdown(shutdownCtx)
	s.web.Shutdown(shutdownCtx)
	stop()
	if s.controllers != nil {
		<-controllersDone // no reconcile writes to the store once it is closed
	}
	s.store.Close()
	if errors.Is(err, ipc.ErrServerClosed) || errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// schedule runs the allocator once it can place anything: until the
// nodes are read and the watch has listed the pods, a cycle would place
// nothing, or take bound pods' capacity for free.
func (s *Server) schedule(ctx context.Context) error {
	if !s.firstNodeSync(ctx) || !s.binder.WaitForSync(ctx) {
		return nil
	}
	s.cfg.Logger.Info("scheduling", "scheduler", s.cfg.Launcher.SchedulerName)
	s.allocator.Run(ctx)
	return nil
}

// firstNodeSync reads every node into the RM once the watches have listed
// them, retrying until it succeeds or ctx ends (false). The nodes
// controller keeps them current after.
func (s *Server) firstNodeSync(ctx context.Context) bool {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		err := s.nodes.Sync(ctx)
		if err == nil {
			s.cfg.Logger.Info("nodes synced", "nodes", len(s.Manager.Snapshot().Nodes()))
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		s.cfg.Logger.Warn("node sync", "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// registerLocalNode reports this machine as a node: what the embedded
// default schedules onto when no Kubernetes cluster is configured.
func (s *Server) registerLocalNode() error {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	return s.Manager.PutNode(&records.Node{
		ID: host + ":8041", Host: host, Port: 8041, Rack: "/default-rack", HTTPAddress: host + ":8042",
		// Vcores as a cluster node's are counted (--milli-cpu-per-vcore), so
		// one machine shows the same vcores embedded and on Kubernetes.
		State: records.NodeRunning, Capability: records.Resource{MemoryMB: physicalMemoryMB(),
			VCores: int32(int64(runtime.NumCPU()) * 1000 / s.cfg.Launcher.Profile.VCoreMilli())},
		LastHealthUpdate: time.Now().UnixMilli(),
	})
}
