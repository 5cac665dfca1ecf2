package wellknown

import (
	"encoding/json"
	"fmt"
	"time"
)

// NodeUtilization is one measurement of a node, in Kubernetes' units:
// an AnnotationNodeUtilization value.
type NodeUtilization struct {
	// At is when it was measured.
	At time.Time `json:"at"`
	// NodeMilliCPU is the CPU every process of the node used (the rate
	// over the measurement interval), NodeMemory the memory in use
	// (MemTotal − MemAvailable).
	NodeMilliCPU int64 `json:"nodeMilliCPU"`
	NodeMemory   int64 `json:"nodeMemory"`
	// BatchMilliCPU and BatchMemory are what Weft's batch pods used
	// together (CPU rate; memory working set).
	BatchMilliCPU int64 `json:"batchMilliCPU"`
	BatchMemory   int64 `json:"batchMemory"`
}

// String is the annotation's value.
func (u NodeUtilization) String() string {
	b, _ := json.Marshal(u) // plain numbers and a time: cannot fail
	return string(b)
}

// ParseNodeUtilization reads an AnnotationNodeUtilization value.
func ParseNodeUtilization(s string) (NodeUtilization, error) {
	var u NodeUtilization
	if err := json.Unmarshal([]byte(s), &u); err != nil {
		return NodeUtilization{}, fmt.Errorf("wellknown: %s: %w", AnnotationNodeUtilization, err)
	}
	if u.At.IsZero() || u.NodeMilliCPU < 0 || u.NodeMemory < 0 || u.BatchMilliCPU < 0 || u.BatchMemory < 0 {
		return NodeUtilization{}, fmt.Errorf("wellknown: %s: %q is not a measurement", AnnotationNodeUtilization, s)
	}
	return u, nil
}
