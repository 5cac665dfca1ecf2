package browser_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/rest"
	"github.com/weft-sh/weft/rmfacade/rm"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/test/browser"
)

// The UI is served as weft-rm serves it: the REST handler registers
// rmfacade/webui on its gorilla/mux router, over a store filled here.

const ts = int64(1700000000000)

var now = time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)

var (
	app1 = records.ApplicationID{ClusterTimestamp: ts, ID: 1}
	att1 = records.AttemptID{App: app1, ID: 1}
	// tiers are application 1's containers: the AM and two more, 2 GB each.
	tiers = map[string]string{
		records.ContainerID{Attempt: att1, ID: 1}.String(): "high",
		records.ContainerID{Attempt: att1, ID: 2}.String(): "medium",
		records.ContainerID{Attempt: att1, ID: 3}.String(): "low",
	}
)

// The cluster is one running node of 16 GB. root.default is guaranteed
// 25% of it; application 1 holds 6 GB there, 37.5% of the cluster: 25
// within the guarantee and 12.5 borrowed.
const (
	clusterMB    = 16384
	containerMB  = 2048
	defaultShare = 0.25
	usedShare    = 3 * containerMB / float64(clusterMB) // 0.375
)

func serve(t *testing.T) string {
	t.Helper()
	st, err := state.OpenMemory()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tree, err := quota.NewTree([]quota.QueueConfig{
		{Path: "root", Capacity: 100, SubmitACL: "*", AdminACL: "*"},
		{Path: "root.default", Capacity: 25},
		{Path: "root.eng", Capacity: 75, MaxCapacity: 100},
		{Path: "root.eng.etl", Capacity: 50},
		{Path: "root.eng.adhoc", Capacity: 50},
	})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := func() time.Time { return now }
	mgr := rm.New(st, tree, rm.Options{ClusterTimestamp: ts, Now: clock, Logger: quiet})
	if err := mgr.PutNode(&records.Node{ID: "n1:8041", Host: "n1", Port: 8041, Rack: "/rack-a", HTTPAddress: "n1:8042",
		State: records.NodeRunning, Capability: records.Resource{MemoryMB: clusterMB, VCores: 16},
		Used: records.Resource{MemoryMB: 3 * containerMB, VCores: 3}, NumContainers: 3, HealthReport: "Healthy",
		LastHealthUpdate: now.Add(-5 * time.Second).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	err = st.Update(func(w *state.WriteTxn) error {
		if err := w.PutApplication(&records.Application{ID: app1, Name: "etl-nightly", User: "alice", Queue: "default", Type: "SPARK",
			State: records.AppRunning, FinalStatus: records.FinalUndefined, SubmitTime: ms(90 * time.Second), StartTime: ms(83 * time.Second),
			LaunchTime: ms(80 * time.Second), AMResource: records.Resource{MemoryMB: containerMB, VCores: 1}, MaxAttempts: 2,
			CurrentAttempt: 1, Progress: 0.5, Host: "n1", RPCPort: 4040, OriginalTrackingURL: "http://n1:4040/",
			TrackingURL: "http://n1:4040/"}); err != nil {
			return err
		}
		am := records.ContainerID{Attempt: att1, ID: 1}
		if err := w.PutAttempt(&records.Attempt{ID: att1, State: records.AttemptRunning, AMContainer: am.String(), Host: "n1",
			RPCPort: 4040, OriginalTrackingURL: "http://n1:4040/", FinalStatus: records.FinalUndefined, StartTime: ms(83 * time.Second)}); err != nil {
			return err
		}
		for id := int64(1); id <= 3; id++ {
			c := records.ContainerID{Attempt: att1, ID: id}
			if err := w.PutContainer(&records.Container{ID: c, Node: "n1:8041", NodeHTTP: "n1:8042",
				Resource: records.Resource{MemoryMB: containerMB, VCores: 1}, State: records.ContainerRunning,
				StartTime: ms(80 * time.Second), Tier: tierNamed(tiers[c.String()])}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.NewHandler(mgr, rest.Options{Logger: quiet, Now: clock, WebAddr: "rm.example:8088"}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// shotDir is where screenshots go: $WEFT_BROWSER_SHOTS when set (to keep
// them for a person to look at), else the test's temporary directory.
func shotDir(t *testing.T) string {
	if d := os.Getenv("WEFT_BROWSER_SHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// TestOpenMissing: a chromium named but absent is an error naming it,
// not ErrNotFound, on which TestWebUI would skip.
func TestOpenMissing(t *testing.T) {
	const path = "/nonexistent/chromium"
	b, err := browser.Open(context.Background(), browser.Options{ExecPath: path})
	if err == nil {
		b.Close()
		t.Fatalf("Open %s: no error", path)
	}
	if errors.Is(err, browser.ErrNotFound) || !strings.Contains(err.Error(), path) {
		t.Errorf("Open %s: %v", path, err)
	}
}

func TestWebUI(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := browser.Open(ctx, browser.Options{})
	if errors.Is(err, browser.ErrNotFound) {
		t.Skipf("SKIPPED: the web UI was not checked in a browser: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("close the browser: %v", err)
		}
	}()
	base := serve(t)
	shots := shotDir(t)

	visit := func(t *testing.T, path string, want ...int) *browser.Page {
		t.Helper()
		p, err := b.Visit(ctx, base+path, want...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	shoot := func(t *testing.T, p *browser.Page, name string) {
		t.Helper()
		path := filepath.Join(shots, name+".png")
		if err := p.Screenshot(ctx, path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("screenshot %s (%d bytes) is no PNG: %v", path, len(data), err)
		}
		if cfg.Width < browser.DefaultWidth || cfg.Height < 100 {
			t.Errorf("screenshot %s is %dx%d", path, cfg.Width, cfg.Height)
		}
		t.Logf("screenshot %s: %dx%d, %d bytes", path, cfg.Width, cfg.Height, len(data))
	}
	texts := func(t *testing.T, p *browser.Page, sel string) []string {
		t.Helper()
		s, err := p.Texts(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// column is the index of the header whose text starts with label.
	column := func(t *testing.T, headers []string, label string) int {
		t.Helper()
		i := slices.IndexFunc(headers, func(h string) bool { return strings.HasPrefix(strings.TrimSpace(h), label) })
		if i < 0 {
			t.Fatalf("no column %q in %q", label, headers)
		}
		return i
	}

	t.Run("cluster", func(t *testing.T) {
		p := visit(t, "/") // redirects to /cluster
		if !strings.HasSuffix(p.URL, "/cluster") || p.Status != 200 {
			t.Errorf("/ landed on %s, status %d", p.URL, p.Status)
		}
		var width int
		if err := p.Eval(ctx, `window.innerWidth`, &width); err != nil {
			t.Fatal(err)
		}
		if width != browser.DefaultWidth {
			t.Errorf("window is %d px wide, want %d", width, browser.DefaultWidth)
		}
		shoot(t, p, "cluster")
	})

	t.Run("apps", func(t *testing.T) {
		p := visit(t, "/cluster/apps")
		row := `table.apps tr.app[data-id="` + app1.String() + `"]`
		if n, err := p.Count(ctx, row); err != nil || n != 1 {
			t.Fatalf("rows of %s: %d, %v", app1, n, err)
		}
		cells := texts(t, p, row+" > td")
		headers := texts(t, p, "table.apps thead th")
		if len(cells) != len(headers) {
			t.Fatalf("%d cells under %d headers: %q", len(cells), len(headers), cells)
		}
		if got := cells[column(t, headers, "ID")]; got != app1.String() {
			t.Errorf("ID cell %q, want %s", got, app1)
		}
		if got := cells[column(t, headers, "State")]; got != "RUNNING" {
			t.Errorf("State cell %q, want RUNNING", got)
		}
		if got := cells[column(t, headers, "Queue")]; got != "root.default" {
			t.Errorf("Queue cell %q, want root.default", got)
		}
		href, err := p.Attr(ctx, row+" > td:first-child a", "href")
		if err != nil || href != "/cluster/app/"+app1.String() {
			t.Errorf("ID link %q, %v", href, err)
		}
		// The stylesheet is applied: a running state is bold green.
		var style struct{ Color, Weight string }
		if err := p.Eval(ctx, `(() => { const s = getComputedStyle(document.querySelector(`+jsString(row+" span.state")+`));
			return {Color: s.color, Weight: s.fontWeight}; })()`, &style); err != nil {
			t.Fatal(err)
		}
		if style.Color != "rgb(44, 110, 44)" || style.Weight != "600" {
			t.Errorf("RUNNING is drawn %+v, want the stylesheet's rgb(44, 110, 44) at 600", style)
		}
		shoot(t, p, "apps")
	})

	t.Run("app", func(t *testing.T) {
		p := visit(t, "/cluster/app/"+app1.String())
		rows, err := p.Rows(ctx, "table.containers", "tbody tr.container")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r["Container ID"]] = r["Tier"]
		}
		if !maps.Equal(got, tiers) {
			t.Errorf("containers and tiers %v, want %v", got, tiers)
		}
		shoot(t, p, "app")
	})

	t.Run("attempt", func(t *testing.T) {
		p := visit(t, "/cluster/appattempt/"+att1.String())
		if n, err := p.Count(ctx, "table.containers tbody tr.container"); err != nil || n != 3 {
			t.Errorf("attempt lists %d containers, %v; want 3", n, err)
		}
		shoot(t, p, "attempt")
	})

	t.Run("scheduler", func(t *testing.T) {
		p := visit(t, "/cluster/scheduler")
		measure := func(t *testing.T, queue string) map[string]browser.Segment {
			t.Helper()
			bar, err := p.QueueBar(ctx, queue)
			if err != nil {
				t.Fatal(err)
			}
			return bar
		}
		const tol = 0.01 // of the track: about 3 px of a 22em bar
		near := func(t *testing.T, what string, got, want float64) {
			t.Helper()
			if math.Abs(got-want) > tol {
				t.Errorf("%s: %.4f of the track, want %.4f", what, got, want)
			}
		}
		def := measure(t, "root.default")
		for name, s := range def {
			if s.Height <= 0 {
				t.Errorf("root.default %s segment is %.1f px high: the stylesheet did not apply", name, s.Height)
			}
		}
		near(t, "root.default guaranteed width", def["guaranteed"].Width, defaultShare)
		near(t, "root.default used width", def["used"].Width, defaultShare)
		near(t, "root.default borrowed left", def["borrowed"].Left, defaultShare)
		near(t, "root.default borrowed width", def["borrowed"].Width, usedShare-defaultShare)
		// What the queue uses, drawn: used and borrowed end to end.
		near(t, "root.default used+borrowed", def["used"].Width+def["borrowed"].Width, usedShare)
		root := measure(t, "root")
		near(t, "root used width", root["used"].Width, usedShare)
		etl := measure(t, "root.eng.etl")
		near(t, "root.eng.etl used width", etl["used"].Width+etl["borrowed"].Width, 0)
		// The numbers beside the bar say the same.
		cells := texts(t, p, `tr.queue[data-queue="root.default"] > td`)
		headers := texts(t, p, "table.queues > thead th")
		if got := cells[column(t, headers, "Absolute Used")]; got != "37.5%" {
			t.Errorf("root.default Absolute Used %q, want 37.5%%", got)
		}
		shoot(t, p, "scheduler")
	})

	t.Run("nodes", func(t *testing.T) {
		p := visit(t, "/cluster/nodes")
		if got := texts(t, p, `tr.node[data-node="n1:8041"] > td:first-child`); !slices.Equal(got, []string{"n1:8041"}) {
			t.Errorf("node rows %q", got)
		}
		shoot(t, p, "nodes")
	})

	t.Run("not found", func(t *testing.T) {
		unknown := records.ApplicationID{ClusterTimestamp: ts, ID: 99}.String()
		path := "/cluster/app/" + unknown
		// Visit refuses a 404 it was not told to expect, naming the URL
		// and the status.
		if p, err := b.Visit(ctx, base+path); err == nil {
			p.Close()
			t.Errorf("Visit %s: no error for a 404", path)
		} else if !strings.Contains(err.Error(), base+path) || !strings.Contains(err.Error(), "404") {
			t.Errorf("Visit %s: error %q lacks the URL or the status", path, err)
		}
		p := visit(t, path, 404)
		if p.Status != 404 {
			t.Errorf("status %d, want 404", p.Status)
		}
		if got := texts(t, p, "section.notfound"); len(got) != 1 || !strings.Contains(got[0], unknown+" is not known") {
			t.Errorf("not-found text %q", got)
		}
		links := texts(t, p, "section.notfound a")
		if !slices.Contains(links, "Back to the cluster") {
			t.Errorf("links %q lack Back to the cluster", links)
		}
		if href, err := p.Attr(ctx, "section.notfound a", "href"); err != nil || href != "/cluster" {
			t.Errorf("back link %q, %v", href, err)
		}
		shoot(t, p, "notfound")
	})
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tierNamed is the tier a name in tiers spells.
func tierNamed(name string) records.Tier {
	t, _ := records.ParseTier(name)
	return t
}
