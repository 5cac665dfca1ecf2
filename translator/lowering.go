package translator

import (
	"encoding/json"
	"fmt"
)

// AnnotationLowering is set on a Node by Weft's node agent while the
// reclaimed capacity it publishes is falling: the amount the Node's
// allocatable will show once the containers granted by the old number
// have become pods. Weft's RM schedules by the lower of the two at once;
// the kubelet admits by the allocatable, which so never falls under a
// pod granted before the fall (bigdataplugin/colocation, Agent.publish).
// The agent removes it when the allocatable has followed.
const AnnotationLowering = "weft.io/reclaimed-lowering"

// Lowering is an AnnotationLowering value: reclaimed CPU in millicores
// and memory in bytes.
type Lowering struct {
	MilliCPU int64 `json:"milliCPU"`
	Memory   int64 `json:"memory"`
}

func (l Lowering) String() string {
	b, _ := json.Marshal(l) // two numbers: cannot fail
	return string(b)
}

// ParseLowering reads an AnnotationLowering value.
func ParseLowering(s string) (Lowering, error) {
	var l Lowering
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return Lowering{}, fmt.Errorf("translator: %s: %w", AnnotationLowering, err)
	}
	if l.MilliCPU < 0 || l.Memory < 0 {
		return Lowering{}, fmt.Errorf("translator: %s: %q is negative", AnnotationLowering, s)
	}
	return l, nil
}
