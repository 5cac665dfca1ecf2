package records

import (
	"fmt"
	"net/url"
)

// AppState is YARN's YarnApplicationState.
type AppState string

const (
	AppNew       AppState = "NEW"
	AppNewSaving AppState = "NEW_SAVING"
	AppSubmitted AppState = "SUBMITTED"
	AppAccepted  AppState = "ACCEPTED"
	AppRunning   AppState = "RUNNING"
	AppFinished  AppState = "FINISHED"
	AppFailed    AppState = "FAILED"
	AppKilled    AppState = "KILLED"
)

// AllAppStates lists the states in YARN's enum order.
var AllAppStates = []AppState{AppNew, AppNewSaving, AppSubmitted, AppAccepted, AppRunning, AppFinished, AppFailed, AppKilled}

// Terminal reports whether no further transition can happen.
func (s AppState) Terminal() bool { return s == AppFinished || s == AppFailed || s == AppKilled }

// FinalStatus is YARN's FinalApplicationStatus.
type FinalStatus string

const (
	FinalUndefined FinalStatus = "UNDEFINED"
	FinalSucceeded FinalStatus = "SUCCEEDED"
	FinalFailed    FinalStatus = "FAILED"
	FinalKilled    FinalStatus = "KILLED"
	FinalEnded     FinalStatus = "ENDED"
)

// AttemptState is YARN's YarnApplicationAttemptState.
type AttemptState string

const (
	AttemptNew             AttemptState = "NEW"
	AttemptSubmitted       AttemptState = "SUBMITTED"
	AttemptScheduled       AttemptState = "SCHEDULED"
	AttemptAllocatedSaving AttemptState = "ALLOCATED_SAVING"
	AttemptAllocated       AttemptState = "ALLOCATED"
	AttemptLaunched        AttemptState = "LAUNCHED"
	AttemptFailed          AttemptState = "FAILED"
	AttemptRunning         AttemptState = "RUNNING"
	AttemptFinishing       AttemptState = "FINISHING"
	AttemptFinished        AttemptState = "FINISHED"
	AttemptKilled          AttemptState = "KILLED"
)

// ContainerState is YARN's ContainerState.
type ContainerState string

const (
	ContainerNew      ContainerState = "NEW"
	ContainerRunning  ContainerState = "RUNNING"
	ContainerComplete ContainerState = "COMPLETE"
)

// NodeState is YARN's NodeState.
type NodeState string

const (
	NodeNew             NodeState = "NEW"
	NodeRunning         NodeState = "RUNNING"
	NodeUnhealthy       NodeState = "UNHEALTHY"
	NodeDecommissioned  NodeState = "DECOMMISSIONED"
	NodeLost            NodeState = "LOST"
	NodeRebooted        NodeState = "REBOOTED"
	NodeDecommissioning NodeState = "DECOMMISSIONING"
	NodeShutdown        NodeState = "SHUTDOWN"
)

// Resource is an amount of memory (MiB) and virtual cores.
type Resource struct {
	MemoryMB int64 `json:"memoryMB"`
	VCores   int32 `json:"vCores"`
}

// Add returns r+o.
func (r Resource) Add(o Resource) Resource {
	return Resource{MemoryMB: r.MemoryMB + o.MemoryMB, VCores: r.VCores + o.VCores}
}

// Sub returns r-o.
func (r Resource) Sub(o Resource) Resource {
	return Resource{MemoryMB: r.MemoryMB - o.MemoryMB, VCores: r.VCores - o.VCores}
}

// Max returns the larger of r and o in each dimension.
func (r Resource) Max(o Resource) Resource {
	return Resource{MemoryMB: max(r.MemoryMB, o.MemoryMB), VCores: max(r.VCores, o.VCores)}
}

// Fits reports whether r fits within limit in every dimension.
func (r Resource) Fits(limit Resource) bool {
	return r.MemoryMB <= limit.MemoryMB && r.VCores <= limit.VCores
}

// Application is one YARN application. Stored values are never mutated:
// writers copy, change and insert.
type Application struct {
	ID          ApplicationID `json:"id"`
	Name        string        `json:"name"`
	User        string        `json:"user"`
	Queue       string        `json:"queue"`
	Type        string        `json:"type"`
	Tags        []string      `json:"tags,omitempty"`
	Priority    int32         `json:"priority"`
	State       AppState      `json:"state"`
	FinalStatus FinalStatus   `json:"finalStatus"`
	Diagnostics string        `json:"diagnostics,omitempty"`
	// Times are milliseconds since the epoch, as YARN reports them.
	SubmitTime int64 `json:"submitTime"`
	StartTime  int64 `json:"startTime"`
	LaunchTime int64 `json:"launchTime,omitempty"`
	FinishTime int64 `json:"finishTime,omitempty"`

	AMResource     Resource `json:"amResource"`
	MaxAttempts    int32    `json:"maxAttempts"`
	UnmanagedAM    bool     `json:"unmanagedAM,omitempty"`
	KeepContainers bool     `json:"keepContainers,omitempty"`
	// CurrentAttempt is the id of the latest attempt, 0 before the first.
	CurrentAttempt int32 `json:"currentAttempt,omitempty"`
	// FailedAttempts counts the attempts that failed and count towards
	// MaxAttempts: not those whose AM was preempted, aborted or killed by
	// the RM (YARN's RMAppAttemptImpl.shouldCountTowardsMaxAttemptRetry).
	FailedAttempts int32 `json:"failedAttempts,omitempty"`

	Host                string  `json:"host,omitempty"`
	RPCPort             int32   `json:"rpcPort,omitempty"`
	TrackingURL         string  `json:"trackingURL,omitempty"`
	OriginalTrackingURL string  `json:"originalTrackingURL,omitempty"`
	Progress            float32 `json:"progress,omitempty"`

	// SubmissionContext is the client's ApplicationSubmissionContextProto as
	// it arrived, kept whole for launching the AM.
	SubmissionContext []byte `json:"submissionContext,omitempty"`
}

