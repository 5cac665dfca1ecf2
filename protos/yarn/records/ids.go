// Package records holds the ResourceManager's objects — applications,
// attempts, containers, nodes, queues — as plain values, independent of
// the state store that indexes them and of the wire formats that carry them.
package records

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// ApplicationID is YARN's application id: the cluster timestamp of the RM
// incarnation that issued it and a sequence number.
type ApplicationID struct {
	ClusterTimestamp int64
	ID               int32
}

// String formats the id as YARN does: application_<ts>_<seq, 4+ digits>.
// The ids are formatted by the thousand in every listing, hence appends
// rather than fmt (TestIDStringsMatchFormat holds them to fmt's output).
func (id ApplicationID) String() string {
	return string(id.appendTo(make([]byte, 0, 40), "application_"))
}

func (id ApplicationID) appendTo(b []byte, prefix string) []byte {
	b = append(b, prefix...)
	b = strconv.AppendInt(b, id.ClusterTimestamp, 10)
	b = append(b, '_')
	return appendPadded(b, int64(id.ID), 4)
}

// AttemptPrefix is what every one of the application's attempt ids
// (AttemptID.String) starts with, and no other application's:
// appattempt_<ts>_<seq, 4+>_.
func (id ApplicationID) AttemptPrefix() string {
	return string(append(id.appendTo(make([]byte, 0, 40), "appattempt_"), '_'))
}

// Compare orders ids as they were issued: by the RM incarnation (cluster
// timestamp), then the sequence number. -1, 0 or +1, as cmp.Compare.
func (id ApplicationID) Compare(o ApplicationID) int {
	if c := cmp.Compare(id.ClusterTimestamp, o.ClusterTimestamp); c != 0 {
		return c
	}
	return cmp.Compare(id.ID, o.ID)
}

// AttemptID is YARN's application attempt id.
type AttemptID struct {
	App ApplicationID
	ID  int32
}

// Compare orders attempts by application (ApplicationID.Compare), then
// attempt number.
func (id AttemptID) Compare(o AttemptID) int {
	if c := id.App.Compare(o.App); c != 0 {
		return c
	}
	return cmp.Compare(id.ID, o.ID)
}

// String formats the id as YARN does: appattempt_<ts>_<seq, 4+>_<attempt, 6+>.
func (id AttemptID) String() string {
	b := id.App.appendTo(make([]byte, 0, 48), "appattempt_")
	return string(appendPadded(append(b, '_'), int64(id.ID), 6))
}

// ContainerID is YARN's container id. Epoch is the RM restart epoch, put in
// the id's high bits as YARN does from 2.6 on.
type ContainerID struct {
	Attempt AttemptID
	ID      int64
}

// String formats the id as YARN does:
// container_[e<epoch, 2+>_]<ts>_<seq, 4+>_<attempt, 2+>_<container, 6+>.
func (id ContainerID) String() string {
	seq := id.ID & 0xffffffffff
	epoch := id.ID >> 40
	b := append(make([]byte, 0, 56), "container_"...)
	if epoch > 0 {
		b = append(appendPadded(append(b, 'e'), epoch, 2), '_')
	}
	b = id.Attempt.App.appendTo(b, "")
	b = appendPadded(append(b, '_'), int64(id.Attempt.ID), 2)
	return string(appendPadded(append(b, '_'), seq, 6))
}

// appendPadded appends n in decimal, zero-padded to width as fmt's %0*d
// pads it (a minus sign counts toward the width).
func appendPadded(b []byte, n int64, width int) []byte {
	if n < 0 {
		b = append(b, '-')
		width--
	}
	var buf [24]byte
	digits := strconv.AppendInt(buf[:0], n, 10)
	if n < 0 {
		digits = digits[1:]
	}
	for i := len(digits); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, digits...)
}

// ParseApplicationID parses application_<ts>_<seq>.
func ParseApplicationID(s string) (ApplicationID, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 3 || parts[0] != "application" {
		return ApplicationID{}, fmt.Errorf("invalid ApplicationId: %s", s)
	}
	return parseAppParts(s, parts[1], parts[2])
}

// ParseAttemptID parses appattempt_<ts>_<seq>_<attempt>.
func ParseAttemptID(s string) (AttemptID, error) {
	parts := strings.Split(s, "_")
	if len(parts) != 4 || parts[0] != "appattempt" {
		return AttemptID{}, fmt.Errorf("invalid AppAttemptId: %s", s)
	}
	app, err := parseAppParts(s, parts[1], parts[2])
	if err != nil {
		return AttemptID{}, err
	}
	n, err := strconv.ParseInt(parts[3], 10, 32)
	if err != nil || n < 0 {
		return AttemptID{}, fmt.Errorf("invalid AppAttemptId: %s", s)
	}
	return AttemptID{App: app, ID: int32(n)}, nil
}

// ParseContainerID parses container_[e<epoch>_]<ts>_<seq>_<attempt>_<id>.
func ParseContainerID(s string) (ContainerID, error) {
	parts := strings.Split(s, "_")
	if len(parts) < 5 || parts[0] != "container" {
		return ContainerID{}, fmt.Errorf("invalid ContainerId: %s", s)
	}
	var epoch int64
	if strings.HasPrefix(parts[1], "e") {
		e, err := strconv.ParseInt(parts[1][1:], 10, 32)
		if err != nil || e < 0 || len(parts) != 6 {
			return ContainerID{}, fmt.Errorf("invalid ContainerId: %s", s)
		}
		epoch, parts = e, parts[1:]
	}
	if len(parts) != 5 {
		return ContainerID{}, fmt.Errorf("invalid ContainerId: %s", s)
	}
	app, err := parseAppParts(s, parts[1], parts[2])
	if err != nil {
		return ContainerID{}, err
	}
	att, err1 := strconv.ParseInt(parts[3], 10, 32)
	seq, err2 := strconv.ParseInt(parts[4], 10, 64)
	if err1 != nil || err2 != nil || att < 0 || seq < 0 || seq > 0xffffffffff {
		return ContainerID{}, fmt.Errorf("invalid ContainerId: %s", s)
	}
	return ContainerID{Attempt: AttemptID{App: app, ID: int32(att)}, ID: epoch<<40 | seq}, nil
}

func parseAppParts(s, ts, seq string) (ApplicationID, error) {
	t, err1 := strconv.ParseInt(ts, 10, 64)
	n, err2 := strconv.ParseInt(seq, 10, 32)
	if err1 != nil || err2 != nil || t < 0 || n < 0 {
		return ApplicationID{}, fmt.Errorf("invalid ApplicationId: %s", s)
	}
	return ApplicationID{ClusterTimestamp: t, ID: int32(n)}, nil
}
