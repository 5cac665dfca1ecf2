package rest

import (
	"github.com/gorilla/mux"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/webui"
)

// registerUI adds the web UI (package webui) at YARN's paths, so links
// from the CLI and from trackingUrls land somewhere useful. It draws from
// this handler's own REST builders, so a page and its /ws/v1 resource
// agree.
func (h *handler) registerUI(r *mux.Router) {
	webui.Register(r, uiSource{h}, webui.Options{Now: h.opts.Now, Logger: h.opts.Logger})
}

// uiSource is webui.Source over the handler.
type uiSource struct{ h *handler }

func (s uiSource) Snapshot() *state.Snapshot { return s.h.mgr.Snapshot() }

func (s uiSource) ClusterMetrics(snap *state.Snapshot) *dao.ClusterMetricsInfo {
	return s.h.clusterMetrics(snap)
}

func (s uiSource) App(snap *state.Snapshot, a *records.Application) *dao.AppInfo {
	return s.h.appInfoIn(snap, a)
}

func (s uiSource) Node(n *records.Node) *dao.NodeInfo { return s.h.nodeInfo(n) }

func (s uiSource) Scheduler(snap *state.Snapshot) *dao.CapacitySchedulerInfo {
	return s.h.schedulerInfo(snap)
}

func (s uiSource) QueuePath(name string) string { return s.h.mgr.QueuePath(name) }