// Key is the application's primary key in the store.
func (a *Application) Key() string { return a.ID.String() }

// AMReportsProgress reports whether its progress is its AM's to report:
// the AM registered and has not unregistered (after, it is 1).
func (a *Application) AMReportsProgress() bool {
	return a.State == AppRunning && a.FinalStatus == FinalUndefined
}

// Attempt is one attempt at running an application's AM.
type Attempt struct {
	ID                  AttemptID    `json:"id"`
	State               AttemptState `json:"state"`
	AMContainer         string       `json:"amContainer,omitempty"`
	Host                string       `json:"host,omitempty"`
	RPCPort             int32        `json:"rpcPort,omitempty"`
	TrackingURL         string       `json:"trackingURL,omitempty"`
	OriginalTrackingURL string       `json:"originalTrackingURL,omitempty"`
	Diagnostics         string       `json:"diagnostics,omitempty"`
	FinalStatus         FinalStatus  `json:"finalStatus"`
	StartTime           int64        `json:"startTime"`
	FinishTime          int64        `json:"finishTime,omitempty"`
}

// Key is the attempt's primary key in the store.
func (a *Attempt) Key() string { return a.ID.String() }

// Container is one allocated container.
type Container struct {
	ID          ContainerID    `json:"id"`
	Node        string         `json:"node"`
	NodeHTTP    string         `json:"nodeHTTP,omitempty"`
	Resource    Resource       `json:"resource"`
	Priority    int32          `json:"priority"`
	State       ContainerState `json:"state"`
	ExitStatus  int32          `json:"exitStatus"`
	Diagnostics string         `json:"diagnostics,omitempty"`
	StartTime   int64          `json:"startTime"`
	FinishTime  int64          `json:"finishTime,omitempty"`
	// Tier is the container's colocation tier, stored by name.
	Tier Tier `json:"tier,omitempty"`
	// AllocationRequestID is the AM's id of the request it satisfies.
	AllocationRequestID int64 `json:"allocationRequestId,omitempty"`
	// Acquired: the AM has been given the container in an allocate
	// response. Reported: the AM has been told it completed. Both are
	// stored, so an RM restart neither repeats nor drops them.
	Acquired bool `json:"acquired,omitempty"`
	Reported bool `json:"reported,omitempty"`
	// PreemptDeadline (epoch ms), when set, marks a preemption victim: its
	// AM is told in every allocate response until then (PreemptionMessage),
	// and the container is killed, PREEMPTED, at the deadline.
	PreemptDeadline int64 `json:"preemptDeadline,omitempty"`
}

// ToAcquire says whether the container waits to be handed to its AM: live
// and in no allocate response yet (YARN's newlyAllocatedContainers).
func (c *Container) ToAcquire() bool { return !c.Acquired && c.State != ContainerComplete }

// ToReport says whether the AM waits to hear that the container completed
// (YARN's justFinishedContainers). The AM's own container is not reported
// to it: its end is the attempt's.
func (c *Container) ToReport() bool {
	return c.State == ContainerComplete && !c.Reported && c.ID.ID != 1
}

// YARN's ContainerExitStatus values Weft reports.
const (
	ExitSuccess            int32 = 0
	ExitInvalid            int32 = -1000
	ExitAborted            int32 = -100
	ExitDisksFailed        int32 = -101
	ExitPreempted          int32 = -102
	ExitKilledByAppMaster  int32 = -105
	ExitKilledByRM         int32 = -106
	ExitKilledAfterAppDone int32 = -107
)

// Key is the container's primary key in the store.
func (c *Container) Key() string { return c.ID.String() }

// LogsURL is where the node serves the container's logs to its
// application's user, as YARN's RM links them (a NodeManager's
// /node/containerlogs page); empty before the container has a node.
func (c *Container) LogsURL(user string) string {
	if c.NodeHTTP == "" {
		return ""
	}
	return "http://" + c.NodeHTTP + "/node/containerlogs/" + c.ID.String() + "/" + url.PathEscape(user)
}

