package wellknown_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/nmtokens"
	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator/wellknown"
)

// The table is whole: every word once, said what it holds, why it is, and
// who writes or reads it. (test/layering checks the writers and readers
// against the code.)
func TestWords(t *testing.T) {
	words := wellknown.Words()
	if len(words) < 30 {
		t.Fatalf("%d words", len(words))
	}
	names, values := map[string]bool{}, map[string]bool{}
	for _, w := range words {
		if names[w.Name] {
			t.Errorf("%s: registered twice", w.Name)
		}
		names[w.Name] = true
		if kv := string(w.Kind) + " " + w.Value; values[kv] {
			t.Errorf("%s: %s is another word's too", w.Name, kv)
		} else {
			values[kv] = true
		}
		if w.Format == "" || w.Why == "" || w.Kind == "" {
			t.Errorf("%s: format %q, kind %q, why %q: say each", w.Name, w.Format, w.Kind, w.Why)
		}
		if len(w.Writers)+len(w.Readers) == 0 && w.Elsewhere == "" {
			t.Errorf("%s: nobody writes or reads it", w.Name)
		}
		for _, p := range slices.Concat(w.Writers, w.Readers) {
			if !strings.HasPrefix(p, "github.com/weft-sh/weft/") {
				t.Errorf("%s: %q is not one of the module's packages", w.Name, p)
			}
		}
		if w.Kind == wellknown.KindTag && !strings.HasSuffix(w.Value, "=") {
			t.Errorf("%s: tag prefix %q does not end in =", w.Name, w.Value)
		}
		if w.Kind != wellknown.KindTag && !strings.Contains(w.Value, "/") {
			t.Errorf("%s: %q has no prefix", w.Name, w.Value)
		}
	}
}

// protos/yarn/nmtokens, below translator, holds the allocation tags
// itself: they must stay the vocabulary's.
func TestAllocationTagsAreNMTokens(t *testing.T) {
	if nmtokens.TagTier != wellknown.AllocationTagTier || nmtokens.TagQueue != wellknown.AllocationTagQueue {
		t.Errorf("nmtokens tags %q, %q; the vocabulary's %q, %q", nmtokens.TagTier, nmtokens.TagQueue,
			wellknown.AllocationTagTier, wellknown.AllocationTagQueue)
	}
}

func TestTideStateMachine(t *testing.T) {
	on, toOff, off, toOn := wellknown.TideOnline, wellknown.TideOnlineToOffline, wellknown.TideOffline, wellknown.TideOfflineToOnline
	if got := wellknown.TideStates(); !slices.Equal(got, []wellknown.TideState{on, toOff, off, toOn}) {
		t.Errorf("states %v", got)
	}
	moves := map[[2]wellknown.TideState]bool{{on, toOff}: true, {toOff, off}: true, {toOff, on}: true, {off, toOn}: true, {toOn, on}: true}
	all := append(wellknown.TideStates(), "", "Lent")
	for _, from := range all {
		for _, to := range all {
			if got := from.CanMoveTo(to); got != moves[[2]wellknown.TideState{from, to}] {
				t.Errorf("%q → %q allowed: %v", from, to, got)
			}
		}
	}
	for s, taint := range map[wellknown.TideState]string{on: "", toOff: wellknown.TaintTideTransition, off: wellknown.TaintTideOffline,
		toOn: wellknown.TaintTideTransition, "Lent": ""} {
		if got := s.Taint(); got != taint {
			t.Errorf("%q taint %q, want %q", s, got, taint)
		}
	}
	for _, s := range wellknown.TideStates() {
		if got, err := wellknown.ParseTideState(string(s)); got != s || err != nil {
			t.Errorf("ParseTideState(%q) = %q, %v", s, got, err)
		}
	}
	for _, bad := range []string{"", "online", "Lent"} {
		if _, err := wellknown.ParseTideState(bad); err == nil {
			t.Errorf("ParseTideState(%q) took it", bad)
		}
	}
	if s, err := wellknown.TideStateOf(nil); s != on || err != nil {
		t.Errorf("no label: %q, %v; want Online", s, err)
	}
	if s, err := wellknown.TideStateOf(map[string]string{wellknown.LabelTideState: "Offline"}); s != off || err != nil {
		t.Errorf("Offline: %q, %v", s, err)
	}
	if _, err := wellknown.TideStateOf(map[string]string{wellknown.LabelTideState: ""}); err == nil {
		t.Error("an empty label is a state")
	}
}

func TestValues(t *testing.T) {
	at := time.Date(2026, 11, 24, 3, 0, 0, 0, time.FixedZone("CET", 3600))
	if v := wellknown.FormatTime(at); v != "2026-11-24T02:00:00Z" {
		t.Errorf("FormatTime %q", v)
	}
	if got, err := wellknown.ParseTime(wellknown.FormatTime(at)); err != nil || !got.Equal(at) {
		t.Errorf("ParseTime: %v, %v", got, err)
	}
	if _, err := wellknown.ParseTime("yesterday"); err == nil {
		t.Error("ParseTime took yesterday")
	}
	if n, err := wellknown.ParseCount(wellknown.FormatCount(3)); n != 3 || err != nil {
		t.Errorf("count: %d, %v", n, err)
	}
	for _, bad := range []string{"", "-1", "1.5", "x"} {
		if _, err := wellknown.ParseCount(bad); err == nil {
			t.Errorf("ParseCount(%q) took it", bad)
		}
	}

	r := wellknown.HookRetry{At: at.UTC(), Failures: 3}
	if r.String() != "2026-11-24T02:00:00Z,3" {
		t.Errorf("HookRetry %q", r)
	}
	if got, err := wellknown.ParseHookRetry(r.String()); got != r || err != nil {
		t.Errorf("ParseHookRetry: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "2026-11-24T02:00:00Z", "2026-11-24T02:00:00Z,-1", "soon,1"} {
		if _, err := wellknown.ParseHookRetry(bad); err == nil {
			t.Errorf("ParseHookRetry(%q) took it", bad)
		}
	}

	h := wellknown.HooksDone{State: wellknown.TideOffline, Hooks: []string{"cmdb", "drain-dns", "cmdb"}}
	if h.String() != "Offline:cmdb,drain-dns" {
		t.Errorf("HooksDone %q", h)
	}
	if got, err := wellknown.ParseHooksDone("Offline:drain-dns,cmdb"); err != nil || got.State != wellknown.TideOffline ||
		!slices.Equal(got.Hooks, []string{"drain-dns", "cmdb"}) {
		t.Errorf("ParseHooksDone: %+v, %v", got, err)
	}
	if got, err := wellknown.ParseHooksDone("Online:"); err != nil || got.State != wellknown.TideOnline || len(got.Hooks) != 0 {
		t.Errorf("no hooks: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "cmdb", "Lent:cmdb"} {
		if _, err := wellknown.ParseHooksDone(bad); err == nil {
			t.Errorf("ParseHooksDone(%q) took it", bad)
		}
	}

	if tier, err := wellknown.TierOf(map[string]string{wellknown.LabelTier: "medium"}); tier != records.TierMedium || err != nil {
		t.Errorf("TierOf: %v, %v", tier, err)
	}
	if _, err := wellknown.TierOf(map[string]string{wellknown.LabelTier: "urgent"}); err == nil {
		t.Error("TierOf took urgent")
	}
}
