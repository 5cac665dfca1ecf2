package webui

import (
	"net/http"
	"strconv"

	"github.com/weft-sh/weft/rmfacade/rest/dao"
)

// queueRow is one queue of the scheduler page, flattened from the tree
// in depth-first order (YARN's CapacityScheduler page draws the tree the
// same way, children under their parent, indented).
type queueRow struct {
	Depth            int
	Name, Path, Kind string
	State            string
	// Configured capacities, percent of the parent; Used is percent of
	// the queue's guarantee, as the CapacityScheduler reports them.
	Capacity, MaxCapacity, UsedCapacity float32
	// Absolute capacities, percent of the cluster.
	AbsCapacity, AbsMax, AbsUsed float32
	Used                         dao.ResourceInfo
	PendingMB                    int64
	PendingVCores                int32
	Apps, Running, Pending       int32
	Containers                   int64
	Users                        []dao.UserInfo
	Bar                          bar
}

// bar is a queue's horizontal bar, each segment's offset and width in
// percent of the cluster. Guaranteed is the queue's absolute capacity;
// Used the part of its use within that; Borrowed its use beyond it (what
// the CapacityScheduler lets a queue take from idle siblings up to its
// maximum, and what preemption takes back); Pending what it asks for
// beyond its use; Max its absolute maximum capacity.
type bar struct {
	Guaranteed, Used, Max    string
	BorrowedLeft, Borrowed   string
	PendingLeft, PendingSize string
}

// pct formats a percentage for a style attribute, clamped to [0, 100]
// (a queue can report a use beyond 100 of the cluster for an instant
// while nodes leave).
func pct(v float64) string {
	return strconv.FormatFloat(min(max(v, 0), 100), 'f', 1, 64)
}

func newBar(absCap, absUsed, absMax float32, pendingMB, clusterMB int64) bar {
	c, u := float64(absCap), float64(absUsed)
	b := bar{Guaranteed: pct(c), Used: pct(min(u, c)), Max: pct(float64(absMax)),
		BorrowedLeft: pct(c), Borrowed: pct(max(u-c, 0)), PendingLeft: pct(u), PendingSize: "0.0"}
	if clusterMB > 0 && pendingMB > 0 {
		b.PendingSize = pct(min(float64(pendingMB)/float64(clusterMB)*100, 100-min(u, 100)))
	}
	return b
}

// schedulerBody is the scheduler page's data.
type schedulerBody struct {
	// Queues is empty when the tree has no root queue.
	Queues []queueRow
}

func (u *ui) scheduler(w http.ResponseWriter, r *http.Request) {
	snap := u.src.Snapshot()
	metrics := u.src.ClusterMetrics(snap)
	body := &schedulerBody{}
	if info := u.src.Scheduler(snap); info != nil {
		// root: its use is its children's, as the CapacityScheduler sums it.
		root := queueRow{Name: info.QueueName, Path: info.QueuePath, Kind: "parent", State: "RUNNING",
			Capacity: float32(info.Capacity), MaxCapacity: float32(info.MaxCapacity), AbsCapacity: 100, AbsMax: float32(info.MaxCapacity)}
		var children []queueRow
		if info.Queues != nil {
			for _, q := range info.Queues.Queue {
				children = appendQueue(children, q, 1, metrics.TotalMB)
			}
			for _, q := range info.Queues.Queue {
				root.AbsUsed += float32(q.AbsoluteUsedCapacity)
				root.Used.Memory += q.ResourcesUsed.Memory
				root.Used.VCores += q.ResourcesUsed.VCores
				root.Apps += q.NumApplications
				root.Containers += q.AllocatedContainers
			}
		}
		for _, c := range children {
			if c.Kind == "leaf" {
				root.Running += c.Running
				root.Pending += c.Pending
				root.PendingMB += c.PendingMB
				root.PendingVCores += c.PendingVCores
			}
		}
		root.UsedCapacity = root.AbsUsed
		root.Bar = newBar(root.AbsCapacity, root.AbsUsed, root.AbsMax, root.PendingMB, metrics.TotalMB)
		body.Queues = append([]queueRow{root}, children...)
	}
	u.render(w, r, http.StatusOK, "scheduler", snap, page{Title: "Scheduler", Section: "scheduler",
		REST: "/ws/v1/cluster/scheduler", Body: body})
}

// appendQueue appends q and its subtree, depth-first.
func appendQueue(rows []queueRow, q *dao.CapacitySchedulerQueueInfo, depth int, clusterMB int64) []queueRow {
	row := queueRow{Depth: depth, Name: q.QueueName, Path: q.QueuePath, Kind: q.QueueType, State: q.State,
		Capacity: float32(q.Capacity), MaxCapacity: float32(q.MaxCapacity), UsedCapacity: float32(q.UsedCapacity),
		AbsCapacity: float32(q.AbsoluteCapacity), AbsMax: float32(q.AbsoluteMaxCapacity), AbsUsed: float32(q.AbsoluteUsedCapacity),
		Used: q.ResourcesUsed, Apps: q.NumApplications, Containers: q.AllocatedContainers}
	if parts := q.Resources.ResourceUsagesByPartition; len(parts) > 0 {
		row.PendingMB, row.PendingVCores = parts[0].Pending.Memory, parts[0].Pending.VCores
	}
	if leaf := q.LeafQueueInfo; leaf != nil {
		row.Running, row.Pending = leaf.NumActiveApplications, leaf.NumPendingApplications
		row.Users = leaf.Users.User
	}
	row.Bar = newBar(row.AbsCapacity, row.AbsUsed, row.AbsMax, row.PendingMB, clusterMB)
	rows = append(rows, row)
	if q.Queues != nil {
		for _, c := range q.Queues.Queue {
			rows = appendQueue(rows, c, depth+1, clusterMB)
		}
	}
	return rows
}
