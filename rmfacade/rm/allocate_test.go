package rm

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// An AM's allocate is one verb of the RM and one transaction of its
// store, as YARN's allocate is one call of its scheduler: what a call
// releases, is handed and hears of completing is decided together, and a
// heartbeat that changes nothing writes nothing.
func TestAllocateIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	m, disk := countedManager(t)
	if err := m.PutNode(&records.Node{ID: "n1:8041", Host: "n1", State: records.NodeRunning,
		Capability: records.Resource{MemoryMB: 64 << 10, VCores: 64}}); err != nil {
		t.Fatal(err)
	}
	attempts := submitRegistered(t, m, 2)
	mine, theirs := attempts[0], attempts[1]
	gib := Grant{Node: "n1:8041", Resource: records.Resource{MemoryMB: 1024, VCores: 1}, Queue: "default"}
	first, err := m.AllocateContainers(ctx, mine, []Grant{gib, gib, gib})
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.AllocateContainers(ctx, theirs, []Grant{gib})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(cs []*records.Container) []records.ContainerID {
		var out []records.ContainerID
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	var got Allocated
	// call allocates and returns how many durable commits it made.
	call := func(a Allocation) (int, error) {
		before := disk.commits
		var err error
		got, err = m.Allocate(ctx, a)
		return disk.commits - before, err
	}

	tests := []struct {
		name  string
		check func() string
	}{
		{"without Acquire nothing is handed over, and nothing is written", func() string {
			n, err := call(Allocation{Attempt: mine})
			if err != nil || n != 0 || len(got.Acquired) != 0 || got.Application == nil || got.Application.ID != mine.App {
				return "handed or wrote something"
			}
			return ""
		}},
		{"the containers placed are handed over once, in one commit", func() string {
			n, err := call(Allocation{Attempt: mine, Acquire: true})
			if err != nil || n != 1 || !slices.Equal(ids(got.Acquired), ids(first)) || !got.Acquired[0].Acquired {
				return "not handed whole in one commit"
			}
			if n, _ := call(Allocation{Attempt: mine, Acquire: true}); n != 0 || len(got.Acquired) != 0 {
				return "handed twice"
			}
			return ""
		}},
		{"a release is reported complete in the response of the call that made it, with YARN's diagnostics, in one commit", func() string {
			if _, err := m.CompleteContainer(ctx, first[1].ID, records.ExitSuccess, "finished"); err != nil {
				return err.Error()
			}
			n, err := call(Allocation{Attempt: mine, Acquire: true, Release: []records.ContainerID{first[0].ID}})
			if err != nil || n != 1 {
				return "not one commit"
			}
			if !slices.Equal(ids(got.Completed), []records.ContainerID{first[0].ID, first[1].ID}) {
				return "the released and the finished one are not both reported"
			}
			if c := got.Completed[0]; c.ExitStatus != records.ExitAborted || c.Diagnostics != "Container released by application" || !c.Reported {
				return "the release is not YARN's: " + c.Diagnostics
			}
			if c := got.Completed[1]; c.ExitStatus != records.ExitSuccess {
				return "the finished one lost its exit status"
			}
			if n, _ := call(Allocation{Attempt: mine}); n != 0 || len(got.Completed) != 0 {
				return "reported twice"
			}
			return ""
		}},
		{"another application's container in the release list is left alone", func() string {
			if _, err := call(Allocation{Attempt: mine, Release: []records.ContainerID{other[0].ID}}); err != nil {
				return err.Error()
			}
			if c := m.Snapshot().Container(other[0].ID); c.State == records.ContainerComplete {
				return "released another application's container"
			}
			return ""
		}},
		{"a release the RM has no record of is named, not an error", func() string {
			unknown := records.ContainerID{Attempt: mine, ID: 99}
			if _, err := call(Allocation{Attempt: mine, Release: []records.ContainerID{unknown}}); err != nil {
				return err.Error()
			}
			if !slices.Equal(got.UnknownReleases, []records.ContainerID{unknown}) {
				return "not named"
			}
			return ""
		}},
		{"a container under notice is named in every call until it is gone", func() string {
			if _, err := m.PreemptContainer(ctx, first[2].ID, time.UnixMilli(1_700_000_060_000)); err != nil {
				return err.Error()
			}
			for range 2 {
				if n, _ := call(Allocation{Attempt: mine}); n != 0 || !slices.Equal(ids(got.Preempting), []records.ContainerID{first[2].ID}) {
					return "not named, or written"
				}
			}
			if _, err := m.CompleteContainer(ctx, first[2].ID, records.ExitPreempted, "preempted"); err != nil {
				return err.Error()
			}
			if _, _ = call(Allocation{Attempt: mine}); len(got.Preempting) != 0 {
				return "named once gone"
			}
			return ""
		}},
		{"an attempt no longer live is refused with YARN's ApplicationAttemptNotFoundException, its releases untouched", func() string {
			if err := m.FinishAM(ctx, theirs, records.FinalSucceeded, "", ""); err != nil {
				return err.Error()
			}
			n, err := call(Allocation{Attempt: theirs, Release: []records.ContainerID{other[0].ID}})
			var ye *yarnerr.Error
			if !errors.As(err, &ye) || ye.Class != yarnerr.ClassApplicationAttemptNotFound || n != 0 {
				return "answered, or wrote"
			}
			return ""
		}},
	}
	for _, tc := range tests {
		if msg := tc.check(); msg != "" {
			t.Errorf("%s: %s", tc.name, msg)
		}
	}
}
