package amrm

import (
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// usability is what YARN tells running applications of a node: usable
// (NODE_USABLE), unusable (NODE_UNUSABLE) or decommissioning
// (NODE_DECOMMISSIONING). An AM hears of a node only when it moves
// between these, not of each heartbeat's change in its use.
type usability int

const (
	usable usability = iota
	unusable
	decommissioning
)

// usabilityOf classes a node state as YARN's RM does when it tells the
// applications: NODE_UNUSABLE for a node gone unhealthy or deactivated
// (lost, decommissioned, rebooted, shut down).
func usabilityOf(s records.NodeState) usability {
	switch s {
	case records.NodeUnhealthy, records.NodeLost, records.NodeDecommissioned, records.NodeRebooted, records.NodeShutdown:
		return unusable
	case records.NodeDecommissioning:
		return decommissioning
	default:
		return usable
	}
}

// nodeLog numbers the changes of the nodes' usability, for each AM to hear
// of every change after its registration once, in the updatedNodes of its
// next allocate response: YARN's NodesListManager sends each running
// application such changes (RMAppNodeUpdateEvent) and its
// ApplicationMasterService pulls them into the response. MapReduce's AM
// re-runs the finished maps of a node gone unusable, whose outputs its
// reducers could no longer fetch, instead of waiting for fetch failures.
//
// Not guarded: the service calls it under its nodes lock.
type nodeLog struct {
	// seen is each node's usability as of the last scan; nil before the
	// first, which changes nothing: what the nodes were before is not an
	// update.
	seen map[string]usability
	// changes are the nodes that changed, changes[i] being change number
	// first+i.
	changes []nodeChange
	first   uint64
}

// nodeChange is a node whose usability changed, and when it was seen.
type nodeChange struct {
	node string
	at   time.Time
}

// next is the number the next change will have: an AM that registers
// now hears of changes from it on.
func (l *nodeLog) next() uint64 { return l.first + uint64(len(l.changes)) }

// scan records the nodes' usability and logs each node whose usability
// differs from the last scan's, or that is new since then.
func (l *nodeLog) scan(nodes []*records.Node, at time.Time) {
	if l.seen == nil {
		l.seen = make(map[string]usability, len(nodes))
		for _, n := range nodes {
			l.seen[n.ID] = usabilityOf(n.State)
		}
		return
	}
	// In place: the headroom is summed again on each write to a node, and
	// with 10,000 nodes a new map per pass would be most of its garbage.
	for _, n := range nodes {
		u := usabilityOf(n.State)
		if was, ok := l.seen[n.ID]; !ok || was != u {
			l.seen[n.ID] = u
			l.changes = append(l.changes, nodeChange{node: n.ID, at: at})
		}
	}
	if len(l.seen) > len(nodes) { // nodes removed from the store
		present := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			present[n.ID] = true
		}
		for id := range l.seen {
			if !present[id] {
				delete(l.seen, id)
			}
		}
	}
}

// since returns the nodes that changed from change number from on, each
// once, in the order of their first change.
func (l *nodeLog) since(from uint64) []string {
	if from < l.first {
		from = l.first
	}
	var out []string
	dup := map[string]bool{}
	for _, c := range l.changes[min(from-l.first, uint64(len(l.changes))):] {
		if !dup[c.node] {
			dup[c.node] = true
			out = append(out, c.node)
		}
	}
	return out
}

// trim forgets the changes seen before a time. Kept for an AM expiry
// interval, a change reaches every AM that is still alive: one that has
// not called within the interval is expired, its attempt failed.
func (l *nodeLog) trim(before time.Time) {
	drop := 0
	for drop < len(l.changes) && l.changes[drop].at.Before(before) {
		drop++
	}
	if drop > 0 {
		l.changes = append([]nodeChange(nil), l.changes[drop:]...)
		l.first += uint64(drop)
	}
}
