package quota

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Resource names for the two built-in dimensions. Extended resources (GPUs,
// Katalyst/Koordinator reclaimed resources under their own names) use their
// Kubernetes resource names as keys of Resource.Extended.
const (
	ResourceCPU    = "cpu"    // millicores
	ResourceMemory = "memory" // bytes
)

// Resource is a quantity vector: CPU in millicores, memory in bytes, and any
// number of extended resources by name.
//
// CPU and memory are plain fields, not map entries, because the scheduler
// compares and adds resources millions of times per cycle and nearly all
// Hadoop/Spark pods ask for nothing else; the map stays nil on that path.
// Methods never modify their receiver or argument unless their name ends in
// InPlace, and never share an Extended map between results.
type Resource struct {
	MilliCPU int64            `json:"milliCPU,omitempty"`
	Memory   int64            `json:"memory,omitempty"`
	Extended map[string]int64 `json:"extended,omitempty"`
}

// Get returns the quantity of a dimension by name.
func (r Resource) Get(name string) int64 {
	switch name {
	case ResourceCPU:
		return r.MilliCPU
	case ResourceMemory:
		return r.Memory
	}
	return r.Extended[name]
}

// SetInPlace sets one dimension; a zero extended quantity is dropped so
// that equal vectors compare equal.
func (r *Resource) SetInPlace(name string, v int64) {
	switch name {
	case ResourceCPU:
		r.MilliCPU = v
	case ResourceMemory:
		r.Memory = v
	default:
		if v == 0 {
			delete(r.Extended, name)
			return
		}
		if r.Extended == nil {
			r.Extended = map[string]int64{}
		}
		r.Extended[name] = v
	}
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	if r.Extended != nil {
		ext := make(map[string]int64, len(r.Extended))
		for k, v := range r.Extended {
			if v != 0 {
				ext[k] = v
			}
		}
		if len(ext) == 0 {
			ext = nil
		}
		r.Extended = ext
	}
	return r
}

// Add returns r + o.
func (r Resource) Add(o Resource) Resource {
	out := r.Clone()
	out.AddInPlace(o)
	return out
}

// Sub returns r - o; the result may be negative.
func (r Resource) Sub(o Resource) Resource {
	out := r.Clone()
	out.SubInPlace(o)
	return out
}

// AddInPlace adds o to r. r must own its Extended map (see Clone).
//
// This and the other arithmetic range over an Extended map only when it
// has entries: most resources have none, and ranging over no map still
// starts an iterator — half of a scheduling cycle's walk over 10,000
// nodes (scheduler's BenchmarkScheduleOneAsk), and a third of a node
// search's time (Fits).
func (r *Resource) AddInPlace(o Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	if len(o.Extended) == 0 {
		return
	}
	for k, v := range o.Extended {
		r.SetInPlace(k, r.Extended[k]+v)
	}
}

// SubInPlace subtracts o from r. r must own its Extended map.
func (r *Resource) SubInPlace(o Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	if len(o.Extended) == 0 {
		return
	}
	for k, v := range o.Extended {
		r.SetInPlace(k, r.Extended[k]-v)
	}
}

// IsZero reports whether every dimension is zero.
func (r Resource) IsZero() bool {
	if r.MilliCPU != 0 || r.Memory != 0 {
		return false
	}
	if len(r.Extended) == 0 {
		return true
	}
	for _, v := range r.Extended {
		if v != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether r and o hold the same quantities.
func (r Resource) Equal(o Resource) bool {
	return r.Sub(o).IsZero()
}

// Fits reports whether r fits in capacity: r <= capacity in every dimension,
// an extended resource absent from capacity counting as zero. This is the
// node-fit rule: a node that does not advertise a GPU has none.
func (r Resource) Fits(capacity Resource) bool {
	if r.MilliCPU > capacity.MilliCPU || r.Memory > capacity.Memory {
		return false
	}
	if len(r.Extended) == 0 {
		// Most requests: ranging over no map still starts an iterator, a
		// third of a node search's time (scheduler's selectNode, per node).
		return true
	}
	for k, v := range r.Extended {
		if v > capacity.Extended[k] {
			return false
		}
	}
	return true
}

// FitsLimit reports whether r stays within a queue limit. A nil limit is
// unlimited, and so is an extended resource the limit does not name: a queue
// maximum written for cpu and memory should not silently forbid a resource
// type the cluster gained later (YuniKorn treats unnamed resources the same
// way). CPU and memory of a non-nil limit always apply.
func (r Resource) FitsLimit(limit *Resource) bool {
	if limit == nil {
		return true
	}
	if r.MilliCPU > limit.MilliCPU || r.Memory > limit.Memory {
		return false
	}
	if len(r.Extended) == 0 {
		return true
	}
	for k, v := range r.Extended {
		if l, ok := limit.Extended[k]; ok && v > l {
			return false
		}
	}
	return true
}

// NonNegative returns r with negative dimensions raised to zero.
func (r Resource) NonNegative() Resource {
	out := r.Clone()
	out.MilliCPU = max(out.MilliCPU, 0)
	out.Memory = max(out.Memory, 0)
	if len(out.Extended) == 0 {
		return out
	}
	for k, v := range out.Extended {
		if v < 0 {
			delete(out.Extended, k)
		}
	}
	return out
}

// Min returns the element-wise minimum; an extended dimension absent from
// one side counts as zero.
func (r Resource) Min(o Resource) Resource {
	out := Resource{MilliCPU: min(r.MilliCPU, o.MilliCPU), Memory: min(r.Memory, o.Memory)}
	for _, k := range unionExtended(r, o) {
		out.SetInPlace(k, min(r.Extended[k], o.Extended[k]))
	}
	return out
}

// Names returns the dimension names r mentions: cpu and memory always,
// then its extended resources in sorted order.
func (r Resource) Names() []string {
	return append([]string{ResourceCPU, ResourceMemory}, unionExtended(r)...)
}

// DominantShare returns the largest ratio r/of across r's dimensions: the
// DRF "dominant share" of usage r against a reference such as a fair share.
// A positive quantity against a zero reference is +Inf (infinitely over),
// zero against zero is ignored.
func (r Resource) DominantShare(of Resource) float64 {
	share := 0.0
	ratio := func(v, ref int64) {
		switch {
		case v <= 0:
		case ref <= 0:
			share = math.Inf(1)
		default:
			share = max(share, float64(v)/float64(ref))
		}
	}
	ratio(r.MilliCPU, of.MilliCPU)
	ratio(r.Memory, of.Memory)
	if len(r.Extended) == 0 {
		return share
	}
	for k, v := range r.Extended {
		ratio(v, of.Extended[k])
	}
	return share
}

// String formats r compactly for logs and test failures.
func (r Resource) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{cpu:%dm mem:%d", r.MilliCPU, r.Memory)
	for _, k := range unionExtended(r) {
		fmt.Fprintf(&b, " %s:%d", k, r.Extended[k])
	}
	b.WriteByte('}')
	return b.String()
}

// unionExtended returns the sorted extended resource names of rs.
func unionExtended(rs ...Resource) []string {
	var names []string
	for _, r := range rs {
		for k := range r.Extended {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	slices.Sort(names)
	return names
}
