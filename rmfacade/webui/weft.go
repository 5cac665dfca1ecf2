package webui

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// The tiers page (/cluster/weft) is Weft's own: YARN's RM UI has no
// colocation tiers, and its scheduler page shows preemption only as the
// CapacityScheduler's last-preemption line. It shows what the containers
// of each tier hold now, and the preemptions of the last hour: the notices
// victims' AMs were given (YARN's PreemptionMessage) and the kills that
// followed (exit status PREEMPTED, -102), as the store records them.
//
// What the records hold, and so what the page can show:
//   - a container's Tier, Resource, Node and State;
//   - PreemptDeadline, when its AM was given notice: the end of the
//     notice, not its start. When the notice was given is not recorded: it
//     is the deadline less the allocator's grace period (15s by default,
//     longer for a tide's notice), which the UI does not know, so the page
//     shows the deadline alone and stands it in for the notice's time;
//   - FinishTime and ExitStatus once it completed: a kill by preemption is
//     a completion with ExitPreempted, at FinishTime. A container killed
//     PREEMPTED without a notice (its pod evicted by the node, refused by
//     the kubelet's admission) has no deadline.
//
// Containers are kept until their application is removed, so preemptions
// of a removed application are gone from the page too.

// preemptionWindow is how far back the page counts preemptions.
const preemptionWindow = time.Hour

// recentPreemptions is how many preemptions the page lists, newest first.
const recentPreemptions = 50

// shownTiers are the colocation tiers, most important first: the page
// always lists them, with zeros where nothing runs.
var shownTiers = []string{records.TierHigh.String(), records.TierMedium.String(), records.TierLow.String()}

// queueCount is how many containers of one queue a tier holds.
type queueCount struct {
	Queue      string
	Containers int
}

// tierRow is what one tier's containers hold now: containers that are not
// COMPLETE (granted or running, as records.UsageOf counts them live) of
// applications that are not finished.
type tierRow struct {
	// Tier is the container's record's; "" for containers without one.
	Tier       string
	Containers int
	Resource   records.Resource
	// Queues are the queues (full paths) the containers are in, by path.
	Queues []queueCount
}

// preemptionCount is a tier's or a queue's preemptions in the window.
type preemptionCount struct {
	// Name is the tier, or the queue's full path.
	Name string
	// Notified counts containers whose AM was given notice (a deadline is
	// set); Killed those killed by preemption, noticed or not. A container
	// noticed and then killed counts in both.
	Notified, Killed int
	// KilledResource is what the kills took back.
	KilledResource records.Resource
}

// preemptionRow is one preempted container of the window.
type preemptionRow struct {
	*records.Container
	App   records.ApplicationID
	Queue string
	// Killed: it completed PREEMPTED, at FinishTime.
	Killed bool
	// AppState is its application's state, to say why a noticed container
	// outlived its deadline.
	AppState records.AppState
	// At is the time the row is dated by: the kill's, else the notice's
	// deadline.
	At int64
	// Outcome says what became of a container that was not killed.
	Outcome string
}

// weftBody is the tiers page's data.
type weftBody struct {
	// Now and Since bound the window, ms since the epoch.
	Now, Since int64
	Tiers      []tierRow
	// Running totals Tiers.
	Running tierRow
	// ByTier lists every shown tier; ByQueue the queues with a preemption.
	ByTier, ByQueue []preemptionCount
	// Total sums ByTier.
	Total preemptionCount
	// Recent are the window's preemptions, newest first, at most
	// recentPreemptions of them; Count is how many there were.
	Recent []preemptionRow
	Count  int
}

func (u *ui) weft(w http.ResponseWriter, r *http.Request) {
	snap := u.src.Snapshot()
	body := u.weftBody(snap, u.opts.Now())
	// The REST API has no resource of tiers: the applications' reports are
	// the nearest, each with its preempted containers (numAMContainerPreempted,
	// numNonAMContainerPreempted, preemptedResourceMB).
	u.render(w, r, http.StatusOK, "weft", snap, page{Title: "Tiers and preemptions", Section: "weft",
		REST: "/ws/v1/cluster/apps", Body: body})
}

