package wellknown

import (
	"fmt"
	"slices"
)

// TideState is where a pool's node is in the tide: the value of its
// LabelTideState label. A node walks Online → OnlineToOffline → Offline →
// OfflineToOnline → Online; the TidePool API
// (scheduler/tide/api/v1alpha1.NodeState) speaks of the same states.
type TideState string

const (
	// TideOnline: the node runs online work (a node without the label is
	// Online).
	TideOnline TideState = "Online"
	// TideOnlineToOffline: on its way to batch work, its online pods are
	// drained.
	TideOnlineToOffline TideState = "OnlineToOffline"
	// TideOffline: lent whole to batch work.
	TideOffline TideState = "Offline"
	// TideOfflineToOnline: being taken back; its batch work has until
	// AnnotationTideNoticeDeadline to finish.
	TideOfflineToOnline TideState = "OfflineToOnline"
)

// tideStates is the tide's state machine: for each state, the states a
// node may move to from it and the value of TaintTide it carries there
// ("" for none). The controller moves nodes only along these arrows, and
// the RM and the node agent read a node's state as one of these rows.
var tideStates = []tideRow{
	// Lent when the online level falls below the pool's watermark.
	{TideOnline, []TideState{TideOnlineToOffline}, ""},
	// Drained (and the hooks answered): lent. Brought straight back when
	// the level rises again or the drain outlasts its timeout: no batch
	// work is on it yet.
	{TideOnlineToOffline, []TideState{TideOffline, TideOnline}, TaintTideTransition},
	// Taken back, after notice, when the level rises.
	{TideOffline, []TideState{TideOfflineToOnline}, TaintTideOffline},
	// The notice over and the batch work gone (and the hooks answered).
	{TideOfflineToOnline, []TideState{TideOnline}, TaintTideTransition},
}

// TideStates are the tide's states, in the order a node walks them.
func TideStates() []TideState {
	out := make([]TideState, len(tideStates))
	for i, r := range tideStates {
		out[i] = r.state
	}
	return out
}

type tideRow struct {
	state TideState
	next  []TideState
	taint string
}

func (s TideState) row() int {
	return slices.IndexFunc(tideStates, func(r tideRow) bool { return r.state == s })
}

// Valid reports whether s is one of the tide's states.
func (s TideState) Valid() bool { return s.row() >= 0 }

// CanMoveTo reports whether a node may move from s to t.
func (s TideState) CanMoveTo(t TideState) bool {
	i := s.row()
	return i >= 0 && slices.Contains(tideStates[i].next, t)
}

// Taint is the value of TaintTide on a node in state s, "" for none.
func (s TideState) Taint() string {
	if i := s.row(); i >= 0 {
		return tideStates[i].taint
	}
	return ""
}

// ParseTideState reads a LabelTideState value.
func ParseTideState(v string) (TideState, error) {
	if s := TideState(v); s.Valid() {
		return s, nil
	}
	return "", fmt.Errorf("wellknown: %s: %q is not a tide state (%v)", LabelTideState, v, TideStates())
}

// TideStateOf reads a node's state in the tide from its labels: Online
// without the label, an error with one that holds no state.
func TideStateOf(labels map[string]string) (TideState, error) {
	v, ok := labels[LabelTideState]
	if !ok {
		return TideOnline, nil
	}
	return ParseTideState(v)
}
