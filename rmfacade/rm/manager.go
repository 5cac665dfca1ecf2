// Package rm is the ResourceManager's application lifecycle: it issues
// application ids, admits submissions into queues, and carries kills, moves
// and priority changes into the state store. Transports (the IPC client
// protocol, the REST API) call it; it knows neither.
package rm

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weft-sh/weft/protos/yarn/records"
	"github.com/weft-sh/weft/quota"
	"github.com/weft-sh/weft/rmfacade/state"
	"github.com/weft-sh/weft/rmfacade/yarnerr"
)

// Queues is the queue tree applications are admitted into.
type Queues interface {
	Queue(name string) (*records.Queue, bool)
	Queues() []*records.Queue
	Allowed(q *records.Queue, user string, op quota.Operation) bool
}

// Options configures a Manager. Zero values take YARN's defaults.
type Options struct {
	// ClusterTimestamp identifies this RM incarnation in the ids it issues
	// (default: start time in ms).
	ClusterTimestamp int64
	// MaxAppAttempts is yarn.resourcemanager.am.max-attempts (default 2).
	MaxAppAttempts int32
	// MinimumAllocation and MaximumAllocation are
	// yarn.scheduler.{minimum,maximum}-allocation-{mb,vcores}
	// (defaults 1024 MB/1 vcore and 8192 MB/4 vcores).
	MinimumAllocation, MaximumAllocation records.Resource
	// MaxPriority is yarn.cluster.max-application-priority (default 0).
	MaxPriority int32
	// NoAMLaunch, when set, says why this RM cannot launch AMs (the
	// embedded mode without a cluster): an application with a managed AM
	// is admitted with it as its diagnostics, so its user reads why it
	// will not start instead of waiting on it.
	NoAMLaunch string
	// MaxCompletedApplications is
	// yarn.resourcemanager.max-completed-applications: how many completed
	// (FINISHED, FAILED, KILLED) applications are kept, the most recently
	// completed ones; an older one is removed with its attempts and
	// containers, and is then unknown to every query, as in YARN. nil takes
	// Hadoop 3's default, 1000 (DefaultMaxCompletedApplications); 0 keeps
	// none, and a negative value is read as 0, as YARN's comparison reads
	// it. Running applications are never removed.
	//
	// YARN has a second limit, yarn.resourcemanager.state-store.max-completed-applications
	// (by default this one, and capped at it): the applications kept in the
	// state store, the rest of those kept being in memory only until a
	// restart. This RM's memory is its state store, loaded whole at start,
	// so one limit bounds both.
	MaxCompletedApplications *int
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// DefaultMaxCompletedApplications is YarnConfiguration's
// DEFAULT_RM_MAX_COMPLETED_APPLICATIONS in Hadoop 3 (10000 in Hadoop 2).
const DefaultMaxCompletedApplications = 1000

// Manager owns the application lifecycle.
type Manager struct {
	store *state.Store
	// queues is swapped whole when the tree changes; each call reads it
	// once so that one decision never sees two trees.
	queues atomic.Pointer[Queues]
	opts   Options
	seq    atomic.Int32
	// maxCompleted is Options.MaxCompletedApplications in effect.
	maxCompleted int
	removed      removedCounts
}

// New returns a Manager over store and queues.
func New(store *state.Store, queues Queues, opts Options) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ClusterTimestamp == 0 {
		opts.ClusterTimestamp = opts.Now().UnixMilli()
	}
	if opts.MaxAppAttempts <= 0 {
		opts.MaxAppAttempts = 2
	}
	if opts.MinimumAllocation == (records.Resource{}) {
		opts.MinimumAllocation = records.Resource{MemoryMB: 1024, VCores: 1}
	}
	if opts.MaximumAllocation == (records.Resource{}) {
		opts.MaximumAllocation = records.Resource{MemoryMB: 8192, VCores: 4}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	maxCompleted := DefaultMaxCompletedApplications
	if opts.MaxCompletedApplications != nil {
		maxCompleted = max(*opts.MaxCompletedApplications, 0)
	}
	m := &Manager{store: store, opts: opts, maxCompleted: maxCompleted}
	m.queues.Store(&queues)
	return m
}

// ClusterTimestamp is the RM incarnation's id.
func (m *Manager) ClusterTimestamp() int64 { return m.opts.ClusterTimestamp }

// StartedAt is when this RM incarnation started, in ms.
func (m *Manager) StartedAt() int64 { return m.opts.ClusterTimestamp }

// MaximumAllocation is the largest container (and AM) the RM grants.
func (m *Manager) MaximumAllocation() records.Resource { return m.opts.MaximumAllocation }

// Logger is the manager's logger, for the transports around it.
func (m *Manager) Logger() *slog.Logger { return m.opts.Logger }

// Snapshot returns a consistent view of the state.
func (m *Manager) Snapshot() *state.Snapshot { return m.store.Snapshot() }

// Queues returns the queue tree.
func (m *Manager) Queues() Queues { return *m.queues.Load() }

// QueuePath is the full path of the queue an application names ("default"
// → "root.default"), or the name itself when the tree no longer has it.
// Hadoop 3.4 reports an application's queue as its full path in every view:
// the client protocol's application report, the AM's registration, REST.
func (m *Manager) QueuePath(name string) string {
	if q, ok := m.Queues().Queue(name); ok {
		return q.Path
	}
	return name
}

// SetQueues replaces the queue tree, as YARN's refreshQueues does.
// Applications keep their queue names; one in a queue that no longer
// exists keeps running and can be moved.
func (m *Manager) SetQueues(q Queues) { m.queues.Store(&q) }

// NewApplicationID issues the next application id of this incarnation.
func (m *Manager) NewApplicationID() records.ApplicationID {
	return records.ApplicationID{ClusterTimestamp: m.opts.ClusterTimestamp, ID: m.seq.Add(1)}
}

// Submission is what a client submits, already decoded from its wire form.
type Submission struct {
	ID             records.ApplicationID
	Name           string
	User           string
	Queue          string
	Type           string
	Tags           []string
	Priority       int32
	AMResource     records.Resource
	MaxAttempts    int32
	UnmanagedAM    bool
	KeepContainers bool
	// Raw is the submission context in its wire form, kept for the AM launch.
	Raw []byte
}

// Submit admits an application: it is stored ACCEPTED with its first
// attempt waiting to be scheduled. Resubmitting an existing id succeeds
// without change, as in YARN, so client retries are safe.
func (m *Manager) Submit(ctx context.Context, s Submission) error {
	if s.ID.ClusterTimestamp == 0 || s.ID.ID <= 0 {
		return yarnerr.New(yarnerr.KindBadRequest, yarnerr.ClassApplicationIDNotProvided,
			"ApplicationId is not provided in ApplicationSubmissionContext")
	}
	if s.Queue == "" {
		s.Queue = "default"
	}
	queues := m.Queues()
	q, ok := queues.Queue(s.Queue)
	switch {
	case !ok:
		return yarnerr.BadRequest("Application %s submitted by user %s to unknown queue: %s", s.ID, s.User, s.Queue)
	case !q.Leaf():
		return yarnerr.BadRequest("Application %s submitted by user %s to non-leaf queue: %s", s.ID, s.User, s.Queue)
	case q.State != "RUNNING":
		return yarnerr.BadRequest("Queue %s is %s. Cannot accept submission of application: %s", q.Path, q.State, s.ID)
	case !queues.Allowed(q, s.User, quota.SubmitApplications):
		return yarnerr.Forbidden("User %s does not have permission to submit %s to queue %s", s.User, s.ID, q.Name)
	}
	am, err := m.normalizeAM(s.AMResource, s.UnmanagedAM)
	if err != nil {
		return err
	}
	maxAttempts := s.MaxAttempts
	if maxAttempts <= 0 || maxAttempts > m.opts.MaxAppAttempts {
		maxAttempts = m.opts.MaxAppAttempts
	}
	if s.Type == "" {
		s.Type = "YARN"
	}
	now := m.opts.Now().UnixMilli()
	app := &records.Application{
		ID: s.ID, Name: s.Name, User: s.User, Queue: q.Name, Type: s.Type, Tags: normalizeTags(s.Tags),
		Priority: min(max(s.Priority, 0), m.opts.MaxPriority), State: records.AppAccepted, FinalStatus: records.FinalUndefined,
		SubmitTime: now, StartTime: now, AMResource: am, MaxAttempts: maxAttempts, UnmanagedAM: s.UnmanagedAM,
		KeepContainers: s.KeepContainers, CurrentAttempt: 1, SubmissionContext: s.Raw,
		Diagnostics: "[" + time.UnixMilli(now).UTC().Format(time.ANSIC) + "] Application is Activated, waiting for resources to be assigned for AM.",
	}
	if m.opts.NoAMLaunch != "" && !s.UnmanagedAM {
		app.Diagnostics = m.opts.NoAMLaunch
	}
	attempt := &records.Attempt{ID: records.AttemptID{App: s.ID, ID: 1}, State: records.AttemptScheduled,
		FinalStatus: records.FinalUndefined, StartTime: now}
	if s.UnmanagedAM {
		attempt.State = records.AttemptLaunched
	}
	err = m.store.Update(func(w *state.WriteTxn) error {
		if w.Application(s.ID) != nil {
			return nil
		}
		if err := w.PutApplication(app); err != nil {
			return err
		}
		return w.PutAttempt(attempt)
	})
	if err != nil {
		return fmt.Errorf("submit %s: %w", s.ID, err)
	}
	m.opts.Logger.Info("application accepted", "app", s.ID.String(), "user", s.User, "queue", q.Name)
	return nil
}

// NormalizeRequest checks a container request against the maximum
// allocation (InvalidResourceRequestException beyond it, as YARN) and
// rounds it up to a multiple of the minimum allocation.
func (m *Manager) NormalizeRequest(r records.Resource) (records.Resource, error) {
	return m.normalizeAM(r, false)
}

func (m *Manager) normalizeAM(r records.Resource, unmanaged bool) (records.Resource, error) {
	if unmanaged {
		return records.Resource{}, nil
	}
	limit := m.opts.MaximumAllocation
	if r.MemoryMB < 0 || r.VCores < 0 || !r.Fits(limit) {
		return r, yarnerr.New(yarnerr.KindBadRequest, yarnerr.ClassInvalidResourceRequest,
			"Invalid resource request, requested resource type=[%s] < 0 or greater than maximum allowed allocation. "+
				"Requested resource=<memory:%d, vCores:%d>, maximum allowed allocation=<memory:%d, vCores:%d>",
			exceeded(r, limit), r.MemoryMB, r.VCores, limit.MemoryMB, limit.VCores)
	}
	step := m.opts.MinimumAllocation
	// Round up to a multiple of the minimum allocation, as the scheduler's
	// resource calculator does.
	r.MemoryMB = max(step.MemoryMB, (r.MemoryMB+step.MemoryMB-1)/step.MemoryMB*step.MemoryMB)
	r.VCores = max(r.VCores, step.VCores)
	return r, nil
}

func exceeded(r, limit records.Resource) string {
	if r.MemoryMB < 0 || r.MemoryMB > limit.MemoryMB {
		return "memory-mb"
	}
	return "vcores"
}

// normalizeTags lowercases, trims and de-duplicates tags, as YARN does.
func normalizeTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Application returns an application or ApplicationNotFoundException.
func (m *Manager) Application(id records.ApplicationID) (*records.Application, error) {
	if a := m.store.Snapshot().Application(id); a != nil {
		return a, nil
	}
	return nil, yarnerr.ApplicationNotFound(id.String())
}

// checkAccess lets the owner, and administrators of the app's queue,
// modify an application (YARN's MODIFY_APP ACL with default settings).
func (m *Manager) checkAccess(a *records.Application, user, verb string) error {
	if user == a.User {
		return nil
	}
	queues := m.Queues()
	if q, ok := queues.Queue(a.Queue); ok && queues.Allowed(q, user, quota.AdministerQueue) {
		return nil
	}
	return yarnerr.Forbidden("User %s cannot perform operation %s on %s", user, verb, a.ID)
}

// Kill ends an application as KILLED. It reports whether the application
// is now final; killing a finished application is a no-op that succeeds.
func (m *Manager) Kill(ctx context.Context, id records.ApplicationID, user, diagnostics string) (bool, error) {
	err := m.updateCompleting(func(w *state.WriteTxn) error {
		cur := w.Application(id)
		if cur == nil {
			return yarnerr.ApplicationNotFound(id.String())
		}
		if cur.State.Terminal() {
			return nil
		}
		if err := m.checkAccess(cur, user, "MODIFY_APP"); err != nil {
			return err
		}
		now := m.opts.Now().UnixMilli()
		a := *cur
		a.State, a.FinalStatus, a.FinishTime = records.AppKilled, records.FinalKilled, now
		a.Diagnostics = diagnostics
		if a.Diagnostics == "" {
			a.Diagnostics = fmt.Sprintf("Application %s was killed by user %s", id, user)
		}
		for _, att := range w.AttemptsOf(id) {
			if att.FinishTime != 0 {
				continue
			}
			n := *att
			n.State, n.FinalStatus, n.FinishTime = records.AttemptKilled, records.FinalKilled, now
			if err := w.PutAttempt(&n); err != nil {
				return err
			}
		}
		if err := endApplicationContainers(w, &a, records.ExitKilledByRM, a.Diagnostics); err != nil {
			return err
		}
		return w.PutApplication(&a)
	})
	if err != nil {
		return false, err
	}
	m.opts.Logger.Info("application killed", "app", id.String(), "user", user)
	return true, nil
}

// Move moves an unfinished application to another leaf queue.
func (m *Manager) Move(ctx context.Context, id records.ApplicationID, user, queue string) error {
	queues := m.Queues()
	q, ok := queues.Queue(queue)
	if !ok || !q.Leaf() {
		return yarnerr.BadRequest("Failed to move %s to queue %s: no such leaf queue", id, queue)
	}
	return m.modifyUnfinished(id, user, "App in %s state cannot be moved.", func(a *records.Application) error {
		if !queues.Allowed(q, user, quota.SubmitApplications) {
			return yarnerr.Forbidden("User %s does not have permission to submit %s to queue %s", user, id, q.Name)
		}
		a.Queue = q.Name
		return nil
	})
}

// UpdatePriority sets an application's priority, capped at the cluster
// maximum, and returns the priority in effect.
func (m *Manager) UpdatePriority(ctx context.Context, id records.ApplicationID, user string, priority int32) (int32, error) {
	effective := min(max(priority, 0), m.opts.MaxPriority)
	err := m.modifyUnfinished(id, user, "Application in %s state cannot update priority.", func(a *records.Application) error {
		a.Priority = effective
		return nil
	})
	return effective, err
}

// modifyUnfinished stores change applied to a copy of an unfinished
// application that user may modify. finishedFormat words the refusal for a
// finished one; it gets the application's state.
func (m *Manager) modifyUnfinished(id records.ApplicationID, user, finishedFormat string, change func(*records.Application) error) error {
	return m.store.Update(func(w *state.WriteTxn) error {
		cur := w.Application(id)
		if cur == nil {
			return yarnerr.ApplicationNotFound(id.String())
		}
		if cur.State.Terminal() {
			return yarnerr.BadRequest(finishedFormat, cur.State)
		}
		if err := m.checkAccess(cur, user, "MODIFY_APP"); err != nil {
			return err
		}
		a := *cur
		if err := change(&a); err != nil {
			return err
		}
		return w.PutApplication(&a)
	})
}

// PutNode records a node as reported by its node agent.
func (m *Manager) PutNode(n *records.Node) error {
	return m.PutNodes(n)
}

// PutNodes records nodes in one transaction: a cluster's first sync of a
// thousand nodes would otherwise be a thousand transactions, each waking
// the store's subscribers, on the path to a scheduler's first cycle.
//
// A node whose record becomes LOST takes its containers with it in the
// same transaction, as YARN's scheduler does when it removes a lost node
// (removeNode): each container on it that is not complete completes
// ABORTED with LostContainerDiagnostics, which its AM hears in its next
// allocate response as it hears of any completion (records.Container.
// ToReport); an AM container's end fails its attempt as AMExited does,
// retried while attempts remain. One transaction, so that no reader ever
// sees a LOST node with live containers, and no crash between the two
// leaves them live on a node whose record no later sync moves again.
func (m *Manager) PutNodes(ns ...*records.Node) error {
	if len(ns) == 0 {
		return nil
	}
	var failed []attemptFailure
	err := m.updateMaybeCompleting(func(w *state.WriteTxn) (bool, error) {
		failed = nil
		now := m.opts.Now().UnixMilli()
		for _, n := range ns {
			prev := w.Node(n.ID)
			if err := w.PutNode(n); err != nil {
				return false, err
			}
			if n.State != records.NodeLost || prev != nil && prev.State == records.NodeLost {
				continue
			}
			f, err := loseContainers(w, n.ID, now)
			if err != nil {
				return false, err
			}
			failed = append(failed, f...)
		}
		// Only an attempt ended with its node can complete an application.
		return len(failed) > 0, nil
	})
	if err != nil {
		return err
	}
	for _, f := range failed {
		m.logFailure(f)
	}
	return nil
}

// LostContainerDiagnostics are the diagnostics of a container that ended
// with its node lost: YARN's SchedulerUtils.LOST_CONTAINER, word for word,
// since AMs and users search logs for it.
const LostContainerDiagnostics = "Container released on a *lost* node"

// loseContainers completes, within w, every container on a node just lost
// that is not complete yet, and fails the live attempts whose AM container
// was one of them (an earlier attempt's AM container, its attempt over,
// only completes). The exit status is ABORTED, as in YARN: the cluster
// took the container away, so an AM's attempt lost this way does not
// count towards its application's maximum (countsTowardsMaxAttempts).
func loseContainers(w *state.WriteTxn, node string, now int64) ([]attemptFailure, error) {
	var failed []attemptFailure
	for _, c := range w.ContainersOnNode(node) {
		if c.State == records.ContainerComplete {
			continue
		}
		cp := *c
		cp.State, cp.ExitStatus, cp.Diagnostics, cp.FinishTime = records.ContainerComplete, records.ExitAborted, LostContainerDiagnostics, now
		if err := w.PutContainer(&cp); err != nil {
			return nil, err
		}
		if c.ID.ID != 1 {
			continue
		}
		id := c.ID.Attempt
		f, ended, err := failAttemptIn(w, now, id, amExitedDiagnostics(id, records.ExitAborted, "Diagnostics: "+LostContainerDiagnostics),
			records.ExitAborted, countsTowardsMaxAttempts(records.ExitAborted), false)
		if err != nil {
			return nil, err
		}
		if ended {
			failed = append(failed, f)
		}
	}
	return failed, nil
}

// Subscribe follows the store's committed changes (state.Store.Subscribe):
// what the controllers acting on the RM's records are woken by.
func (m *Manager) Subscribe(fn func(*state.Snapshot, []state.Change)) (cancel func()) {
	return m.store.Subscribe(fn)
}
