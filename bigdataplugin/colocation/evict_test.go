package colocation

import (
	"strings"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// Eviction takes the lowest tier first, the newest first within a tier,
// and only as many pods as free what is needed; ApplicationMasters last.
func TestVictims(t *testing.T) {
	pods := []BatchPod{
		{Name: "am", Tier: records.TierHigh, Started: t0, WorkingSet: gib},
		{Name: "min-old", Tier: records.TierMedium, Started: t0, WorkingSet: 2 * gib},
		{Name: "elastic-old", Tier: records.TierLow, Started: t0.Add(time.Minute), WorkingSet: gib},
		{Name: "elastic-new", Tier: records.TierLow, Started: t0.Add(2 * time.Minute), WorkingSet: gib},
		{Name: "min-new", Tier: records.TierMedium, Started: t0.Add(3 * time.Minute), WorkingSet: 2 * gib},
	}
	names := func(v []BatchPod) string {
		var s []string
		for _, p := range v {
			s = append(s, p.Name)
		}
		return strings.Join(s, ",")
	}
	tests := []struct {
		toFree int64
		want   string
	}{
		{0, ""},
		{1, "elastic-new"},
		{gib, "elastic-new"},
		{gib + 1, "elastic-new,elastic-old"},
		{3 * gib, "elastic-new,elastic-old,min-new"},
		{6 * gib, "elastic-new,elastic-old,min-new,min-old"},
		{100 * gib, "elastic-new,elastic-old,min-new,min-old,am"},
	}
	for _, tc := range tests {
		if got := names(Victims(pods, tc.toFree)); got != tc.want {
			t.Errorf("to free %d: %s, want %s", tc.toFree, got, tc.want)
		}
	}
}
