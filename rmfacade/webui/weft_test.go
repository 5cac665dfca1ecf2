package webui_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// populateTiers stores containers of every tier and preemptions inside
// and outside the last hour:
//
//   - application 1 runs in root.eng.etl: its AM (high), a medium worker,
//     a worker without a tier, and low workers: one with its notice
//     pending, one killed 10 minutes ago after its notice, one killed
//     without notice (evicted) 5 minutes ago, one that ended by itself
//     before its deadline 20 minutes ago, one killed 2 hours ago;
//   - application 2 runs its second attempt in root.eng.adhoc: the first
//     attempt's AM container is still RUNNING in the store (never
//     completed), a medium worker is past its deadline, not yet killed;
//   - application 3 finished 3 hours ago in root.default, with a
//     container killed before it;
//   - application 4 was killed 30 minutes ago in root.default, with a
//     noticed container its end left RUNNING in the store.
func populateTiers(w *state.WriteTxn) error {
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	res := func(mb int64, vc int32) records.Resource { return records.Resource{MemoryMB: mb, VCores: vc} }
	apps := []*records.Application{
		{ID: appID(1), Name: "etl", User: "alice", Queue: "etl", Type: "SPARK", State: records.AppRunning, StartTime: ms(-3 * time.Hour), CurrentAttempt: 1},
		{ID: appID(2), Name: "adhoc", User: "bob", Queue: "adhoc", Type: "SPARK", State: records.AppRunning, StartTime: ms(-2 * time.Hour), CurrentAttempt: 2},
		{ID: appID(3), Name: "report", User: "carol", Queue: "default", Type: "MAPREDUCE", State: records.AppFinished, StartTime: ms(-4 * time.Hour),
			FinishTime: ms(-3 * time.Hour), CurrentAttempt: 1},
		{ID: appID(4), Name: "killed", User: "dave", Queue: "default", Type: "SPARK", State: records.AppKilled, StartTime: ms(-time.Hour),
			FinishTime: ms(-30 * time.Minute), CurrentAttempt: 1},
	}
	for _, a := range apps {
		if err := w.PutApplication(a); err != nil {
			return err
		}
	}
	running, complete := records.ContainerRunning, records.ContainerComplete
	for _, c := range []*records.Container{
		{ID: containerID(1, 1, 1), Node: "n1:8041", NodeHTTP: "n1:8042", Resource: res(2048, 1), State: running, Tier: records.TierHigh},
		{ID: containerID(1, 1, 2), Node: "n1:8041", Resource: res(1024, 1), State: running, Tier: records.TierMedium},
		{ID: containerID(1, 1, 3), Node: "n1:8041", NodeHTTP: "n1:8042", Resource: res(1024, 2), State: running, Tier: records.TierLow, PreemptDeadline: ms(time.Minute)},
		{ID: containerID(1, 1, 4), Node: "n1:8041", Resource: res(1024, 2), State: complete, Tier: records.TierLow, ExitStatus: records.ExitPreempted,
			PreemptDeadline: ms(-10 * time.Minute), FinishTime: ms(-10*time.Minute + time.Second)},
		{ID: containerID(1, 1, 5), Node: "n2:8041", Resource: res(512, 1), State: complete, Tier: records.TierLow, ExitStatus: records.ExitPreempted,
			FinishTime: ms(-5 * time.Minute)},
		{ID: containerID(1, 1, 6), Node: "n1:8041", Resource: res(1024, 1), State: complete, Tier: records.TierLow, ExitStatus: records.ExitSuccess,
			PreemptDeadline: ms(-20 * time.Minute), FinishTime: ms(-20*time.Minute - 5*time.Second)},
		{ID: containerID(1, 1, 7), Node: "n1:8041", Resource: res(1024, 1), State: complete, Tier: records.TierLow, ExitStatus: records.ExitPreempted,
			PreemptDeadline: ms(-2*time.Hour - 15*time.Second), FinishTime: ms(-2 * time.Hour)},
		{ID: containerID(1, 1, 8), Node: "n1:8041", Resource: res(256, 1), State: running},

		{ID: containerID(2, 1, 1), Node: "n2:8041", Resource: res(4096, 1), State: running, Tier: records.TierHigh},
		{ID: containerID(2, 2, 1), Node: "n1:8041", Resource: res(1024, 1), State: running, Tier: records.TierHigh},
		{ID: containerID(2, 2, 2), Node: "n1:8041", Resource: res(2048, 1), State: running, Tier: records.TierMedium, PreemptDeadline: ms(-time.Minute)},

		{ID: containerID(3, 1, 2), Node: "n1:8041", Resource: res(1024, 1), State: complete, Tier: records.TierLow, ExitStatus: records.ExitPreempted,
			PreemptDeadline: ms(-150 * time.Minute), FinishTime: ms(-150 * time.Minute)},
		{ID: containerID(3, 1, 3), Node: "n1:8041", Resource: res(1024, 1), State: running, Tier: records.TierLow},

		{ID: containerID(4, 1, 2), Node: "n1:8041", Resource: res(3072, 1), State: running, Tier: records.TierMedium, PreemptDeadline: ms(-31 * time.Minute)},
	} {
		if err := w.PutContainer(c); err != nil {
			return err
		}
	}
	return nil
}

