package rest

import (
	"slices"
	"sync"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// encodedApps keeps the JSON of finished applications from one listing
// of /ws/v1/cluster/apps to the next.
//
// A listing of every application the RM retains is mostly finished ones
// (yarn.resourcemanager.max-completed-applications of them against the
// few running), and it is what UIs, schedulers' dashboards and `yarn
// application -list -appStates ALL` poll. A finished application's
// answer no longer changes with time: its record, its containers (all
// complete, so their resource-seconds are fixed) and its queue's path
// decide every field. The store never changes a record in place — a write
// stores a copy — so an entry is valid while the store still holds the
// very records it was encoded from and the queue's path is the same; a
// listing then encodes only the live applications.
type encodedApps struct {
	mu   sync.Mutex
	byID map[records.ApplicationID]*encodedApp
	// swept is the size after the last sweep; the next comes when the
	// cache has grown past twice it, so sweeping costs O(1) per entry.
	swept int
}

// encodedApp is one application's JSON and what it was encoded from.
type encodedApp struct {
	app        *records.Application
	containers []*records.Container
	queue      string
	json       []byte
}

// sweepFloor is the size under which the cache is never swept: a few
// hundred kilobytes at most.
const sweepFloor = 256

// encodable reports whether an application's answer is fixed: finished,
// with an end time, and every container complete.
func encodable(a *records.Application, containers []*records.Container) bool {
	if !a.State.Terminal() || a.FinishTime == 0 {
		return false
	}
	for _, c := range containers {
		if c.State != records.ContainerComplete {
			return false
		}
	}
	return true
}

// get returns the JSON kept for a as it is now, or nil.
func (c *encodedApps) get(a *records.Application, containers []*records.Container, queue string) []byte {
	c.mu.Lock()
	e := c.byID[a.ID]
	c.mu.Unlock()
	if e == nil || e.app != a || e.queue != queue || !slices.Equal(e.containers, containers) {
		return nil
	}
	return e.json
}

// put keeps json as a's answer; the caller checked encodable. The slices
// are kept, not copied: the caller hands over containers it no longer
// changes and a json it made for this.
func (c *encodedApps) put(a *records.Application, containers []*records.Container, queue string, json []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[records.ApplicationID]*encodedApp{}
	}
	c.byID[a.ID] = &encodedApp{app: a, containers: containers, queue: queue, json: json}
}

// sweep drops the entries whose application the store no longer holds as
// it was encoded (removed by retention, or changed), once the cache has
// doubled since the last sweep: entries are otherwise only replaced, and
// an application the RM dropped would be kept for ever.
func (c *encodedApps) sweep(snap *state.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) < max(sweepFloor, 2*c.swept) {
		return
	}
	for id, e := range c.byID {
		if snap.Application(id) != e.app {
			delete(c.byID, id)
		}
	}
	c.swept = len(c.byID)
}

// len is the number of applications kept.
func (c *encodedApps) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}
