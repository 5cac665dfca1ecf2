package webui

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/state"
)

// appSort orders two applications by one column, ascending.
type appSort func(a, b *records.Application, nowMs int64) int

// appSorts are the apps table's sortable columns, by their ?sort= name:
// the columns a record holds, so that sorting 10,000 applications does
// not build 10,000 REST objects. Ties fall back to the id.
var appSorts = map[string]appSort{
	"id":       func(a, b *records.Application, _ int64) int { return a.ID.Compare(b.ID) },
	"user":     func(a, b *records.Application, _ int64) int { return strings.Compare(a.User, b.User) },
	"name":     func(a, b *records.Application, _ int64) int { return strings.Compare(a.Name, b.Name) },
	"type":     func(a, b *records.Application, _ int64) int { return strings.Compare(a.Type, b.Type) },
	"queue":    func(a, b *records.Application, _ int64) int { return strings.Compare(a.Queue, b.Queue) },
	"priority": func(a, b *records.Application, _ int64) int { return cmp.Compare(a.Priority, b.Priority) },
	"started":  func(a, b *records.Application, _ int64) int { return cmp.Compare(a.StartTime, b.StartTime) },
	"launched": func(a, b *records.Application, _ int64) int { return cmp.Compare(a.LaunchTime, b.LaunchTime) },
	"finished": func(a, b *records.Application, _ int64) int { return cmp.Compare(a.FinishTime, b.FinishTime) },
	"elapsed":  func(a, b *records.Application, now int64) int { return cmp.Compare(elapsed(a, now), elapsed(b, now)) },
	"state": func(a, b *records.Application, _ int64) int {
		return cmp.Compare(stateOrder(a.State), stateOrder(b.State))
	},
	"finalstatus": func(a, b *records.Application, _ int64) int {
		return strings.Compare(string(a.FinalStatus), string(b.FinalStatus))
	},
	"progress": func(a, b *records.Application, _ int64) int { return cmp.Compare(a.Progress, b.Progress) },
}

// columnLabels are the sortable columns' headers, as YARN's apps table
// names them.
var columnLabels = map[string]string{"id": "ID", "user": "User", "name": "Name", "type": "Application Type", "queue": "Queue",
	"priority": "Application Priority", "started": "StartTime", "launched": "LaunchTime", "finished": "FinishTime",
	"elapsed": "Elapsed", "state": "State", "finalstatus": "FinalStatus", "progress": "Progress"}

// defaultSort: YARN's RM UI sorts the applications table by ID descending
// (its DataTables "aaSorting": [[0, 'desc']]), newest first; ids rise with
// submission, across RM restarts too (the cluster timestamp leads).
const defaultSort, defaultOrder = "id", "desc"

// elapsed is the application's run time as the REST app's elapsedTime:
// to its finish, or to now while it runs.
func elapsed(a *records.Application, nowMs int64) int64 {
	end := a.FinishTime
	if end == 0 {
		end = nowMs
	}
	return end - a.StartTime
}

func stateOrder(s records.AppState) int { return slices.Index(records.AllAppStates, s) }

// appsQuery is the apps table's query: filters, sort and page.
type appsQuery struct {
	State       records.AppState
	Queue, User string
	Sort, Order string
	Page        int
}

func parseAppsQuery(r *http.Request) appsQuery {
	q := r.URL.Query()
	aq := appsQuery{Queue: strings.TrimSpace(q.Get("queue")), User: strings.TrimSpace(q.Get("user")),
		Sort: strings.ToLower(q.Get("sort")), Order: strings.ToLower(q.Get("order"))}
	// Unknown sorts and orders fall back to the default rather than
	// failing: they come from hand-edited URLs, and the table shows what
	// it sorted by.
	if _, ok := appSorts[aq.Sort]; !ok {
		aq.Sort = defaultSort
		if aq.Order != "asc" {
			aq.Order = defaultOrder
		}
	}
	if aq.Order != "asc" && aq.Order != "desc" {
		aq.Order = defaultOrder
	}
	aq.Page, _ = strconv.Atoi(q.Get("page"))
	return aq
}

// values is the query as URL parameters, with the defaults left out so
// that links stay short.
func (q appsQuery) values() url.Values {
	v := url.Values{}
	if q.Queue != "" {
		v.Set("queue", q.Queue)
	}
	if q.User != "" {
		v.Set("user", q.User)
	}
	if q.Sort != defaultSort || q.Order != defaultOrder {
		v.Set("sort", q.Sort)
		v.Set("order", q.Order)
	}
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	return v
}

// path is the apps page's path, of one state or of all.
func (q appsQuery) path() string {
	if q.State != "" {
		return "/cluster/apps/" + string(q.State)
	}
	return "/cluster/apps"
}

func (q appsQuery) url() string {
	if v := q.values().Encode(); v != "" {
		return q.path() + "?" + v
	}
	return q.path()
}

// column is one sortable column header: its link sorts by it, flipping
// the order when it is the current sort.
type column struct {
	Label, URL string
	// Arrow is ▲ or ▼ on the current sort's column.
	Arrow string
}

// pageLink is one link of the pager; a zero URL is the current page or a
// gap.
type pageLink struct {
	Label, URL string
	Current    bool
}

