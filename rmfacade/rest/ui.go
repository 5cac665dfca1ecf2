package rest

import (
	"html/template"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/state"
)

// The web UI: plain pages over the same data as the REST API, at YARN's
// paths, so links from the CLI and from trackingUrls land somewhere useful.

var pages = template.Must(template.New("layout").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}} — Weft</title>
<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#eee}</style>
</head><body><h1>{{.Title}}</h1>
<p><a href="/cluster">Cluster</a> · <a href="/cluster/apps">Applications</a> · <a href="/cluster/nodes">Nodes</a> · <a href="/ws/v1/cluster/scheduler">Scheduler (REST)</a></p>
{{if .Apps}}<table><tr><th>ID</th><th>User</th><th>Name</th><th>Type</th><th>Queue</th><th>State</th><th>FinalStatus</th><th>Started</th></tr>
{{range .Apps}}<tr><td><a href="/cluster/app/{{.ID}}">{{.ID}}</a></td><td>{{.User}}</td><td>{{.Name}}</td><td>{{.ApplicationType}}</td><td>{{.Queue}}</td><td>{{.State}}</td><td>{{.FinalStatus}}</td><td>{{.StartedTime}}</td></tr>
{{end}}</table>{{end}}
{{if .Nodes}}<table><tr><th>Node</th><th>Rack</th><th>State</th><th>Containers</th><th>Memory used / total (MB)</th><th>VCores used / total</th></tr>
{{range .Nodes}}<tr><td>{{.ID}}</td><td>{{.Rack}}</td><td>{{.State}}</td><td>{{.NumContainers}}</td><td>{{.UsedMemoryMB}} / {{.TotalResource.Memory}}</td><td>{{.UsedVirtualCores}} / {{.TotalResource.VCores}}</td></tr>
{{end}}</table>{{end}}
{{with .App}}<table>
<tr><th>Application</th><td>{{.ID}}</td></tr><tr><th>User</th><td>{{.User}}</td></tr><tr><th>Name</th><td>{{.Name}}</td></tr>
<tr><th>Type</th><td>{{.ApplicationType}}</td></tr><tr><th>Tags</th><td>{{.ApplicationTags}}</td></tr><tr><th>Queue</th><td>{{.Queue}}</td></tr>
<tr><th>State</th><td>{{.State}}</td></tr><tr><th>Final status</th><td>{{.FinalStatus}}</td></tr><tr><th>Diagnostics</th><td>{{.Diagnostics}}</td></tr>
</table>{{end}}
{{if .Empty}}<p>{{.Empty}}</p>{{end}}
</body></html>`))

type page struct {
	Title string
	Apps  []*dao.AppInfo
	Nodes []*dao.NodeInfo
	App   *dao.AppInfo
	Empty string
}

func (h *handler) registerUI(r *mux.Router) {
	render := func(w http.ResponseWriter, p page) {
		w.Header().Set("Content-Type", "text/html;charset=utf-8")
		pages.Execute(w, p)
	}
	appsPage := func(w http.ResponseWriter, r *http.Request) {
		p := page{Title: "All Applications", Empty: "No applications."}
		for _, a := range h.mgr.Snapshot().Applications(state.ApplicationFilter{}) {
			p.Apps = append(p.Apps, h.appInfo(a))
		}
		if len(p.Apps) > 0 {
			p.Empty = ""
		}
		render(w, p)
	}
	r.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/cluster", http.StatusFound) })
	r.HandleFunc("/cluster", appsPage)
	r.HandleFunc("/cluster/apps", appsPage)
	r.HandleFunc("/cluster/nodes", func(w http.ResponseWriter, r *http.Request) {
		p := page{Title: "Nodes of the cluster", Empty: "No nodes."}
		for _, n := range h.mgr.Snapshot().Nodes() {
			p.Nodes = append(p.Nodes, h.nodeInfo(n))
			p.Empty = ""
		}
		render(w, p)
	})
	r.HandleFunc("/cluster/app/{appid}", func(w http.ResponseWriter, r *http.Request) {
		a, err := h.application(r)
		if err != nil {
			w.WriteHeader(http.StatusNotFound)
			render(w, page{Title: "Application not found", Empty: mux.Vars(r)["appid"] + " is not known to this ResourceManager."})
			return
		}
		render(w, page{Title: "Application " + a.ID.String(), App: h.appInfo(a)})
	})
}