// section is the part of body from the element marked with class to the
// end of its table.
func section(t *testing.T, body, class string) string {
	t.Helper()
	i := strings.Index(body, `class="list `+class+`"`)
	if i < 0 {
		t.Fatalf("no table %s", class)
	}
	return body[i : i+strings.Index(body[i:], "</table>")]
}

// cells are a row's cells, tags stripped, from the row marked with attr.
func cells(t *testing.T, table, attr string) []string {
	t.Helper()
	i := strings.Index(table, attr)
	if i < 0 {
		t.Fatalf("no row %s in %s", attr, table)
	}
	row := table[i : i+strings.Index(table[i:], "</tr>")]
	var out []string
	for _, m := range regexp.MustCompile(`<t[dh][^>]*>(.*?)</t[dh]>`).FindAllStringSubmatch(row, -1) {
		out = append(out, regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], ""))
	}
	return out
}

func TestTiersPage(t *testing.T) {
	c := newCluster(t, testQueues(t), populateTiers, n1)
	status, body := get(t, c.handler, "/cluster/weft")
	if status != 200 {
		t.Fatalf("status %d:\n%s", status, body)
	}
	check(t, c.handler, []want{
		{name: "layout", path: "/cluster/weft", status: 200,
			has: []string{"<title>Tiers and preemptions", `href="/ws/v1/cluster/apps"`, `<a href="/cluster/weft" class="on">Tiers &amp; Preemptions</a>`,
				"Since 2026-11-25 07:00:00 UTC."}},
		{name: "linked from every page", path: "/cluster", status: 200, has: []string{`<a href="/cluster/weft">Tiers &amp; Preemptions</a>`}},
	})

	t.Run("tiers now", func(t *testing.T) {
		tiers := section(t, body, "tiers")
		// Only live applications' containers that are not complete; the
		// first attempt's AM of application 2 holds nothing.
		tests := []struct {
			row  string
			want []string
		}{
			{`data-tier="high"`, []string{"high", "2", "3 GB", "2", "root.eng.adhoc (1), root.eng.etl (1)"}},
			{`data-tier="medium"`, []string{"medium", "2", "3 GB", "2", "root.eng.adhoc (1), root.eng.etl (1)"}},
			{`data-tier="low"`, []string{"low", "1", "1 GB", "2", "root.eng.etl (1)"}},
			{`data-tier=""`, []string{"(none)", "1", "256 MB", "1", "root.eng.etl (1)"}},
			{`class="total"`, []string{"Total", "6", "7.2 GB", "7", ""}},
		}
		for _, tt := range tests {
			if got := cells(t, tiers, tt.row); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s: %q, want %q", tt.row, got, tt.want)
			}
		}
	})

	t.Run("by tier", func(t *testing.T) {
		table := section(t, body, "preemptions-by-tier")
		tests := []struct {
			row  string
			want []string
		}{
			{`data-tier="high"`, []string{"high", "0", "0", "0 MB", "0"}},
			// Application 2's past deadline and application 4's.
			{`data-tier="medium"`, []string{"medium", "2", "0", "0 MB", "0"}},
			// Notified: pending, killed, ended by itself; killed: after
			// notice and without one. Not the kill of 2 hours ago.
			{`data-tier="low"`, []string{"low", "3", "2", "1.5 GB", "3"}},
			{`class="total"`, []string{"Total", "5", "2", "1.5 GB", "3"}},
		}
		for _, tt := range tests {
			if got := cells(t, table, tt.row); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s: %q, want %q", tt.row, got, tt.want)
			}
		}
		if strings.Contains(table, `data-tier=""`) {
			t.Errorf("a tier without preemptions beyond the three: %s", table)
		}
	})

	t.Run("by queue", func(t *testing.T) {
		table := section(t, body, "preemptions-by-queue")
		tests := []struct {
			row  string
			want []string
		}{
			{`data-queue="root.default"`, []string{"root.default", "1", "0", "0 MB", "0"}},
			{`data-queue="root.eng.adhoc"`, []string{"root.eng.adhoc", "1", "0", "0 MB", "0"}},
			{`data-queue="root.eng.etl"`, []string{"root.eng.etl", "3", "2", "1.5 GB", "3"}},
		}
		for _, tt := range tests {
			if got := cells(t, table, tt.row); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s: %q, want %q", tt.row, got, tt.want)
			}
		}
	})

	t.Run("recent", func(t *testing.T) {
		table := section(t, body, "preemptions")
		app1 := appID(1).String()
		row := func(id records.ContainerID) string { return `data-container="` + id.String() + `"` }
		tests := []struct {
			id   records.ContainerID
			want []string
		}{
			{containerID(1, 1, 3), []string{containerID(1, 1, 3).String(), app1, "root.eng.etl", "low", "1 GB", "2",
				"2026-11-25 08:01:00 UTC", "notice pending", "n1:8041"}},
			{containerID(2, 2, 2), []string{containerID(2, 2, 2).String(), appID(2).String(), "root.eng.adhoc", "medium", "2 GB", "1",
				"2026-11-25 07:59:00 UTC", "deadline passed, kill pending", "n1:8041"}},
			{containerID(1, 1, 5), []string{containerID(1, 1, 5).String(), app1, "root.eng.etl", "low", "512 MB", "1",
				"no notice", "2026-11-25 07:55:00 UTC", "n2:8041"}},
			{containerID(1, 1, 4), []string{containerID(1, 1, 4).String(), app1, "root.eng.etl", "low", "1 GB", "2",
				"2026-11-25 07:50:00 UTC", "2026-11-25 07:50:01 UTC", "n1:8041"}},
			{containerID(1, 1, 6), []string{containerID(1, 1, 6).String(), app1, "root.eng.etl", "low", "1 GB", "1",
				"2026-11-25 07:40:00 UTC", "ended before the kill (exit status 0) at 2026-11-25 07:39:55 UTC", "n1:8041"}},
			{containerID(4, 1, 2), []string{containerID(4, 1, 2).String(), appID(4).String(), "root.default", "medium", "3 GB", "1",
				"2026-11-25 07:29:00 UTC", "not killed: its application ended KILLED", "n1:8041"}},
		}
		var order []string
		for _, tt := range tests {
			if got := cells(t, table, row(tt.id)); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("%s: %q, want %q", tt.id, got, tt.want)
			}
			order = append(order, row(tt.id))
		}
		check(t, c.handler, []want{{name: "order", path: "/cluster/weft", status: 200,
			has: []string{`<a href="/cluster/app/` + app1 + `">` + containerID(1, 1, 3).String() + `</a>`,
				`<a href="http://n1:8042">n1:8041</a>`, "<p class=\"count\">6, newest first"},
			// Outside the hour: killed 2 hours ago, or of an application
			// that finished before it.
			lacks: []string{row(containerID(1, 1, 7)), row(containerID(3, 1, 2))},
			order: order}})
	})
}

