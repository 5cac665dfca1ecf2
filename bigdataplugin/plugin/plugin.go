// Package plugin wires the node plugin: the NodeManager protocol server
// for this node, over the cluster's API server.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/weft-sh/weft/bigdataplugin/auxservices"
	"github.com/weft-sh/weft/bigdataplugin/cgroups"
	"github.com/weft-sh/weft/bigdataplugin/colocation"
	"github.com/weft-sh/weft/bigdataplugin/procstat"
	"github.com/weft-sh/weft/translator/kubeclient"

	"github.com/weft-sh/weft/bigdataplugin/janitor"
	"github.com/weft-sh/weft/bigdataplugin/localizer"
	"github.com/weft-sh/weft/bigdataplugin/nodemanager"
	"github.com/weft-sh/weft/bigdataplugin/shuffle"
	"github.com/weft-sh/weft/protos/ipc"
	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/translator"
	"github.com/weft-sh/weft/translator/masterkey"
)

// Config configures the plugin.
type Config struct {
	// Address serves ContainerManagementProtocol; its port is the NodeId's.
	Address string
	// HTTPAddress serves containers' logs at the NodeManager's web paths.
	HTTPAddress string
	// ShuffleAddress serves MapReduce's shuffle (mapreduce.shuffle.port).
	ShuffleAddress string
	// NMKeySecret ("namespace/name") or NMKeyFile holds the master key
	// shared with the RM.
	NMKeySecret string
	NMKeyFile   string
	// RMWebAddress is the ResourceManager's REST address
	// (yarn.resourcemanager.webapp.address): the janitor asks it which
	// applications ended. Empty leaves ended applications' files alone.
	RMWebAddress string
	// LogRetention keeps ended applications' logs this long
	// (yarn.nodemanager.log.retain-seconds).
	LogRetention time.Duration
	// CleanupInterval is how often the janitor looks for ended
	// applications.
	CleanupInterval time.Duration
	// CacheTargetSize is the size the localizer cache is kept under
	// (yarn.nodemanager.localizer.cache.target-size-mb), cleaned every
	// CacheCleanupInterval (…cache.cleanup.interval-ms).
	CacheTargetSize      int64
	CacheCleanupInterval time.Duration
	Kubernetes           *rest.Config
	NodeManager          nodemanager.Options
	Logger               *slog.Logger
	// AuxServices are the node's Java auxiliary services (Spark's
	// spark_shuffle), run in a JVM the plugin supervises; none by default.
	AuxServices auxservices.Options
	// Colocation, when set, runs the colocation agent: it measures online
	// usage, publishes the reclaimable capacity on the Node and bounds
	// the big box (kubelet's besteffort cgroup) to it.
	Colocation *Colocation
}

// Colocation configures the node's colocation agent.
type Colocation struct {
	// CgroupRoot is where the cgroup hierarchies are mounted
	// (/sys/fs/cgroup); CgroupDriver is the kubelet's (cgroupfs or
	// systemd). The version is detected.
	CgroupRoot, CgroupDriver string
	// ProcRoot and SysRoot are /proc and /sys.
	ProcRoot, SysRoot string
	// ConfigMap ("namespace/name") overrides Defaults cluster-wide.
	ConfigMap string
	Defaults  colocation.Config
}

// Plugin is a bound, not yet serving, node plugin.
type Plugin struct {
	cfg    Config
	ln     net.Listener
	srv    *ipc.Server
	nm     *nodemanager.Service
	lnHTTP net.Listener
	web    *http.Server
	lnShuf net.Listener
	shuf   *http.Server
	// janitor removes ended applications' files and keeps the
	// localizer cache under its size.
	janitor *janitor.Janitor
	// aux runs the node's Java auxiliary services.
	aux *auxservices.Host
	// colocation runs the colocation agent; nil without one.
	colocation manager.Manager
}