// weftBody reads the containers of the applications that are not finished,
// or finished within the window: a container killed in the window belonged
// to an application alive at its kill, so the others' cannot be in it.
func (u *ui) weftBody(snap *state.Snapshot, now time.Time) *weftBody {
	nowMs := now.UnixMilli()
	since := now.Add(-preemptionWindow).UnixMilli()
	body := &weftBody{Now: nowMs, Since: since}
	pathOf := u.queuePaths()
	type tierUse struct {
		row    tierRow
		queues map[string]int
	}
	tiers := map[string]*tierUse{}
	for _, t := range shownTiers {
		tiers[t] = &tierUse{row: tierRow{Tier: t}, queues: map[string]int{}}
	}
	byTier := map[string]*preemptionCount{}
	for _, t := range shownTiers {
		byTier[t] = &preemptionCount{Name: t}
	}
	byQueue := map[string]*preemptionCount{}
	var recent []preemptionRow

	for _, a := range snap.Applications(state.ApplicationFilter{}) {
		live := !a.State.Terminal()
		if !live && a.FinishTime < since {
			continue
		}
		queue := pathOf(a.Queue)
		for _, c := range snap.ContainersOfApp(a.ID) {
			// The AM container of an attempt that is over is never
			// completed in the store (its pod is deleted with the
			// attempt): it holds nothing.
			stale := c.ID.ID == 1 && c.ID.Attempt.ID != a.CurrentAttempt
			if live && !stale && c.State != records.ContainerComplete {
				t := tiers[c.Tier.String()]
				if t == nil {
					t = &tierUse{row: tierRow{Tier: c.Tier.String()}, queues: map[string]int{}}
					tiers[c.Tier.String()] = t
				}
				t.row.Containers++
				t.row.Resource = t.row.Resource.Add(c.Resource)
				t.queues[queue]++
			}
			killed := c.State == records.ContainerComplete && c.ExitStatus == records.ExitPreempted
			if !killed && c.PreemptDeadline == 0 {
				continue
			}
			at := c.PreemptDeadline
			if killed {
				at = c.FinishTime
			}
			if at < since {
				continue
			}
			row := preemptionRow{Container: c, App: a.ID, Queue: queue, Killed: killed, AppState: a.State, At: at}
			if !killed {
				row.Outcome = outcome(c, a.State, nowMs)
			}
			recent = append(recent, row)
			body.Count++
			for _, pc := range []*preemptionCount{countFor(byTier, c.Tier.String()), countFor(byQueue, queue)} {
				if c.PreemptDeadline != 0 {
					pc.Notified++
				}
				if killed {
					pc.Killed++
					pc.KilledResource = pc.KilledResource.Add(c.Resource)
				}
			}
		}
	}

	for _, name := range tierOrder(tiers) {
		t := tiers[name]
		for q, n := range t.queues {
			t.row.Queues = append(t.row.Queues, queueCount{Queue: q, Containers: n})
		}
		slices.SortFunc(t.row.Queues, func(a, b queueCount) int { return strings.Compare(a.Queue, b.Queue) })
		body.Tiers = append(body.Tiers, t.row)
		body.Running.Containers += t.row.Containers
		body.Running.Resource = body.Running.Resource.Add(t.row.Resource)
	}

	for _, name := range tierOrder(byTier) {
		pc := byTier[name]
		body.ByTier = append(body.ByTier, *pc)
		body.Total.Notified += pc.Notified
		body.Total.Killed += pc.Killed
		body.Total.KilledResource = body.Total.KilledResource.Add(pc.KilledResource)
	}
	for _, pc := range byQueue {
		body.ByQueue = append(body.ByQueue, *pc)
	}
	slices.SortFunc(body.ByQueue, func(a, b preemptionCount) int { return strings.Compare(a.Name, b.Name) })

	// Newest first; at one instant, by container id, so the order is
	// stable from one load to the next.
	slices.SortFunc(recent, func(a, b preemptionRow) int {
		if c := cmp.Compare(b.At, a.At); c != 0 {
			return c
		}
		return strings.Compare(a.ID.String(), b.ID.String())
	})
	body.Recent = recent[:min(len(recent), recentPreemptions)]
	return body
}

// countFor is m's count for name, added on first use.
func countFor(m map[string]*preemptionCount, name string) *preemptionCount {
	pc := m[name]
	if pc == nil {
		pc = &preemptionCount{Name: name}
		m[name] = pc
	}
	return pc
}

// outcome says what became of a noticed container that was not killed by
// preemption.
func outcome(c *records.Container, app records.AppState, nowMs int64) string {
	switch {
	case c.State == records.ContainerComplete:
		// It ended within its notice (done, or released by its AM), as the
		// notice lets a victim do: it was never killed.
		return "ended before the kill (exit status " + strconv.Itoa(int(c.ExitStatus)) + ")"
	case app.Terminal():
		return "not killed: its application ended " + string(app)
	case c.PreemptDeadline > nowMs:
		return "notice pending"
	}
	// The allocator kills victims whose deadline passed in its next cycle.
	return "deadline passed, kill pending"
}

// tierOrder is the shown tiers (high, medium, low) and then any other tier
// a container names, by name.
func tierOrder[V any](m map[string]V) []string {
	var others []string
	for name := range m {
		if !slices.Contains(shownTiers, name) {
			others = append(others, name)
		}
	}
	slices.Sort(others)
	return append(slices.Clone(shownTiers), others...)
}
