package rm

import (
	"context"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/rmfacade/state"
)

// The Manager is one object over one store, but no caller needs all of
// it: each depends on the part YARN's RM gives its own kind of caller.
// The AM service's part is declared by the AM service (amrm.Applications);
// the controllers' parts by each controller, for the few verbs it uses.

// ClientService is the RM as its clients reach it, over IPC or REST: the
// verbs of YARN's ClientRMService (carried out by its RMAppManager) and the
// reads that answer its reports.
type ClientService interface {
	NewApplicationID() records.ApplicationID
	Submit(context.Context, Submission) error
	Kill(ctx context.Context, id records.ApplicationID, user, diagnostics string) (bool, error)
	Move(ctx context.Context, id records.ApplicationID, user, queue string) error
	UpdatePriority(ctx context.Context, id records.ApplicationID, user string, priority int32) (int32, error)
	Application(records.ApplicationID) (*records.Application, error)
	Queues() Queues
	QueuePath(name string) string
	MaximumAllocation() records.Resource
	Snapshot() *state.Snapshot
}

var _ ClientService = (*Manager)(nil)
