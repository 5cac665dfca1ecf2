package webui

import (
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/weft-sh/weft/rmfacade/rest/dao"
)

// funcs are the templates' formatting helpers. YARN's RM UI shows epoch
// times as dates, durations as "1mins, 23sec" and memory in MB or GB;
// these keep that spirit in shorter forms.
var funcs = template.FuncMap{
	"when":     when,
	"duration": duration,
	"mb":       mb,
	"na":       na,
	"pct":      func(f dao.Float32) string { return strconv.FormatFloat(float64(f), 'f', 1, 32) },
	"pct32":    func(f float32) string { return strconv.FormatFloat(float64(f), 'f', 1, 32) },
	"cores":    func(f dao.Float64) string { return strconv.FormatFloat(float64(f), 'f', 2, 64) },
	"indent":   func(depth int) string { return strconv.FormatFloat(float64(depth)*1.5, 'f', 1, 64) },
	"lower":    strings.ToLower,
	// progress clamps a progress percentage for a bar's width.
	"progress": func(f dao.Float32) string { return pct(float64(f)) },
}

// timeLayout is how pages show times: UTC, to the second, as YARN's UI
// renders them (it shows "N/A" for a time not yet reached).
const timeLayout = "2006-01-02 15:04:05 UTC"

// when formats ms since the epoch; 0 or less is "N/A".
func when(ms int64) string {
	if ms <= 0 {
		return "N/A"
	}
	return time.UnixMilli(ms).UTC().Format(timeLayout)
}

// duration formats ms as "1d 2h 3m 4s", leaving out the leading zero
// units ("1m 23s", "5s"); a negative duration (clocks apart) is "N/A".
func duration(ms int64) string {
	if ms < 0 {
		return "N/A"
	}
	s := ms / 1000
	parts := []struct {
		n    int64
		unit string
	}{{s / 86400, "d"}, {s / 3600 % 24, "h"}, {s / 60 % 60, "m"}, {s % 60, "s"}}
	var b strings.Builder
	for _, p := range parts {
		if p.n == 0 && b.Len() == 0 && p.unit != "s" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(p.n, 10))
		b.WriteString(p.unit)
	}
	return b.String()
}

// mb formats an amount of memory given in MiB: "512 MB", "8 GB",
// "1.5 GB", "2 TB". YARN reports -1 for what a finished application
// holds; that is "N/A".
func mb(v any) string {
	n, ok := integer(v)
	switch {
	case !ok || n < 0:
		return "N/A"
	case n < 1024:
		return strconv.FormatInt(n, 10) + " MB"
	case n < 1<<20:
		return trimZero(float64(n)/1024) + " GB"
	}
	return trimZero(float64(n)/(1<<20)) + " TB"
}

func trimZero(f float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(f, 'f', 1, 64), ".0")
}

// na is a count YARN reports as -1 for a finished application: "N/A".
func na(v any) string {
	n, ok := integer(v)
	if !ok || n < 0 {
		return "N/A"
	}
	return strconv.FormatInt(n, 10)
}

// integer reads the integer types the REST objects mix (int32, int64),
// which templates cannot convert between.
func integer(v any) (int64, bool) {
	switch v := v.(type) {
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case int:
		return int64(v), true
	}
	return 0, false
}
