package quota

import (
	"math"
	"strings"

	"github.com/weft-sh/weft/protos/yarn/records"
)

// QuotasFromQueues turns a YARN queue tree, whose capacities are
// percentages of the parent, into absolute quotas over the capacity the
// cluster offers now. Guarantees round down so children never sum past
// their parent; a max capacity of 0 or 100 leaves the queue unbounded
// below its parent.
func QuotasFromQueues(queues []*records.Queue, cluster Resource) []QueueQuota {
	frac := map[string]float64{}
	out := make([]QueueQuota, 0, len(queues))
	for _, q := range queues { // parents come before children
		f := 1.0
		if parent, ok := parentPath(q.Path); ok {
			f = frac[parent] * float64(q.Capacity) / 100
		}
		frac[q.Path] = f
		qq := QueueQuota{Path: q.Path, Guaranteed: scale(cluster, f), UserLimitPercent: q.UserLimitPercent}
		if q.MaxCapacity > 0 && q.MaxCapacity < 100 {
			parentFrac := 1.0
			if parent, ok := parentPath(q.Path); ok {
				parentFrac = frac[parent]
			}
			m := scale(cluster, parentFrac*float64(q.MaxCapacity)/100)
			if m.Fits(qq.Guaranteed) {
				m = qq.Guaranteed
			}
			qq.Max = &m
		}
		out = append(out, qq)
	}
	return out
}

func parentPath(path string) (string, bool) {
	i := strings.LastIndexByte(path, '.')
	if i < 0 {
		return "", false
	}
	return path[:i], true
}

func scale(r Resource, f float64) Resource {
	return Resource{MilliCPU: int64(math.Floor(float64(r.MilliCPU) * f)), Memory: int64(math.Floor(float64(r.Memory) * f))}
}
