package translator

import (
	"slices"
	"strconv"
	"strings"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/translator/wellknown"
)

// MaxWorkers reads wellknown.TagMaxWorkers from an application's tags.
func MaxWorkers(tags []string) (int, bool) {
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, wellknown.TagMaxWorkers); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				return n, true
			}
		}
	}
	return 0, false
}

// TierPolicy decides tiers for containers where tags say nothing; a queue
// can carry its own.
type TierPolicy struct {
	// DefaultMinWorkers is how many worker containers count as the job's
	// minimum. The default of 1 keeps every job progressing — one
	// MapReduce task slot, one Spark executor, one DistributedShell
	// container survive reclaim — while the rest are elastic.
	DefaultMinWorkers int
	// HighPriorities are request priorities whose containers are
	// parameter servers (none by default: MapReduce, Spark and
	// DistributedShell run no such containers).
	HighPriorities []int32
}

// DefaultTierPolicy is the policy without queue configuration.
var DefaultTierPolicy = TierPolicy{DefaultMinWorkers: 1}

// Container describes a container for tier decisions.
type Container struct {
	// AM is true for the ApplicationMaster's container.
	AM bool
	// RequestPriority is the YARN priority of the request it satisfies.
	RequestPriority int32
	// WorkersBefore counts the application's live worker containers in
	// tiers medium and low when this one is placed.
	WorkersBefore int
}

// Tier decides a container's tier from the application's tags, then the
// policy.
func (p TierPolicy) Tier(c Container, tags []string) records.Tier {
	if c.AM {
		return records.TierHigh
	}
	minWorkers, high := p.DefaultMinWorkers, p.HighPriorities
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, wellknown.TagMinWorkers); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				minWorkers = n
			}
		}
		if v, ok := strings.CutPrefix(t, wellknown.TagHighPriorities); ok {
			high = nil
			for _, s := range strings.Split(v, ",") {
				if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32); err == nil {
					high = append(high, int32(n))
				}
			}
		}
	}
	switch {
	case slices.Contains(high, c.RequestPriority):
		return records.TierHigh
	case c.WorkersBefore < minWorkers:
		return records.TierMedium
	default:
		return records.TierLow
	}
}