// New binds the listener.
func New(cfg Config) (*Plugin, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeManager.NodeName == "" {
		return nil, errors.New("plugin: no node name")
	}
	client, err := kubeclient.New(cfg.Kubernetes)
	if err != nil {
		return nil, fmt.Errorf("plugin: %w", err)
	}
	var key []byte
	if ns, name, ok := strings.Cut(cfg.NMKeySecret, "/"); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		key, err = masterkey.FromSecret(ctx, client, ns, name, false)
		cancel()
	} else {
		key, err = readKey(cfg.NMKeyFile)
	}
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("plugin: listen %s: %w", cfg.Address, err)
	}
	lnHTTP, err := net.Listen("tcp", cfg.HTTPAddress)
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("plugin: listen %s: %w", cfg.HTTPAddress, err)
	}
	lnShuf, err := net.Listen("tcp", cfg.ShuffleAddress)
	if err != nil {
		ln.Close()
		lnHTTP.Close()
		return nil, fmt.Errorf("plugin: listen %s: %w", cfg.ShuffleAddress, err)
	}
	if cfg.AuxServices.Logger == nil {
		cfg.AuxServices.Logger = cfg.Logger
	}
	aux, err := auxservices.New(cfg.AuxServices)
	if err != nil {
		ln.Close()
		lnHTTP.Close()
		lnShuf.Close()
		return nil, fmt.Errorf("plugin: %w", err)
	}
	opts := cfg.NodeManager
	if len(cfg.AuxServices.Services) > 0 {
		opts.AuxServices = aux
	}
	opts.Shuffle = &shuffle.Service{LocalRoot: opts.Runtime.LocalRoot, Port: lnShuf.Addr().(*net.TCPAddr).Port}
	opts.Keys = nmtokens.New(key)
	opts.Port = int32(ln.Addr().(*net.TCPAddr).Port)
	opts.HTTPPort = int32(lnHTTP.Addr().(*net.TCPAddr).Port)
	if opts.Logger == nil {
		opts.Logger = cfg.Logger
	}
	nm := nodemanager.New(client, opts)
	srv, err := ipc.NewServer(ipc.Options{Name: "nodemanager", Tokens: nm.Authenticator(), Logger: cfg.Logger}, nm.Service())
	if err != nil {
		ln.Close()
		lnHTTP.Close()
		lnShuf.Close()
		return nil, err
	}
	metrics := prometheus.NewRegistry()
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	mux.Handle("/", nodemanager.LogServer{Root: opts.Runtime.LogRoot}.Handler())
	web := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	shuf := &http.Server{Handler: opts.Shuffle, ReadHeaderTimeout: 10 * time.Second}
	p := &Plugin{cfg: cfg, ln: ln, srv: srv, nm: nm, lnHTTP: lnHTTP, web: web, lnShuf: lnShuf, shuf: shuf, aux: aux}
	jopts := janitor.Options{
		LocalRoot: opts.Runtime.LocalRoot, LogRoot: opts.Runtime.LogRoot,
		LogRetention: cfg.LogRetention, Interval: cfg.CleanupInterval, CacheInterval: cfg.CacheCleanupInterval,
		Pods: janitor.KubePods{Client: client, Namespace: opts.Namespace, Node: opts.NodeName},
		AppEnded: func(app string) {
			opts.Shuffle.Forget(app)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := aux.StopApp(ctx, app); err != nil {
				cfg.Logger.Warn("auxiliary services not told an application ended", "app", app, "err", err)
			}
		},
		RemoveAppCache: func(app string) error {
			return localizer.RemoveApp(opts.Runtime.CacheDir, app)
		},
		Logger: cfg.Logger,
	}
	if cfg.RMWebAddress != "" {
		jopts.Apps = janitor.RMWeb{Address: cfg.RMWebAddress}
	}
	if cfg.CacheTargetSize > 0 && opts.Runtime.CacheDir != "" {
		cleaner := &localizer.CacheCleaner{
			Dir: opts.Runtime.CacheDir, TargetSize: cfg.CacheTargetSize, MinAge: 5 * time.Minute,
			InUse: func(context.Context) (map[string]bool, error) {
				return localizer.RefsInUse(opts.Runtime.CacheDir, translator.CacheRefsGlob(opts.Runtime.LocalRoot))
			},
		}
		jopts.Cache = func(ctx context.Context) error {
			stats, err := cleaner.Clean(ctx)
			if stats.Removed > 0 {
				cfg.Logger.Info("localizer cache cleaned", "entries", stats.Entries, "removed", stats.Removed, "size", stats.Size, "freed", stats.Freed)
			}
			return err
		}
	}
	p.janitor = janitor.New(jopts)
	if cfg.Colocation != nil {
		if p.colocation, err = newColocation(cfg, metrics); err != nil {
			ln.Close()
			lnHTTP.Close()
			lnShuf.Close()
			return nil, err
		}
	}
	return p, nil
}

