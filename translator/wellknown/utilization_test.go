package wellknown

import (
	"testing"
	"time"
)

func TestNodeUtilizationRoundTrip(t *testing.T) {
	u := NodeUtilization{At: time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC), NodeMilliCPU: 1500, NodeMemory: 3 << 30, BatchMilliCPU: 500, BatchMemory: 1 << 30}
	got, err := ParseNodeUtilization(u.String())
	if err != nil || got != u {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, u)
	}
	for _, bad := range []string{"", "{", `{"nodeMilliCPU":1}`, `{"at":"2026-11-25T04:00:00Z","batchMemory":-1}`} {
		if _, err := ParseNodeUtilization(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
