package browser

import (
	"context"
	"fmt"
)

// What Weft's web UI (rmfacade/webui) draws, read from the rendered page:
// shared by its unit test against a served UI and the e2e spec against a
// Weft running a real job.

// Rows reads the rows that match rowSelector in the table that matches
// table, each as its cells' rendered text by the text of their column's
// header (thead th; without the arrow a sorted column's header carries);
// a row whose cells do not line up with the headers is an error.
func (p *Page) Rows(ctx context.Context, table, rowSelector string) ([]map[string]string, error) {
	var r struct {
		Headers []string
		Rows    [][]string
	}
	js := `(() => { const t = document.querySelector(` + jsString(table) + `);
		if (!t) return {Headers: null, Rows: null};
		return {Headers: Array.from(t.querySelectorAll(':scope > thead th'), h => h.innerText.replace(/[▲▼]/g, '').trim()),
			Rows: Array.from(t.querySelectorAll(` + jsString(rowSelector) + `), tr => Array.from(tr.querySelectorAll(':scope > td'), td => td.innerText.trim()))}; })()`
	if err := p.eval(ctx, js, &r); err != nil {
		return nil, fmt.Errorf("browser: rows of %s on %s: %w", table, p.URL, err)
	}
	if r.Headers == nil {
		return nil, fmt.Errorf("browser: no %s on %s", table, p.URL)
	}
	rows := make([]map[string]string, 0, len(r.Rows))
	for i, cells := range r.Rows {
		if len(cells) != len(r.Headers) {
			return nil, fmt.Errorf("browser: %s row %d on %s: %d cells under %d headers %q", table, i+1, p.URL, len(cells), len(r.Headers), r.Headers)
		}
		row := map[string]string{}
		for j, h := range r.Headers {
			row[h] = cells[j]
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// Segment is one part of a queue's bar on the scheduler page, as drawn:
// its left edge and width as fractions of the bar's track, and its height
// in pixels (zero when the stylesheet did not apply).
type Segment struct{ Left, Width, Height float64 }

// QueueBar measures the bar of the queue at path on the scheduler page:
// its guaranteed, used and borrowed segments against the track (the bar's
// padding box, which the absolutely placed segments are relative to).
func (p *Page) QueueBar(ctx context.Context, path string) (map[string]Segment, error) {
	var out map[string]Segment
	js := `(() => {
		const bar = document.querySelector(` + jsString(`tr.queue[data-queue="`+path+`"] .qbar`) + `);
		if (!bar) return null;
		const r = bar.getBoundingClientRect(), s = getComputedStyle(bar);
		const left = r.left + parseFloat(s.borderLeftWidth);
		const width = r.width - parseFloat(s.borderLeftWidth) - parseFloat(s.borderRightWidth);
		const out = {};
		for (const c of ['guaranteed', 'used', 'borrowed']) {
			const e = bar.querySelector(':scope > .' + c).getBoundingClientRect();
			out[c] = {Left: (e.left - left) / width, Width: e.width / width, Height: e.height};
		}
		return out;
	})()`
	if err := p.eval(ctx, js, &out); err != nil {
		return nil, fmt.Errorf("browser: bar of queue %s on %s: %w", path, p.URL, err)
	}
	if out == nil {
		return nil, fmt.Errorf("browser: no bar for queue %s on %s", path, p.URL)
	}
	return out, nil
}
