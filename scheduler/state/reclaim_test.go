package state

import (
	"testing"

	"github.com/weft-sh/weft/quota"
)

func TestReclaimable(t *testing.T) {
	r := func(cpu, memGi int64) quota.Resource { return quota.Resource{MilliCPU: cpu, Memory: memGi << 30} }
	cases := []struct {
		name                   string
		used, guaranteed, take quota.Resource
		want                   bool
	}{
		{"borrows both, stays above", r(8000, 8), r(4000, 4), r(1000, 1), true},
		{"borrows both, would drop below in memory", r(8000, 5), r(4000, 4), r(1000, 2), false},
		{"borrows cpu only: memory within its guarantee does not hold back", r(6000, 3), r(4000, 11), r(1000, 1), true},
		{"borrows cpu only, would drop below it", r(4500, 3), r(4000, 11), r(1000, 1), false},
		{"within its guarantee everywhere", r(3000, 3), r(4000, 11), r(1000, 1), false},
		{"borrows memory, victim holds none of it", r(3000, 12), r(4000, 11), r(1000, 0), false},
		{"no guarantee: all of it borrowed", r(2000, 2), quota.Resource{}, r(1000, 1), true},
	}
	for _, c := range cases {
		if got := Reclaimable(c.used, c.guaranteed, c.take); got != c.want {
			t.Errorf("%s: Reclaimable(%v, %v, %v) = %v, want %v", c.name, c.used, c.guaranteed, c.take, got, c.want)
		}
	}
}