// appsBody is the apps page's data.
type appsBody struct {
	Query   appsQuery
	Rows    []*dao.AppInfo
	Columns map[string]column
	// Total counts the applications matching the filters; From and To
	// are the 1-based range this page shows.
	Total, From, To int
	Pages           []pageLink
	Prev, Next      string
	// Path is the page's path, the filter form's action; ClearURL drops
	// the filters, keeping the sort.
	Path, ClearURL string
}

func (u *ui) apps(w http.ResponseWriter, r *http.Request) {
	q := parseAppsQuery(r)
	title := "All Applications"
	rest := "/ws/v1/cluster/apps"
	if raw, ok := mux.Vars(r)["state"]; ok {
		st, known := normalizeState(raw)
		if !known {
			u.notFound(w, r, "No application state "+raw+": YARN's states are "+statesList()+".")
			return
		}
		q.State = st
		title = "Applications in state " + string(st)
		rest += "?states=" + string(st)
	}
	snap := u.src.Snapshot()
	body := u.appsBody(snap, q)
	if restQ := restFilters(q); restQ != "" {
		if strings.Contains(rest, "?") {
			rest += "&" + restQ
		} else {
			rest += "?" + restQ
		}
	}
	u.render(w, r, http.StatusOK, "apps", snap, page{Title: title, Section: "apps", State: string(q.State), REST: rest, Body: body})
}

// restFilters are the page's filters as the REST /apps query names them.
func restFilters(q appsQuery) string {
	v := url.Values{}
	if q.Queue != "" {
		v.Set("queue", q.Queue)
	}
	if q.User != "" {
		v.Set("user", q.User)
	}
	return v.Encode()
}

func statesList() string {
	names := make([]string, len(records.AllAppStates))
	for i, s := range records.AllAppStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// appsBody filters, sorts and pages the applications; only the shown page
// becomes REST objects.
func (u *ui) appsBody(snap *state.Snapshot, q appsQuery) *appsBody {
	f := state.ApplicationFilter{}
	if q.State != "" {
		f.States = []records.AppState{q.State}
	}
	if q.User != "" {
		f.Users = []string{q.User}
	}
	apps := snap.Applications(f)
	if q.Queue != "" {
		// A queue is named by leaf or path, in the filter as in the
		// records: compare full paths, looking each name up once.
		want := u.src.QueuePath(q.Queue)
		paths := map[string]string{}
		kept := apps[:0:0]
		for _, a := range apps {
			p, ok := paths[a.Queue]
			if !ok {
				p = u.src.QueuePath(a.Queue)
				paths[a.Queue] = p
			}
			if p == want {
				kept = append(kept, a)
			}
		}
		apps = kept
	}
	nowMs := u.opts.Now().UnixMilli()
	by := appSorts[q.Sort]
	if q.Sort == "queue" {
		// The table shows queues by path: sort by what it shows.
		pathOf := u.queuePaths()
		by = func(a, b *records.Application, _ int64) int { return strings.Compare(pathOf(a.Queue), pathOf(b.Queue)) }
	}
	slices.SortStableFunc(apps, func(a, b *records.Application) int {
		c := by(a, b, nowMs)
		if c == 0 {
			c = a.ID.Compare(b.ID)
		}
		if q.Order == "desc" {
			return -c
		}
		return c
	})

	body := &appsBody{Query: q, Total: len(apps), Columns: map[string]column{}}
	size := u.opts.PageSize
	last := max(1, (len(apps)+size-1)/size)
	q.Page = min(max(q.Page, 1), last)
	body.Query.Page = q.Page
	start := (q.Page - 1) * size
	end := min(start+size, len(apps))
	if len(apps) > 0 {
		body.From, body.To = start+1, end
	}
	for _, a := range apps[start:end] {
		body.Rows = append(body.Rows, u.src.App(snap, a))
	}

	for name := range appSorts {
		c := q
		c.Page = 1
		c.Sort, c.Order = name, "asc"
		col := column{Label: columnLabels[name]}
		if name == q.Sort {
			if q.Order == "asc" {
				c.Order, col.Arrow = "desc", "▲"
			} else {
				col.Arrow = "▼"
			}
		}
		col.URL = c.url()
		body.Columns[name] = col
	}
	at := func(n int) string { c := q; c.Page = n; return c.url() }
	if q.Page > 1 {
		body.Prev = at(q.Page - 1)
	}
	if q.Page < last {
		body.Next = at(q.Page + 1)
	}
	if last > 1 {
		body.Pages = pager(q.Page, last, at)
	}
	clear := q
	clear.Queue, clear.User, clear.Page = "", "", 1
	body.Path, body.ClearURL = q.path(), clear.url()
	return body
}

// pager lists the first and last pages and a window around the current
// one, with gaps between, as DataTables' full_numbers paging does.
func pager(cur, last int, at func(int) string) []pageLink {
	var out []pageLink
	gap := false
	for n := 1; n <= last; n++ {
		if n != 1 && n != last && (n < cur-2 || n > cur+2) {
			if !gap {
				out = append(out, pageLink{Label: "…"})
				gap = true
			}
			continue
		}
		gap = false
		l := pageLink{Label: strconv.Itoa(n), Current: n == cur}
		if !l.Current {
			l.URL = at(n)
		}
		out = append(out, l)
	}
	return out
}

// queuePaths returns a queue's path by its name, each looked up once.
func (u *ui) queuePaths() func(name string) string {
	paths := map[string]string{}
	return func(name string) string {
		p, ok := paths[name]
		if !ok {
			p = u.src.QueuePath(name)
			paths[name] = p
		}
		return p
	}
}
