package records

import (
	"encoding/json"
	"testing"
)

func TestTierNames(t *testing.T) {
	cases := []struct {
		name string
		tier Tier
		ok   bool
	}{
		{"low", TierLow, true},
		{"medium", TierMedium, true},
		{"high", TierHigh, true},
		{"", 0, false},
		{"High", 0, false},
		{"critical", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseTier(c.name)
		if got != c.tier || ok != c.ok {
			t.Errorf("ParseTier(%q) = %v, %v; want %v, %v", c.name, got, ok, c.tier, c.ok)
		}
		if c.ok && got.String() != c.name {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), c.name)
		}
	}
	if Tier(0).String() != "" || Tier(9).String() != "Tier(9)" {
		t.Errorf("unknown tiers read %q and %q", Tier(0).String(), Tier(9).String())
	}
}

func TestTierOrder(t *testing.T) {
	// Reclaim and preemption take low before medium and never high; an
	// unknown tier is the least protected.
	order := []Tier{0, TierLow, TierMedium, TierHigh}
	for i := 1; i < len(order); i++ {
		if order[i-1] >= order[i] {
			t.Errorf("%v is not below %v", order[i-1], order[i])
		}
	}
	for _, c := range []struct {
		tier        Tier
		valid, gang bool
	}{{0, false, false}, {TierLow, true, false}, {TierMedium, true, true}, {TierHigh, true, true}, {4, false, false}} {
		if c.tier.Valid() != c.valid || c.tier.Gang() != c.gang {
			t.Errorf("%v: Valid %v Gang %v, want %v %v", c.tier, c.tier.Valid(), c.tier.Gang(), c.valid, c.gang)
		}
	}
}

// TestTierJSON holds stored containers to the names they were written
// with when the tier was a string.
func TestTierJSON(t *testing.T) {
	for _, c := range []struct {
		tier Tier
		json string
	}{{TierHigh, `{"tier":"high"}`}, {TierLow, `{"tier":"low"}`}, {0, `{}`}} {
		b, err := json.Marshal(Container{Tier: c.tier})
		if err != nil {
			t.Fatal(err)
		}
		var back Container
		if err := json.Unmarshal(b, &back); err != nil || back.Tier != c.tier {
			t.Errorf("%v: came back as %v (%v)", c.tier, back.Tier, err)
		}
		var old struct {
			Tier string `json:"tier,omitempty"`
		}
		if err := json.Unmarshal(b, &old); err != nil || old.Tier != c.tier.String() {
			t.Errorf("%v: written as %s, want the name %q", c.tier, b, c.tier.String())
		}
	}
	var c Container
	if err := json.Unmarshal([]byte(`{"tier":"platinum"}`), &c); err != nil || c.Tier != 0 {
		t.Errorf("an unknown tier was read as %v (%v), want the zero Tier", c.Tier, err)
	}
	if _, err := json.Marshal(Container{Tier: 7}); err == nil {
		t.Error("tier 7 was written")
	}
}
