// Package webui is the ResourceManager's web UI: the pages YARN users open
// on the RM's web port (8088), at the paths of Hadoop 3.4's RM UI v1
// (/cluster, /cluster/apps[/STATE], /cluster/app/{id},
// /cluster/appattempt/{id}, /cluster/scheduler, /cluster/nodes), so that
// links from the CLI, from trackingUrls and from bookmarks land where a
// YARN user expects them. One page is Weft's own, beside them:
// /cluster/weft, the colocation tiers and the last hour's preemptions.
//
// Pages are rendered on the server from embedded html/template files and
// one stylesheet: no CDN, no JavaScript, no build step. Sorting, filtering
// and paging are query parameters. What a page shows is drawn from the
// same builders as the REST API (see Source), so a page never disagrees
// with the /ws/v1 resource it links to.
package webui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/state"
)

// Source is what the pages are drawn from: the store, and the REST
// representations the RM's web services build from it. The REST handler
// implements it with its own builders, so a page and its /ws/v1 resource
// agree by construction.
type Source interface {
	// Snapshot is the consistent view of the store one page reads.
	Snapshot() *state.Snapshot
	// ClusterMetrics is /ws/v1/cluster/metrics as of snap.
	ClusterMetrics(snap *state.Snapshot) *dao.ClusterMetricsInfo
	// App is /ws/v1/cluster/apps/{appid} for a, as of snap.
	App(snap *state.Snapshot, a *records.Application) *dao.AppInfo
	// Node is /ws/v1/cluster/nodes/{nodeid} for n.
	Node(n *records.Node) *dao.NodeInfo
	// Scheduler is /ws/v1/cluster/scheduler's schedulerInfo as of snap,
	// nil when the queue tree has no root.
	Scheduler(snap *state.Snapshot) *dao.CapacitySchedulerInfo
	// QueuePath is the full path of a queue named by leaf or by path
	// ("default" → "root.default"), or the name when the tree lacks it.
	QueuePath(name string) string
}

// Options configures the UI. Zero values take the defaults documented on
// each field.
type Options struct {
	// Now is the clock for elapsed times (default time.Now); pass the
	// REST handler's, so a page's elapsed times match its resource's.
	Now func() time.Time
	// PageSize is how many applications one page of a list shows
	// (default 50).
	PageSize int
	// Logger reports pages that fail to render (default slog.Default()).
	Logger *slog.Logger
}

// DefaultPageSize is the applications per page when Options.PageSize is 0.
const DefaultPageSize = 50

//go:embed templates/*.html static/*
var assets embed.FS

// pageNames are the templates under templates/ that are whole pages; each
// is parsed with layout.html into its own set.
var pageNames = []string{"apps", "app", "attempt", "scheduler", "nodes", "weft", "notfound"}

// pages are parsed once, when the program starts: they are embedded, so a
// parse error is a bug of the build, which every test that serves a page
// finds.
var pages = must(parsePages())

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ui serves the pages.
type ui struct {
	src  Source
	opts Options
}

// Register adds the UI's routes to r, GET only (the REST handler serves
// HEAD as GET). It claims "/", "/static/" and everything under "/cluster/",
// the REST API keeping "/ws/".
func Register(r *mux.Router, src Source, opts Options) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	u := &ui{src: src, opts: opts}
	static := must(fs.Sub(assets, "static"))
	get := func(path string, f http.HandlerFunc) { r.HandleFunc(path, f).Methods(http.MethodGet) }
	// YARN's RM redirects its root to the cluster page.
	get("/", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/cluster", http.StatusFound) })
	r.PathPrefix("/static/").Handler(http.StripPrefix("/static/", http.FileServer(http.FS(static)))).Methods(http.MethodGet)
	get("/cluster", u.apps)
	get("/cluster/", u.apps)
	get("/cluster/apps", u.apps)
	get("/cluster/apps/{state}", u.apps)
	get("/cluster/app/{appid}", u.app)
	get("/cluster/appattempt/{attemptid}", u.attempt)
	get("/cluster/scheduler", u.scheduler)
	get("/cluster/nodes", u.nodes)
	// Weft's own page, under /cluster with the others: YARN's RM UI has
	// no page of that name, so no YARN link is taken from it.
	get("/cluster/weft", u.weft)
	// Any other page under /cluster is the UI's own 404, in its layout,
	// rather than the REST API's JSON error.
	r.PathPrefix("/cluster/").HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.notFound(w, r, "There is no page "+r.URL.Path+" on this ResourceManager.")
	}).Methods(http.MethodGet)
}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("webui: parse layout: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(assets, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("webui: parse page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// page is what layout.html draws around every page's content.
type page struct {
	Title string
	// Section is the nav entry to highlight: apps, scheduler, nodes or
	// weft; State the application state of an apps page.
	Section, State string
	// REST is the page's /ws/v1 resource, linked from the page.
	REST    string
	Metrics *dao.ClusterMetricsInfo
	// States are the application states the nav lists, YARN's enum order.
	States []records.AppState
	// Body is the page's own data.
	Body any
}

// render draws a page into a buffer first, so that a template failure is
// a clean 500 rather than half a page.
func (u *ui) render(w http.ResponseWriter, r *http.Request, status int, name string, snap *state.Snapshot, p page) {
	if snap == nil {
		snap = u.src.Snapshot()
	}
	p.Metrics = u.src.ClusterMetrics(snap)
	p.States = records.AllAppStates
	var buf bytes.Buffer
	if err := pages[name].Execute(&buf, p); err != nil {
		u.opts.Logger.Error("web UI page failed to render", "page", name, "path", r.URL.Path, "err", fmt.Errorf("webui: render %s: %w", name, err))
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// notFound is the UI's 404: YARN's RM UI answers an unknown or malformed
// id with a page in its layout saying so; this one links back to /cluster.
func (u *ui) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	u.render(w, r, http.StatusNotFound, "notfound", nil, page{Title: "Not found", Body: msg})
}

// normalizeState is an application state named in a path, as YARN's UI
// accepts it in any case; ok is false for a state YARN does not have.
func normalizeState(s string) (records.AppState, bool) {
	st := records.AppState(strings.ToUpper(s))
	for _, known := range records.AllAppStates {
		if st == known {
			return st, true
		}
	}
	return "", false
}
