package rest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
)

// TestAppsListingMatchesEachApp lists more applications than manyApps, so
// that the listing reads the container table in one pass, and holds every
// element to what /apps/{appid} (a lookup per application) answers for it:
// usage, AM node and log link, tracking URL, the full queue path.
func TestAppsListingMatchesEachApp(t *testing.T) {
	mgr, _, quiet := newListingManager(t, quota.QueueConfig{Path: "root.batch", Capacity: 0})
	ctx := context.Background()
	const apps = manyApps + 50
	for i := range apps {
		id := mgr.NewApplicationID()
		queue := []string{"default", "batch"}[i%2]
		if err := mgr.Submit(ctx, rm.Submission{ID: id, User: "alice", Queue: queue, Name: "job",
			AMResource: records.Resource{MemoryMB: 1024, VCores: 1}}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			continue // ACCEPTED, no containers
		}
		am := records.ContainerID{Attempt: records.AttemptID{App: id, ID: 1}, ID: 1}
		if err := mgr.AMContainerPlaced(ctx, am, "n1:8041", "n1:8042", records.Resource{MemoryMB: 1024 * int64(1+i%4), VCores: 1}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Hour)
	h := NewHandler(mgr, Options{Logger: quiet, Now: func() time.Time { return now }, WebAddr: "rm:8088"})
	get := func(path string) []byte {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	var list struct {
		Apps struct {
			App []json.RawMessage `json:"app"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(get("/ws/v1/cluster/apps"), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Apps.App) != apps {
		t.Fatalf("listed %d applications, want %d", len(list.Apps.App), apps)
	}
	withAM := 0
	for _, listed := range list.Apps.App {
		var head struct {
			ID              string `json:"id"`
			AMContainerLogs string `json:"amContainerLogs"`
		}
		if err := json.Unmarshal(listed, &head); err != nil {
			t.Fatal(err)
		}
		if head.AMContainerLogs != "" {
			withAM++
		}
		var one struct {
			App json.RawMessage `json:"app"`
		}
		if err := json.Unmarshal(get("/ws/v1/cluster/apps/"+head.ID), &one); err != nil {
			t.Fatal(err)
		}
		if string(one.App) != string(listed) {
			t.Fatalf("%s listed as\n%s\nbut answers\n%s", head.ID, listed, one.App)
		}
	}
	if want := apps - (apps+2)/3; withAM != want {
		t.Errorf("%d listed applications with an AM container log link, want %d", withAM, want)
	}
}

// newListingManager is an RM over a store in memory with the default
// queues and extra, and one large running node n1:8041, for tests that
// list many applications; it returns the store and a silent logger too.
func newListingManager(t *testing.T, extra ...quota.QueueConfig) (*rm.Manager, *state.Store, *slog.Logger) {
	t.Helper()
	st, err := state.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree(append(slices.Clone(quota.DefaultQueues), extra...))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	mgr := rm.New(st, tree, rm.Options{Logger: quiet})
	if err := mgr.PutNode(&records.Node{ID: "n1:8041", Host: "n1", Port: 8041, HTTPAddress: "n1:8042", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 1 << 30, VCores: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	return mgr, st, quiet
}
