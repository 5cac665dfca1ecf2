package rest

import (
	"net/http"
	"strings"

	"github.com/weft-sh/weft/rmfacade/rest/dao"
)

// isActivePath answers whether this RM is the active one, as YARN's
// IsActiveServlet does for load balancers: 200 "I am Active!" on the
// active, 405 "I am not Active!" on a standby. weft-rm's readiness probe
// asks it, so a Service routes to the active alone.
const isActivePath = "/isActive"

// StandbyOptions configures the handler of an RM waiting to lead.
type StandbyOptions struct {
	// StartedOn is when this RM started, in ms.
	StartedOn int64
	// StateStore names the state store (cluster info's rmStateStoreName).
	StateStore string
	// Active returns the id of the active RM, empty when none is known.
	Active func() string
}

// NewStandbyHandler serves the web port of a standby RM as YARN's does:
// cluster info (haState STANDBY) and /isActive answer; every other
// resource is refused with 503 naming the active RM (a standby has no
// state to show), so that a client moves on to it.
func NewStandbyHandler(opts StandbyOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := strings.TrimSuffix(r.URL.Path, "/"); path {
		case isActivePath:
			http.Error(w, "I am not Active!", http.StatusMethodNotAllowed)
		case "/ws/v1/cluster", "/ws/v1/cluster/info":
			dao.Write(w, r, http.StatusOK, clusterInfo(opts.StartedOn, "STANDBY", opts.StateStore, true))
		default:
			msg := "This is standby RM; no active RM is known yet."
			if active := opts.Active(); active != "" {
				msg = "This is standby RM. The active RM is " + active + "."
			}
			dao.Error(w, r, http.StatusServiceUnavailable, "StandbyException", "org.apache.hadoop.ipc.StandbyException", msg)
		}
	})
}
