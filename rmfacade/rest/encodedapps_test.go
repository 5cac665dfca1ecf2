package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// TestFinishedAppsKeptEncodedBetweenListings lists applications twice and
// more: finished ones are encoded once and then served from encodedApps,
// yet every answer is what encoding the store afresh would give — a
// finished application changed in the store, a running one whose elapsed
// time moves with the clock, an XML answer — and applications the RM no
// longer retains leave the cache once it has doubled.
func TestFinishedAppsKeptEncodedBetweenListings(t *testing.T) {
	mgr, st, quiet := newListingManager(t)
	ctx := context.Background()
	submit := func(kill bool) records.ApplicationID {
		t.Helper()
		id := mgr.NewApplicationID()
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: "default", Name: "job",
			AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
			t.Fatal(err)
		}
		if kill {
			if _, err := mgr.Kill(ctx, id, "alice", ""); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	var killed []records.ApplicationID
	for range sweepFloor + 10 {
		killed = append(killed, submit(true))
	}
	running := submit(false)
	accepted := submit(false) // no container: only its state keeps it out
	am := records.ContainerID{Attempt: records.AttemptID{App: running, ID: 1}, ID: 1}
	if err := mgr.AMContainerPlaced(ctx, am, "n1:8041", "n1:8042", records.Resource{MemoryMB: 1024, VCores: 1}); err != nil {
		t.Fatal(err)
	}

	now := time.Now()
	opts := Options{Logger: quiet, Now: func() time.Time { return now }, WebAddr: "rm:8088", StateStore: "test"}
	cached := &handler{mgr: mgr, opts: opts}
	list := func(h *handler, accept string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/ws/v1/cluster/apps", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		h.apps(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("listing: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	// fresh is what the store encodes to with nothing kept.
	fresh := func(accept string) string { return list(&handler{mgr: mgr, opts: opts}, accept) }
	same := func(step string) {
		t.Helper()
		if got, want := list(cached, ""), fresh(""); got != want {
			t.Fatalf("%s: the listing differs from a fresh encoding:\n%.600s\nwant\n%.600s", step, got, want)
		}
	}

	first := list(cached, "")
	if got, want := cached.encoded.len(), len(killed); got != want {
		t.Fatalf("kept %d applications' JSON, want the %d finished ones", got, want)
	}
	if again := list(cached, ""); again != first {
		t.Fatal("a second listing at the same instant differs from the first")
	}
	same("first listings")

	// The clock moves: the unfinished applications' elapsed time with it.
	now = now.Add(time.Minute)
	same("a minute later")
	var elapsed struct {
		Apps struct {
			App []struct {
				ID          string `json:"id"`
				ElapsedTime int64  `json:"elapsedTime"`
				Diagnostics string `json:"diagnostics"`
			} `json:"app"`
		} `json:"apps"`
	}
	if err := json.Unmarshal([]byte(list(cached, "")), &elapsed); err != nil {
		t.Fatal(err)
	}
	for _, a := range elapsed.Apps.App {
		if (a.ID == running.String() || a.ID == accepted.String()) && a.ElapsedTime < time.Minute.Milliseconds() {
			t.Fatalf("%s: elapsed time %d ms a minute on: kept from an earlier listing", a.ID, a.ElapsedTime)
		}
	}

	// A finished application written again (a new record) is encoded anew.
	if err := st.Update(func(w *state.WriteTxn) error {
		next := *w.Application(killed[3])
		next.Diagnostics = "rewritten after it finished"
		return w.PutApplication(&next)
	}); err != nil {
		t.Fatal(err)
	}
	same("a finished application rewritten")
	if !strings.Contains(list(cached, ""), "rewritten after it finished") {
		t.Fatal("the rewritten diagnostics are not listed")
	}
	if got, want := list(cached, "application/xml"), fresh("application/xml"); got != want || !strings.Contains(got, "rewritten after it finished") {
		t.Fatalf("XML listing differs from a fresh one or misses the rewrite:\n%.400s", got)
	}

	// Applications the RM no longer retains are not listed, and leave the
	// cache when it has doubled since its last sweep (at the first listing).
	const removed = 200
	if err := st.Update(func(w *state.WriteTxn) error {
		for _, id := range killed[:removed] {
			if err := w.DeleteApplication(id); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	same("finished applications removed")
	if strings.Contains(list(cached, ""), `"`+killed[0].String()+`"`) {
		t.Fatalf("%s listed after its removal", killed[0])
	}
	const more = 300
	for range more {
		submit(true)
	}
	same("more applications finished")
	if got, want := cached.encoded.len(), len(killed)-removed+more; got != want {
		t.Fatalf("kept %d applications' JSON after the cache doubled, want %d (the removed ones swept)", got, want)
	}
}
