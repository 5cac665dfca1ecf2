package webui

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/translator"
)

// appBody is the application page's data: YARN's RM UI shows the
// application's overview, its attempts and the current attempt's
// containers; this shows every container the store holds, of every
// attempt, as Weft keeps them until the application is removed.
type appBody struct {
	App *dao.AppInfo
	// Record holds what the REST object lacks (submit time, attempts).
	Record     *records.Application
	Attempts   []attemptRow
	Containers []containerRow
}

// attemptRow is an attempt with its AM container, when the store has it.
type attemptRow struct {
	*records.Attempt
	AM *containerRow
	// Elapsed is ms from its start to its finish, or to now while it runs.
	Elapsed int64
}

// containerRow is a container with what the store implies of it: its
// pod, named from the container id as Weft names every container's pod,
// and its logs at its node, where a NodeManager serves them.
type containerRow struct {
	*records.Container
	Pod, LogsURL string
}

func newContainerRow(c *records.Container, user string) containerRow {
	return containerRow{Container: c, Pod: translator.PodName(c.ID.String()), LogsURL: c.LogsURL(user)}
}

func newAttemptRow(snap *state.Snapshot, att *records.Attempt, user string, nowMs int64) attemptRow {
	end := att.FinishTime
	if end == 0 {
		end = nowMs
	}
	row := attemptRow{Attempt: att, Elapsed: end - att.StartTime}
	if id, err := records.ParseContainerID(att.AMContainer); err == nil {
		if c := snap.Container(id); c != nil {
			am := newContainerRow(c, user)
			row.AM = &am
		}
	}
	return row
}

func (u *ui) app(w http.ResponseWriter, r *http.Request) {
	raw := mux.Vars(r)["appid"]
	id, err := records.ParseApplicationID(raw)
	if err != nil {
		u.notFound(w, r, "Invalid application id "+raw+": an application id reads application_<cluster timestamp>_<sequence>.")
		return
	}
	snap := u.src.Snapshot()
	a := snap.Application(id)
	if a == nil {
		u.notFound(w, r, "Application "+raw+" is not known to this ResourceManager: it was never submitted, or it finished and was removed.")
		return
	}
	body := &appBody{App: u.src.App(snap, a), Record: a}
	for _, att := range snap.AttemptsOf(id) {
		body.Attempts = append(body.Attempts, newAttemptRow(snap, att, a.User, u.opts.Now().UnixMilli()))
	}
	for _, c := range snap.ContainersOfApp(id) {
		body.Containers = append(body.Containers, newContainerRow(c, a.User))
	}
	u.render(w, r, http.StatusOK, "app", snap, page{Title: "Application " + id.String(), Section: "apps",
		REST: "/ws/v1/cluster/apps/" + id.String(), Body: body})
}

// attemptBody is the attempt page's data: YARN's RM UI shows the attempt's
// overview (state, AM container and node, tracking URL, diagnostics) and
// its containers.
type attemptBody struct {
	App        *records.Application
	Attempt    attemptRow
	Containers []containerRow
}

func (u *ui) attempt(w http.ResponseWriter, r *http.Request) {
	raw := mux.Vars(r)["attemptid"]
	id, err := records.ParseAttemptID(raw)
	if err != nil {
		u.notFound(w, r, "Invalid application attempt id "+raw+": an attempt id reads appattempt_<cluster timestamp>_<sequence>_<attempt>.")
		return
	}
	snap := u.src.Snapshot()
	a, att := snap.Application(id.App), snap.Attempt(id)
	if a == nil || att == nil {
		u.notFound(w, r, "Application attempt "+raw+" is not known to this ResourceManager.")
		return
	}
	body := &attemptBody{App: a, Attempt: newAttemptRow(snap, att, a.User, u.opts.Now().UnixMilli())}
	for _, c := range snap.ContainersOfAttempt(id) {
		body.Containers = append(body.Containers, newContainerRow(c, a.User))
	}
	// The REST API has no resource of one attempt: its application's
	// attempts are the nearest.
	u.render(w, r, http.StatusOK, "attempt", snap, page{Title: "Application Attempt " + id.String(), Section: "apps",
		REST: "/ws/v1/cluster/apps/" + id.App.String() + "/appattempts", Body: body})
}
