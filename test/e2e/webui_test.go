package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/weft-sh/weft/test/browser"
)

// uiArtifacts is where the web UI spec leaves its screenshots: beside the
// e2e report make e2e-test writes (.weft/), kept after the run.
func uiArtifacts() string {
	GinkgoHelper()
	root, err := repoRoot()
	Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(root, ".weft", "e2e-artifacts", "ui")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	return dir
}

// checkUIInBrowser opens every page of weft-rm's web UI at web in headless
// Chromium (Debian's package) while app runs with its AM and workers, and
// asserts on the DOM as the browser rendered it: the application's row,
// its containers with their tiers, the default queue's bar drawing the
// share REST reports, the nodes, Weft's tiers page and the 404 page's way
// back. Each page's screenshot goes to uiArtifacts.
func checkUIInBrowser(ctx context.Context, web, app string) {
	GinkgoHelper()
	b, err := browser.Open(ctx, browser.Options{})
	Expect(err).NotTo(HaveOccurred(), "the e2e suite needs chromium (make deps installs Debian's package)")
	defer func() { Expect(b.Close()).To(Succeed()) }()
	shots := uiArtifacts()
	base := "http://" + web
	visit := func(path, shot string, want ...int) *browser.Page {
		GinkgoHelper()
		p, err := b.Visit(ctx, base+path, want...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(p.Close)
		Expect(p.Screenshot(ctx, filepath.Join(shots, shot+".png"))).To(Succeed())
		return p
	}

	p := visit("/cluster/apps/RUNNING", "apps")
	rows, err := p.Rows(ctx, "table.apps", `tr.app[data-id="`+app+`"]`)
	Expect(err).NotTo(HaveOccurred())
	Expect(rows).To(HaveLen(1), "the application's row")
	Expect(rows[0]).To(HaveKeyWithValue("ID", app))
	Expect(rows[0]).To(HaveKeyWithValue("State", "RUNNING"))
	Expect(rows[0]).To(HaveKeyWithValue("Queue", "root.default"))

	p = visit("/cluster/app/"+app, "app")
	containers, err := p.Rows(ctx, "table.containers", "tbody tr.container")
	Expect(err).NotTo(HaveOccurred())
	Expect(len(containers)).To(BeNumerically(">=", 3), "the AM and its workers")
	for _, c := range containers {
		if strings.HasSuffix(c["Container ID"], "_000001") {
			Expect(c).To(HaveKeyWithValue("Tier", "high"), "the AM")
		} else {
			Expect(c["Tier"]).To(BeElementOf("medium", "low"), "a worker: %v", c)
		}
		Expect(c["Pod"]).NotTo(BeEmpty(), "its pod: %v", c)
	}
	attempt := strings.Replace(app, "application_", "appattempt_", 1) + "_000001"
	p = visit("/cluster/appattempt/"+attempt, "attempt")
	n, err := p.Count(ctx, "table.containers tbody tr.container")
	Expect(err).NotTo(HaveOccurred())
	Expect(n).To(Equal(len(containers)))

	// The queue's bar draws what REST says the queue uses of the cluster.
	p = visit("/cluster/scheduler", "scheduler")
	bar, err := p.QueueBar(ctx, "root.default")
	Expect(err).NotTo(HaveOccurred())
	used := restAbsoluteUsed(web, "root.default")
	Expect(used).To(BeNumerically(">", 0))
	Expect(bar["used"].Height).To(BeNumerically(">", 0), "the stylesheet applied")
	Expect(bar["used"].Width+bar["borrowed"].Width).To(BeNumerically("~", used/100, 0.02),
		"root.default's bar (used %.3f + borrowed %.3f of the track) against REST's absoluteUsedCapacity %.1f%%", bar["used"].Width, bar["borrowed"].Width, used)

	p = visit("/cluster/nodes", "nodes")
	nodes, err := p.Rows(ctx, "table.nodes", "tbody tr.node")
	Expect(err).NotTo(HaveOccurred())
	Expect(nodes).NotTo(BeEmpty())

	// Weft's own page: the running containers by tier, the AM's among the
	// high tier's.
	p = visit("/cluster/weft", "tiers")
	tiers, err := p.Rows(ctx, "table.tiers", "tbody tr.tier")
	Expect(err).NotTo(HaveOccurred())
	byTier := map[string]string{}
	for _, t := range tiers {
		byTier[t["Tier"]] = t["Containers"]
	}
	Expect(byTier).To(HaveKey("high"))
	Expect(strconv.Atoi(byTier["high"])).To(BeNumerically(">=", 1), "%v", byTier)

	p = visit("/cluster/app/"+strings.TrimSuffix(app, app[len(app)-4:])+"9999", "notfound", http.StatusNotFound)
	href, err := p.Attr(ctx, `section.notfound a[href="/cluster"]`, "href")
	Expect(err).NotTo(HaveOccurred(), "the 404 page links back")
	Expect(href).To(Equal("/cluster"))
	AddReportEntry("web UI screenshots", fmt.Sprintf("%s (%d containers of %s shown with their tiers; root.default's bar %.1f%% against REST's %.1f%%)",
		shots, len(containers), app, 100*(bar["used"].Width+bar["borrowed"].Width), used))
}

// restAbsoluteUsed is the absoluteUsedCapacity REST reports for the queue
// at path (/ws/v1/cluster/scheduler).
func restAbsoluteUsed(web, path string) float64 {
	GinkgoHelper()
	resp, err := http.Get("http://" + web + "/ws/v1/cluster/scheduler")
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var doc any
	Expect(json.NewDecoder(resp.Body).Decode(&doc)).To(Succeed())
	var find func(v any) (float64, bool)
	find = func(v any) (float64, bool) {
		switch v := v.(type) {
		case map[string]any:
			if v["queuePath"] == path {
				f, ok := v["absoluteUsedCapacity"].(float64)
				return f, ok
			}
			for _, c := range v {
				if f, ok := find(c); ok {
					return f, true
				}
			}
		case []any:
			for _, c := range v {
				if f, ok := find(c); ok {
					return f, true
				}
			}
		}
		return 0, false
	}
	used, ok := find(doc)
	Expect(ok).To(BeTrue(), "queue %s in /ws/v1/cluster/scheduler", path)
	return used
}