// Node is a node that can run containers, named host:port as a NodeId.
type Node struct {
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	Port        int32     `json:"port"`
	Rack        string    `json:"rack"`
	HTTPAddress string    `json:"httpAddress"`
	State       NodeState `json:"state"`
	Capability  Resource  `json:"capability"`
	Used        Resource  `json:"used"`
	// Occupied is capacity held by pods that are not Weft's (online
	// services' pods, another RM's): it only shrinks what is left for
	// containers.
	Occupied Resource `json:"occupied,omitempty"`
	// CooldownUntil (ms since the epoch), when in the future, keeps new
	// containers off the node: the online load recently grew into what
	// Weft held there, and may again.
	CooldownUntil int64 `json:"cooldownUntil,omitempty"`
	// DecommissionDeadline (ms since the epoch), for a DECOMMISSIONING
	// node with one, is when its containers are ended: the notice AMs get
	// as the node's decommissioning timeout (YARN's graceful
	// decommissioning). Zero: no deadline (a cordoned node drains as its
	// containers finish).
	DecommissionDeadline int64    `json:"decommissionDeadline,omitempty"`
	NumContainers        int32    `json:"numContainers"`
	HealthReport         string   `json:"healthReport,omitempty"`
	LastHealthUpdate     int64    `json:"lastHealthUpdate"`
	Labels               []string `json:"labels,omitempty"`
	// Utilization is what the node used at its agent's last measurement
	// (nil: no agent measures it, or its measurement is stale).
	Utilization *NodeUtilization `json:"utilization,omitempty"`
}

// NodeUtilization is a node's measured use in the units a NodeManager
// reports it in (YARN's ResourceUtilization): memory in MiB, the node's
// CPU in cores busy, its containers' CPU in vcores.
type NodeUtilization struct {
	PhysicalMemoryMB           int64   `json:"physicalMemoryMB"`
	CPU                        float64 `json:"cpu"`
	ContainersPhysicalMemoryMB int64   `json:"containersPhysicalMemoryMB"`
	ContainersVCores           float64 `json:"containersVCores"`
}

// Key is the node's primary key in the store.
func (n *Node) Key() string { return n.ID }

// Queue is one queue of the scheduler's tree as the YARN views show it.
type Queue struct {
	// Name is the leaf name ("default"); Path the full name ("root.default").
	Name   string `json:"name"`
	Path   string `json:"path"`
	Parent string `json:"parent,omitempty"`
	// Children are the paths of the child queues; a leaf has none.
	Children []string `json:"children,omitempty"`
	State    string   `json:"state"`
	// Capacity and MaxCapacity are percentages of the parent, as in the
	// CapacityScheduler.
	Capacity    float32 `json:"capacity"`
	MaxCapacity float32 `json:"maxCapacity"`
	// SubmitACL and AdminACL are YARN ACL strings ("*", "user1,user2 group1", " ").
	SubmitACL string `json:"submitACL"`
	AdminACL  string `json:"adminACL"`
	// UserLimitPercent caps one user's share of a leaf (0: no cap).
	UserLimitPercent int32 `json:"userLimitPercent,omitempty"`
}

// Leaf reports whether applications can be submitted to the queue.
func (q *Queue) Leaf() bool { return len(q.Children) == 0 }

// DelegationToken is an issued RM delegation token, kept so that renewals
// and cancellations hold across restarts.
type DelegationToken struct {
	Sequence  int32  `json:"sequence"`
	Owner     string `json:"owner"`
	Renewer   string `json:"renewer"`
	RealUser  string `json:"realUser,omitempty"`
	IssueDate int64  `json:"issueDate"`
	MaxDate   int64  `json:"maxDate"`
	// RenewDate is when the token expires unless renewed.
	RenewDate int64 `json:"renewDate"`
}

// Key is the token's primary key in the store.
func (t *DelegationToken) Key() string { return fmt.Sprintf("%010d", t.Sequence) }

// Usage is what an application holds and has held.
type Usage struct {
	// Containers counts its live (not complete) containers, the AM's too;
	// Allocated is their resources.
	Containers int32
	Allocated  Resource
	// MemorySeconds (MB·s) and VcoreSeconds are what its containers held
	// over time, each from its allocation to its completion or now.
	MemorySeconds, VcoreSeconds int64
}

// UsageOf sums an application's containers at nowMs (epoch ms), as YARN's
// RMAppAttemptMetrics aggregates resource seconds and counts live
// containers.
func UsageOf(containers []*Container, nowMs int64) Usage {
	var u Usage
	for _, c := range containers {
		end := c.FinishTime
		if c.State != ContainerComplete {
			u.Containers++
			u.Allocated = u.Allocated.Add(c.Resource)
			end = nowMs
		}
		if held := end - c.StartTime; c.StartTime > 0 && held > 0 {
			u.MemorySeconds += c.Resource.MemoryMB * held / 1000
			u.VcoreSeconds += int64(c.Resource.VCores) * held / 1000
		}
	}
	return u
}