// TestTiersPageLimit: the recent table stops at the 50 newest and says
// how many there were.
func TestTiersPageLimit(t *testing.T) {
	const n = 60
	c := newCluster(t, testQueues(t), func(w *state.WriteTxn) error {
		if err := w.PutApplication(&records.Application{ID: appID(1), User: "alice", Queue: "etl", Type: "SPARK", State: records.AppRunning,
			CurrentAttempt: 1, StartTime: now.Add(-time.Hour).UnixMilli()}); err != nil {
			return err
		}
		for i := int64(2); i < 2+n; i++ {
			if err := w.PutContainer(&records.Container{ID: containerID(1, 1, i), Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1},
				State: records.ContainerComplete, Tier: records.TierLow, ExitStatus: records.ExitPreempted,
				FinishTime: now.Add(-time.Duration(i) * time.Second).UnixMilli()}); err != nil {
				return err
			}
		}
		return nil
	}, n1)
	row := func(i int64) string { return `data-container="` + containerID(1, 1, i).String() + `"` }
	check(t, c.handler, []want{{name: "limit", path: "/cluster/weft", status: 200,
		has:   []string{"The 50 most recent of 60, newest first", row(51)},
		lacks: []string{row(52), row(61)},
		order: []string{row(2), row(3), row(51)}}})
}
