package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

func TestDigest(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	spec := func(container, text string, start time.Duration, state types.SpecState, msg string) types.SpecReport {
		return types.SpecReport{
			ContainerHierarchyTexts: []string{container}, LeafNodeText: text, LeafNodeType: types.NodeTypeIt,
			State: state, StartTime: t0.Add(start), RunTime: 90 * time.Second,
			Failure: types.Failure{Message: msg, Location: types.CodeLocation{FileName: "/x/test/e2e/preemption_test.go", LineNumber: 58}},
		}
	}
	reports := []types.Report{{
		SuiteConfig: types.SuiteConfig{RandomSeed: 1795581352},
		SpecReports: types.SpecReports{
			// Out of order in the report: the digest orders by start.
			spec("Two tenants", "reclaims", 10*time.Minute, types.SpecStateFailed, "Timed out after 240s.\n\nExpected\n    <int>: 6\nto equal\n    <int>: 7\n"),
			spec("The tide", "gives notice", 2*time.Minute, types.SpecStatePassed, ""),
			spec("Skipped", "never ran", 0, types.SpecStateSkipped, ""),
		},
	}}
	// Through JSON, as ginkgo writes it.
	b, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	var back []types.Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lines int
		want  []string
		not   []string
	}{
		{lines: 6, want: []string{
			"e2e digest: 1 of 2 specs failed (seed 1795581352)",
			`FAILED "Two tenants reclaims" after 1m30s; ran after "The tide gives notice" (passed)`,
			"at preemption_test.go:58: Timed out after 240s.\n    Expected\n        <int>: 6\n    to equal\n        <int>: 7",
		}, not: []string{"Skipped", "…"}},
		{lines: 2, want: []string{"Timed out after 240s.\n    Expected\n    …"}},
	} {
		var out bytes.Buffer
		write(&out, back, tc.lines)
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("lines=%d: digest lacks %q:\n%s", tc.lines, w, out.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out.String(), n) {
				t.Errorf("lines=%d: digest has %q:\n%s", tc.lines, n, out.String())
			}
		}
	}
}
