// Command e2e-digest prints, from a ginkgo JSON report, the few lines a
// reader of a failed run's *tail* needs: the seed that ordered the specs,
// and for each failed spec where and why it failed and which spec ran just
// before it (the end-to-end specs share one node, so a neighbour's leftovers
// are a suspect). make e2e-test prints it last when the suite fails: a CI log
// cut to its last lines then still says what broke.
//
//	e2e-digest [-lines N] report.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

func main() {
	lines := flag.Int("lines", 6, "lines of each failure message to print")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: e2e-digest [-lines N] report.json")
		os.Exit(2)
	}
	b, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e-digest:", err)
		os.Exit(1)
	}
	var reports []types.Report
	if err := json.Unmarshal(b, &reports); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-digest: not a ginkgo JSON report:", err)
		os.Exit(1)
	}
	write(os.Stdout, reports, *lines)
}

// write prints the digest of reports to w.
func write(w io.Writer, reports []types.Report, lines int) {
	for _, r := range reports {
		specs := ran(r.SpecReports)
		failed := 0
		for _, s := range specs {
			if s.State.Is(types.SpecStateFailureStates) {
				failed++
			}
		}
		fmt.Fprintf(w, "e2e digest: %d of %d specs failed (seed %d)\n", failed, len(specs), r.SuiteConfig.RandomSeed)
		for i, s := range specs {
			if !s.State.Is(types.SpecStateFailureStates) {
				continue
			}
			before := "nothing"
			if i > 0 {
				before = fmt.Sprintf("%q (%s)", name(specs[i-1]), specs[i-1].State)
			}
			fmt.Fprintf(w, "%s %q after %s; ran after %s\n", strings.ToUpper(s.State.String()), name(s), s.RunTime.Round(1e9), before)
			loc := s.Failure.Location
			fmt.Fprintf(w, "  at %s:%d: %s\n", filepath.Base(loc.FileName), loc.LineNumber, head(s.Failure.Message, lines))
		}
	}
}

// ran is the reports of specs and setup nodes that ran, in the order they
// started.
func ran(all types.SpecReports) []types.SpecReport {
	var out []types.SpecReport
	for _, s := range all {
		if s.State == types.SpecStateSkipped || s.State == types.SpecStatePending || s.StartTime.IsZero() {
			continue
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartTime.Before(out[j].StartTime) })
	return out
}

// name is a spec's full text: its containers' texts and its own.
func name(s types.SpecReport) string {
	parts := append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText)
	if s.LeafNodeText == "" {
		parts = append(parts[:len(parts)-1], "["+s.LeafNodeType.String()+"]")
	}
	return strings.Join(parts, " ")
}

// head is the first n non-empty lines of s, joined for one indented block.
func head(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(out) == n {
			out = append(out, "…")
			break
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n    ")
}
