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

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/weft-sh/weft/bigdataplugin/janitor"
	"github.com/weft-sh/weft/bigdataplugin/localizer"
	"github.com/weft-sh/weft/bigdataplugin/nmtokens"
	"github.com/weft-sh/weft/bigdataplugin/nodemanager"
	"github.com/weft-sh/weft/bigdataplugin/shuffle"
	"github.com/weft-sh/weft/rmfacade/ipc"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
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
}

// New binds the listener.
func New(cfg Config) (*Plugin, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeManager.NodeName == "" {
		return nil, errors.New("plugin: no node name")
	}
	client, err := kubernetes.NewForConfig(cfg.Kubernetes)
	if err != nil {
		return nil, fmt.Errorf("plugin: kubernetes client: %w", err)
	}
	var key []byte
	if ns, name, ok := strings.Cut(cfg.NMKeySecret, "/"); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		key, err = nmtokens.KeyFromSecret(ctx, client, ns, name, false)
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
	opts := cfg.NodeManager
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
	web := &http.Server{Handler: nodemanager.LogServer{Root: opts.Runtime.LogRoot}.Handler(), ReadHeaderTimeout: 10 * time.Second}
	shuf := &http.Server{Handler: opts.Shuffle, ReadHeaderTimeout: 10 * time.Second}
	p := &Plugin{cfg: cfg, ln: ln, srv: srv, nm: nm, lnHTTP: lnHTTP, web: web, lnShuf: lnShuf, shuf: shuf}
	jopts := janitor.Options{
		LocalRoot: opts.Runtime.LocalRoot, LogRoot: opts.Runtime.LogRoot,
		LogRetention: cfg.LogRetention, Interval: cfg.CleanupInterval, CacheInterval: cfg.CacheCleanupInterval,
		Pods:     janitor.KubePods{Client: client, Namespace: opts.Namespace, Node: opts.NodeName},
		AppEnded: opts.Shuffle.Forget,
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
	return p, nil
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
			return state.LoadOrCreateKey(filepath.Split(path))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// NodeID is the YARN NodeId the plugin serves.
func (p *Plugin) NodeID() string { return p.nm.NodeID() }

// Serve serves until ctx ends.
func (p *Plugin) Serve(ctx context.Context) error {
	errc := make(chan error, 3)
	go func() { errc <- p.srv.Serve(p.ln) }()
	go func() { errc <- p.web.Serve(p.lnHTTP) }()
	go func() { errc <- p.shuf.Serve(p.lnShuf) }()
	bg, stop := context.WithCancel(ctx)
	defer stop()
	go p.janitor.Run(bg)
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