// newColocation sets up the colocation agent under a controller-runtime
// manager of its own.
func newColocation(cfg Config, reg prometheus.Registerer) (manager.Manager, error) {
	c := cfg.Colocation
	opts := colocation.Options{
		NodeName: cfg.NodeManager.NodeName, Defaults: c.Defaults, Profile: translator.Weft, ProcRoot: c.ProcRoot,
		Logger: cfg.Logger, Metrics: colocation.NewMetrics(),
	}
	// A node whose cgroups or CPUs cannot be read runs the agent blind
	// (it offers nothing, with an Event saying why), not a plugin that
	// exits: the NodeManager side serves on.
	fsys, err := cgroups.Open(c.CgroupRoot, cgroups.Driver(c.CgroupDriver))
	var cores []procstat.Core
	if err == nil {
		cores, err = procstat.Topology(c.SysRoot)
	}
	if err != nil {
		cfg.Logger.Error("colocation agent is blind: it offers no batch capacity", "err", err)
		opts.Unusable = err
	} else {
		fsys.ProcRoot = c.ProcRoot
		opts.FS, opts.Box = fsys, &colocation.Box{FS: fsys, Cores: cores}
		for _, core := range cores {
			opts.NumCPU += len(core)
		}
	}
	if ns, name, ok := strings.Cut(c.ConfigMap, "/"); ok {
		opts.ConfigNamespace, opts.ConfigName = ns, name
	}
	if err := opts.Metrics.Register(reg); err != nil {
		return nil, fmt.Errorf("plugin: colocation metrics: %w", err)
	}
	ctrllog.SetLogger(logr.FromSlogHandler(cfg.Logger.Handler()))
	mgr, err := colocation.NewManager(cfg.Kubernetes, opts)
	if err != nil {
		return nil, err
	}
	agent := colocation.NewAgent(mgr.GetClient(), mgr.GetEventRecorderFor("weft-colocation"), opts)
	if err := agent.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("plugin: colocation: %w", err)
	}
	return mgr, nil
}

// readKey waits briefly for the RM to create the shared key, so the two
// can start in any order.
func readKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("plugin: no NM key file")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) >= 32 {
			return b, nil
		}
		if time.Now().After(deadline) {
			return masterkey.FromFile(filepath.Split(path))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// NodeID is the YARN NodeId the plugin serves.
func (p *Plugin) NodeID() string { return p.nm.NodeID() }

// Serve serves until ctx ends.
func (p *Plugin) Serve(ctx context.Context) error {
	errc := make(chan error, 4)
	go func() { errc <- p.srv.Serve(p.ln) }()
	go func() { errc <- p.web.Serve(p.lnHTTP) }()
	go func() { errc <- p.shuf.Serve(p.lnShuf) }()
	bg, stop := context.WithCancel(ctx)
	defer stop()
	go p.janitor.Run(bg)
	auxDone := make(chan struct{})
	go func() {
		defer close(auxDone)
		p.aux.Run(bg)
	}()
	// The services stop (their JVM told to) before the plugin returns.
	defer func() { stop(); <-auxDone }()
	if p.colocation != nil {
		go func() {
			if err := p.colocation.Start(bg); err != nil {
				errc <- fmt.Errorf("colocation agent: %w", err)
			}
		}()
	}
	p.cfg.Logger.Info("node plugin serving", "nodeId", p.NodeID(), "address", p.ln.Addr().String(), "http", p.lnHTTP.Addr().String())
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.srv.Shutdown(shutdownCtx)
	p.web.Shutdown(shutdownCtx)
	p.shuf.Shutdown(shutdownCtx)
	if errors.Is(err, ipc.ErrServerClosed) || errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
