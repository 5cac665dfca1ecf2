package webui

import (
	"net/http"
	"slices"
	"strings"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rest/dao"
)

// nodeStates are YARN's NodeStates, as /cluster/nodes?state= takes them
// (YARN's nodes page filters the same way, from the metrics bar's links).
var nodeStates = []records.NodeState{records.NodeNew, records.NodeRunning, records.NodeUnhealthy, records.NodeDecommissioned,
	records.NodeLost, records.NodeRebooted, records.NodeDecommissioning, records.NodeShutdown}

// nodeRow is a node as REST shows it, with what Weft's record adds: the
// capacity pods that are not Weft's hold on it (Occupied: the online
// load a colocated node is shared with), what is left for containers, and
// the cooldown that keeps new containers off it after the online load
// took capacity back.
type nodeRow struct {
	*dao.NodeInfo
	Occupied records.Resource
	// Free is nil for a node that takes no containers (not RUNNING).
	Free *records.Resource
	// CooldownUntil is ms since the epoch, 0 when not cooling down.
	CooldownUntil int64
}

type nodesBody struct {
	State string
	Nodes []nodeRow
}

func (u *ui) nodes(w http.ResponseWriter, r *http.Request) {
	var states []records.NodeState
	body := &nodesBody{}
	rest := "/ws/v1/cluster/nodes"
	if raw := r.URL.Query().Get("state"); raw != "" {
		st := records.NodeState(strings.ToUpper(raw))
		if !slices.Contains(nodeStates, st) {
			u.notFound(w, r, "No node state "+raw+".")
			return
		}
		states, body.State = []records.NodeState{st}, string(st)
		rest += "?states=" + string(st)
	}
	snap := u.src.Snapshot()
	nowMs := u.opts.Now().UnixMilli()
	for _, n := range snap.Nodes(states...) {
		row := nodeRow{NodeInfo: u.src.Node(n), Occupied: n.Occupied}
		if n.State == records.NodeRunning {
			// As the AM protocol's headroom counts it: what neither Weft's
			// containers nor the others' pods hold.
			row.Free = &records.Resource{MemoryMB: max(n.Capability.MemoryMB-n.Used.MemoryMB-n.Occupied.MemoryMB, 0),
				VCores: max(n.Capability.VCores-n.Used.VCores-n.Occupied.VCores, 0)}
		}
		if n.CooldownUntil > nowMs {
			row.CooldownUntil = n.CooldownUntil
		}
		body.Nodes = append(body.Nodes, row)
	}
	title := "Nodes of the cluster"
	if body.State != "" {
		title = body.State + " nodes of the cluster"
	}
	u.render(w, r, http.StatusOK, "nodes", snap, page{Title: title, Section: "nodes", REST: rest, Body: body})
}
