// Package janitor removes what finished applications leave on a node, as
// a NodeManager does for the applications its ResourceManager lists in
// applications_to_cleanup: their local directories (containers' working
// directories, MapReduce map outputs, the shuffle's job token) and their
// APPLICATION-visibility localized resources at once, their log
// directories after a retention period (yarn.nodemanager.log.retain-seconds,
// as without log aggregation).
//
// An application's files are removed only when the ResourceManager says
// it has ended and no pod of it is left on the node, so a wrong RM address
// or an RM that forgot an application cannot take a running container's
// files away.
package janitor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/weft-sh/weft/bigdataplugin/internal/dirs"
)

// Applications answers for the ResourceManager.
type Applications interface {
	// Ended reports whether app has ended (FINISHED, FAILED or KILLED).
	Ended(ctx context.Context, app string) (bool, error)
}

// Pods answers for the node's kubelet.
type Pods interface {
	// AppsOnNode returns the applications with a pod on this node.
	AppsOnNode(ctx context.Context) (map[string]bool, error)
}

// Options configures a Janitor. LocalRoot, LogRoot and CacheDir are the
// node plugin's (translator.Runtime); an empty one is skipped.
type Options struct {
	LocalRoot string
	LogRoot   string
	// LogRetention is how long an ended application's logs stay after
	// they were last written (default 3h, YARN's default).
	LogRetention time.Duration
	// Interval between sweeps (default 1m).
	Interval time.Duration
	Apps     Applications
	Pods     Pods
	// Cache, when set, is run every CacheInterval (default 10m): the
	// localizer cache's cleaning.
	Cache         func(ctx context.Context) error
	CacheInterval time.Duration
	// AppEnded is told of each application whose files were removed
	// (the shuffle service forgets its token).
	AppEnded func(app string)
	// RemoveAppCache removes the application's localized resources.
	RemoveAppCache func(app string) error
	Logger         *slog.Logger
	Now            func() time.Time
}

// Janitor sweeps a node's directories.
type Janitor struct {
	opts  Options
	ended map[string]bool // the RM's answer, which cannot change back
}

// New returns a Janitor with opts' defaults filled in.
func New(opts Options) *Janitor {
	if opts.LogRetention == 0 {
		opts.LogRetention = 3 * time.Hour
	}
	if opts.Interval == 0 {
		opts.Interval = time.Minute
	}
	if opts.CacheInterval == 0 {
		opts.CacheInterval = 10 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Janitor{opts: opts, ended: map[string]bool{}}
}

// Run sweeps every Interval, and cleans the cache every CacheInterval,
// until ctx ends.
func (j *Janitor) Run(ctx context.Context) {
	t := time.NewTicker(j.opts.Interval)
	defer t.Stop()
	var cleaned time.Time
	for {
		if err := j.Sweep(ctx); err != nil && ctx.Err() == nil {
			j.opts.Logger.Warn("janitor sweep", "err", err)
		}
		if j.opts.Cache != nil && j.opts.Now().Sub(cleaned) >= j.opts.CacheInterval {
			cleaned = j.opts.Now()
			if err := j.opts.Cache(ctx); err != nil && ctx.Err() == nil {
				j.opts.Logger.Warn("localizer cache cleanup", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

var appID = regexp.MustCompile(`^application_\d+_\d+$`)

// Sweep makes one pass.
func (j *Janitor) Sweep(ctx context.Context) error {
	if j.opts.Apps == nil {
		return nil // no ResourceManager to ask: ended applications' files stay
	}
	local, logs, err := j.appsOnDisk()
	if err != nil {
		return err
	}
	var errs []error
	if len(local)+len(logs) > 0 {
		onNode, err := j.opts.Pods.AppsOnNode(ctx)
		if err != nil {
			return fmt.Errorf("janitor: pods on the node: %w", err)
		}
		for app, paths := range local {
			if ok, err := j.endedHere(ctx, app, onNode); err != nil || !ok {
				errs = append(errs, err)
				continue
			}
			for _, d := range paths {
				if err := os.RemoveAll(d); err != nil {
					errs = append(errs, fmt.Errorf("janitor: %w", err))
				}
			}
			if j.opts.RemoveAppCache != nil {
				if err := j.opts.RemoveAppCache(app); err != nil {
					errs = append(errs, fmt.Errorf("janitor: %s's cache: %w", app, err))
				}
			}
			if j.opts.AppEnded != nil {
				j.opts.AppEnded(app)
			}
			j.opts.Logger.Info("removed an ended application's local directories", "app", app)
		}
		for app, dir := range logs {
			if ok, err := j.endedHere(ctx, app, onNode); err != nil || !ok {
				errs = append(errs, err)
				continue
			}
			last, err := dirs.LastChange(dir)
			if err != nil {
				errs = append(errs, fmt.Errorf("janitor: %w", err))
				continue
			}
			if j.opts.Now().Sub(last) < j.opts.LogRetention {
				continue
			}
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, fmt.Errorf("janitor: %w", err))
				continue
			}
			j.opts.Logger.Info("removed an ended application's logs", "app", app, "lastWritten", last)
		}
	}
	// What the RM said of applications that left nothing here is no
	// longer needed.
	for app := range j.ended {
		if _, ok := local[app]; !ok && logs[app] == "" {
			delete(j.ended, app)
		}
	}
	return errors.Join(errs...)
}

// endedHere reports whether app has ended and has no pod left here.
func (j *Janitor) endedHere(ctx context.Context, app string, onNode map[string]bool) (bool, error) {
	if onNode[app] {
		return false, nil
	}
	if j.ended[app] {
		return true, nil
	}
	ended, err := j.opts.Apps.Ended(ctx, app)
	if err != nil {
		return false, fmt.Errorf("janitor: state of %s: %w", app, err)
	}
	if ended {
		j.ended[app] = true
	}
	return ended, nil
}

// appsOnDisk finds applications' local directories
// (<LocalRoot>/usercache/<user>/appcache/<app>) and log directories
// (<LogRoot>/<app>).
func (j *Janitor) appsOnDisk() (local map[string][]string, logs map[string]string, err error) {
	local, logs = map[string][]string{}, map[string]string{}
	if j.opts.LocalRoot != "" {
		dirs, err := filepath.Glob(filepath.Join(j.opts.LocalRoot, "usercache", "*", "appcache", "application_*"))
		if err != nil {
			return nil, nil, fmt.Errorf("janitor: %w", err)
		}
		for _, d := range dirs {
			if app := filepath.Base(d); appID.MatchString(app) {
				local[app] = append(local[app], d)
			}
		}
	}
	if j.opts.LogRoot != "" {
		entries, err := os.ReadDir(j.opts.LogRoot)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("janitor: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && appID.MatchString(e.Name()) {
				logs[e.Name()] = filepath.Join(j.opts.LogRoot, e.Name())
			}
		}
	}
	return local, logs, nil
}
