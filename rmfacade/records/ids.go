// Package records holds the ResourceManager's objects — applications,
// attempts, containers, nodes, queues — as plain values, independent of
// the state store that indexes them and of the wire formats that carry them.
package records

import (
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
func (id ApplicationID) String() string {
	return fmt.Sprintf("application_%d_%04d", id.ClusterTimestamp, id.ID)
}

// AttemptID is YARN's application attempt id.
type AttemptID struct {
	App ApplicationID
	ID  int32
}

func (id AttemptID) String() string {
	return fmt.Sprintf("appattempt_%d_%04d_%06d", id.App.ClusterTimestamp, id.App.ID, id.ID)
}

// ContainerID is YARN's container id. Epoch is the RM restart epoch, put in
// the id's high bits as YARN does from 2.6 on.
type ContainerID struct {
	Attempt AttemptID
	ID      int64
}

func (id ContainerID) String() string {
	seq := id.ID & 0xffffffffff
	epoch := id.ID >> 40
	base := fmt.Sprintf("%d_%04d_%02d_%06d", id.Attempt.App.ClusterTimestamp, id.Attempt.App.ID, id.Attempt.ID, seq)
	if epoch > 0 {
		return fmt.Sprintf("container_e%02d_%s", epoch, base)
	}
	return "container_" + base
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
