package records

import "fmt"

// Tier is a container's colocation tier: which of a job's containers the
// node and the scheduler take back first. It is Weft's, not YARN's, but
// travels with the records everywhere — the scheduler orders requests and
// picks preemption victims by it, the translator spells it as a pod label
// and a PriorityClass, the container token carries it to the node, whose
// colocation agent evicts by it — so the RM, the scheduler and the node
// plugin share this one type. Larger values are more important, and the
// zero Tier is unknown (less protected than any).
type Tier uint8

const (
	// TierLow is an elastic worker beyond the job's minimum: placed last,
	// reclaimed and preempted first.
	TierLow Tier = iota + 1
	// TierMedium is one of the job's minimum workers it needs to make
	// progress: part of its gang.
	TierMedium
	// TierHigh is an ApplicationMaster or parameter server: part of the
	// gang, never preempted, since losing it loses the job's progress.
	TierHigh
)

// Tiers lists the tiers from the first reclaimed to the last.
var Tiers = []Tier{TierLow, TierMedium, TierHigh}

var tierNames = [...]string{TierLow: "low", TierMedium: "medium", TierHigh: "high"}

// String is the tier's name as labels, tags and the REST API spell it
// ("low", "medium", "high"); an unknown tier is "" (or Tier(n) outside
// the range), so it never reads as a real one.
func (t Tier) String() string {
	if int(t) < len(tierNames) {
		return tierNames[t]
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}

// ParseTier reads a tier's name; ok is false for anything else, the
// empty string included, with t zero.
func ParseTier(s string) (t Tier, ok bool) {
	for _, t := range Tiers {
		if tierNames[t] == s {
			return t, true
		}
	}
	return 0, false
}

// Valid reports whether t is one of the three tiers.
func (t Tier) Valid() bool { return t >= TierLow && t <= TierHigh }

// Gang reports whether containers of this tier belong to the job's
// all-or-nothing minimum.
func (t Tier) Gang() bool { return t == TierMedium || t == TierHigh }

// MarshalText spells the tier by name, so stored records and JSON keep the
// names they had when Tier was a string.
func (t Tier) MarshalText() ([]byte, error) {
	if t != 0 && !t.Valid() {
		return nil, fmt.Errorf("tier %d is none of low, medium, high", uint8(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a tier's name. Anything else, "" included, reads as
// the zero Tier, as a pod label naming no tier does: a stored container
// with a name from elsewhere loses its tier, not the whole store.
func (t *Tier) UnmarshalText(b []byte) error {
	*t, _ = ParseTier(string(b))
	return nil
}
