package wellknown

import (
	"encoding/json"
	"fmt"
)

// Lowering is an AnnotationReclaimedLowering value: reclaimed CPU in
// millicores and memory in bytes.
type Lowering struct {
	MilliCPU int64 `json:"milliCPU"`
	Memory   int64 `json:"memory"`
}

func (l Lowering) String() string {
	b, _ := json.Marshal(l) // two numbers: cannot fail
	return string(b)
}

// ParseLowering reads an AnnotationReclaimedLowering value.
func ParseLowering(s string) (Lowering, error) {
	var l Lowering
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return Lowering{}, fmt.Errorf("wellknown: %s: %w", AnnotationReclaimedLowering, err)
	}
	if l.MilliCPU < 0 || l.Memory < 0 {
		return Lowering{}, fmt.Errorf("wellknown: %s: %q is negative", AnnotationReclaimedLowering, s)
	}
	return l, nil
}
