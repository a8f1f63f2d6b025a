package api

import (
	"maps"
	"strings"
	"time"
)

// The event kinds: a Project says which events it subscribes to and how its
// worker runs; an Event is one occurrence, whose worker (and the jobs the
// worker creates) run on the runtime.

// EventPhase is the phase of an event's worker or of a job.
type EventPhase string

// The phases of workers and jobs, exactly. Terminal: all but PENDING,
// STARTING, RUNNING and UNKNOWN.
const (
	PhasePending          EventPhase = "PENDING"
	PhaseStarting         EventPhase = "STARTING"
	PhaseRunning          EventPhase = "RUNNING"
	PhaseSucceeded        EventPhase = "SUCCEEDED"
	PhaseFailed           EventPhase = "FAILED"
	PhaseCanceled         EventPhase = "CANCELED"
	PhaseAborted          EventPhase = "ABORTED"
	PhaseTimedOut         EventPhase = "TIMED_OUT"
	PhaseSchedulingFailed EventPhase = "SCHEDULING_FAILED"
	PhaseUnknown          EventPhase = "UNKNOWN"
)

// EventPhases lists every phase, in lifecycle order.
var EventPhases = []EventPhase{PhasePending, PhaseStarting, PhaseRunning, PhaseSucceeded, PhaseFailed,
	PhaseCanceled, PhaseAborted, PhaseTimedOut, PhaseSchedulingFailed, PhaseUnknown}

// Terminal reports whether p is a terminal phase.
func (p EventPhase) Terminal() bool {
	switch p {
	case PhasePending, PhaseStarting, PhaseRunning, PhaseUnknown:
		return false
	}
	return true
}

// Transition reports whether a worker's (or a job's) phase may change from
// from to to, as the seed's scenarios allow: a scheduler claims a PENDING
// worker (STARTING) or a cancel ends it (CANCELED); a STARTING worker runs,
// ends, fails to start, is aborted or, once started, cannot be observed
// (UNKNOWN); a RUNNING worker ends in any terminal phase but CANCELED, or
// cannot be observed (UNKNOWN); an UNKNOWN one is found again or ends. A terminal phase never changes; staying in a phase is no
// transition and always allowed.
func Transition(from, to EventPhase) bool {
	if from == to {
		return true
	}
	switch from {
	case PhasePending:
		return to == PhaseStarting || to == PhaseCanceled
	case PhaseStarting:
		return to == PhaseRunning || to == PhaseUnknown || (to.Terminal() && to != PhaseCanceled)
	case PhaseRunning:
		return to == PhaseUnknown || (to.Terminal() && to != PhaseCanceled && to != PhaseSchedulingFailed)
	case PhaseUnknown:
		return to == PhaseRunning || (to.Terminal() && to != PhaseCanceled && to != PhaseSchedulingFailed)
	}
	return false
}

// Known reports whether p is one of EventPhases.
func (p EventPhase) Known() bool {
	for _, q := range EventPhases {
		if p == q {
			return true
		}
	}
	return false
}

// LabelEventProject labels an event (and its secrets) with its project.
const LabelEventProject = "cairn.dev/project"

// Event actions only admins (the scheduler) call: the event's secrets (GET,
// answered as a Secret with the Event's name, owned by it: the point-in-time
// copy of the project's secrets) and the registration of a unit's token
// (POST, body EventTokenRequest).
const (
	ActionEventSecrets = "secrets"
	ActionEventTokens  = "tokens"
)

// EventTokenRequest is the body of POST .../events/{name}/tokens: the
// scheduler registers the token it minted for one unit of the event (its
// worker or a job) by its hash; the token itself never leaves the unit's
// files and environment.
type EventTokenRequest struct {
	// UID is the event's uid: a token registered for an event works for
	// that event only, not for another created later with its name.
	UID string `json:"uid"`
	// Hash is the hex SHA-256 of the token (64 lower-case hex digits).
	Hash string `json:"hash"`
}

// WorkerUnitID is the runtime unit ID of the worker of the event with uid.
func WorkerUnitID(eventUID string) string { return "ev-" + eventUID }

// JobUnitID is the runtime unit ID of the job named job of the event with
// uid.
func JobUnitID(eventUID, job string) string { return "ev-" + eventUID + "-" + job }

// Project groups the events of one source of work.
type Project struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       ProjectSpec `json:"spec"`
}

// ProjectSpec says how the project's workers run and which events it
// takes.
type ProjectSpec struct {
	WorkerTemplate WorkerSpec `json:"workerTemplate"`
	// WorkerPermissions is what a worker's token may do in the project's
	// namespace, besides reading its own Event and creating its jobs.
	WorkerPermissions  []PermissionRule    `json:"workerPermissions,omitempty"`
	EventSubscriptions []EventSubscription `json:"eventSubscriptions,omitempty"`
	// Secrets name Secrets of the namespace copied into each event.
	Secrets []string `json:"secrets,omitempty"`
	// TrustForks lets the Events of a fork (spec.labels fork: "true", as a
	// github Gateway sets for a pull request from another repository) have
	// the copy of Secrets; default false: such an Event's worker gets none
	// of them.
	TrustForks bool `json:"trustForks,omitempty"`
	// MaxConcurrentWorkers and MaxConcurrentJobs bound the project's
	// running workers and jobs (0: only the global limits).
	MaxConcurrentWorkers int `json:"maxConcurrentWorkers,omitempty"`
	MaxConcurrentJobs    int `json:"maxConcurrentJobs,omitempty"`
}

// WorkerSpec says how a worker (or a job) runs.
type WorkerSpec struct {
	// Command is the argv run by the local runtime.
	Command []string `json:"command,omitempty"`
	// Image is used by a cluster runtime.
	Image string            `json:"image,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	// Workspace is the working directory, relative to the workspace.
	Workspace string    `json:"workspace,omitempty"`
	Timeout   *Duration `json:"timeout,omitempty"`
	// Resources are the requests and limits of the unit's container under
	// a cluster runtime (runtime/kubernetes); unset: the runtime's
	// defaults.
	Resources *Resources `json:"resources,omitempty"`
	// SharedWorkspace, when set on a Project's workerTemplate, gives the
	// worker and its jobs one volume as their workspace under a cluster
	// runtime (a PersistentVolumeClaim), removed when the worker is
	// cleaned up; unset: each unit's workspace is its own.
	SharedWorkspace *SharedWorkspace `json:"sharedWorkspace,omitempty"`
}

// SharedWorkspace is the volume a worker shares with its jobs.
type SharedWorkspace struct {
	// Size is a Kubernetes quantity ("1Gi"); required.
	Size string `json:"size"`
	// StorageClassName chooses the volume's class; empty: the cluster's
	// default.
	StorageClassName string `json:"storageClassName,omitempty"`
}

// Resources are a container's resource requests and limits, by resource
// name ("cpu", "memory"), as Kubernetes quantities ("500m", "256Mi").
type Resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Ungrantable says why a project may not grant its workers any verb on
// kind, or "" when it may: each of these would let a worker reach beyond
// its project.
func Ungrantable(kind string) string {
	switch kind {
	case KindNamespace:
		return "a worker acts only inside its project's namespace"
	case KindProject:
		return "a worker may not change the projects that define what workers may do"
	case KindLease:
		return "Leases fence the controllers' writes"
	}
	return ""
}

// PermissionRule grants verbs on kinds.
type PermissionRule struct {
	Kinds []string `json:"kinds"`
	Verbs []string `json:"verbs"`
}

// EventSubscription matches events: source equal; type listed or "*";
// qualifiers equal; the subscription's labels a subset of the event's.
type EventSubscription struct {
	Source     string            `json:"source"`
	Types      []string          `json:"types"`
	Qualifiers map[string]string `json:"qualifiers,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
}

// Event is one occurrence for a project, and the state of its worker and
// jobs.
type Event struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       EventSpec   `json:"spec"`
	Status     EventStatus `json:"status,omitzero"`
}

// EventSpec is what happened and how its worker runs.
type EventSpec struct {
	Project    string            `json:"project,omitempty"`
	Source     string            `json:"source"`
	Type       string            `json:"type"`
	Qualifiers map[string]string `json:"qualifiers,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Payload    string            `json:"payload,omitempty"`
	ShortTitle string            `json:"shortTitle,omitempty"`
	// Worker is copied from the project's template at creation.
	Worker WorkerSpec `json:"worker,omitzero"`
}

// EventStatus is the state of the event's worker and jobs.
type EventStatus struct {
	Worker WorkerStatus `json:"worker,omitzero"`
	Jobs   []JobStatus  `json:"jobs,omitempty"`
	// JobPhases sums the jobs up for tables ("build:SUCCEEDED,test:RUNNING");
	// the registry keeps it in step with Jobs.
	JobPhases string `json:"jobPhases,omitempty"`
}

// SummarizeJobs is the JobPhases of jobs.
func SummarizeJobs(jobs []JobStatus) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = j.Name + ":" + string(j.Phase)
	}
	return strings.Join(parts, ",")
}

// WorkerStatus is the state of a worker.
type WorkerStatus struct {
	Phase   EventPhase `json:"phase,omitempty"`
	Started time.Time  `json:"started,omitzero"`
	Ended   time.Time  `json:"ended,omitzero"`
	Reason  string     `json:"reason,omitempty"`
	// ExitCode is set once the worker has exited.
	ExitCode *int `json:"exitCode,omitempty"`
	// RunID is the runtime unit (WorkerUnitID) the leader recorded it
	// starts, in a fenced status write, before starting it: a leader whose
	// runtime has no such unit never starts it again, and reports it lost
	// (UNKNOWN). Empty: no start was tried, or a failed try was withdrawn.
	RunID string `json:"runID,omitempty"`
}

// JobStatus is a job's spec and state.
type JobStatus struct {
	Name     string     `json:"name"`
	Spec     WorkerSpec `json:"spec"`
	Phase    EventPhase `json:"phase,omitempty"`
	Started  time.Time  `json:"started,omitzero"`
	Ended    time.Time  `json:"ended,omitzero"`
	Reason   string     `json:"reason,omitempty"`
	ExitCode *int       `json:"exitCode,omitempty"`
	// RunID is the runtime unit (JobUnitID) the leader recorded it starts
	// before starting it, as WorkerStatus.RunID.
	RunID string `json:"runID,omitempty"`
}

// DeepCopy returns a copy of w sharing nothing with it.
func (w *WorkerSpec) DeepCopy() *WorkerSpec {
	c := *w
	c.Command = append([]string(nil), w.Command...)
	if w.Env != nil {
		c.Env = make(map[string]string, len(w.Env))
		for k, v := range w.Env {
			c.Env[k] = v
		}
	}
	if w.Timeout != nil {
		t := *w.Timeout
		c.Timeout = &t
	}
	if w.Resources != nil {
		c.Resources = &Resources{Requests: maps.Clone(w.Resources.Requests), Limits: maps.Clone(w.Resources.Limits)}
	}
	if w.SharedWorkspace != nil {
		sw := *w.SharedWorkspace
		c.SharedWorkspace = &sw
	}
	return &c
}

// Match reports whether the subscription takes an event of source, type
// typ, qualifiers and labels: source equal; typ listed or "*"; qualifiers
// equal; the subscription's labels a subset of the event's.
func (s *EventSubscription) Match(source, typ string, qualifiers, labels map[string]string) bool {
	if s.Source != source {
		return false
	}
	typeOK := false
	for _, t := range s.Types {
		if t == "*" || t == typ {
			typeOK = true
			break
		}
	}
	if !typeOK || len(s.Qualifiers) != len(qualifiers) {
		return false
	}
	for k, v := range s.Qualifiers {
		if q, ok := qualifiers[k]; !ok || q != v {
			return false
		}
	}
	for k, v := range s.Labels {
		if l, ok := labels[k]; !ok || l != v {
			return false
		}
	}
	return true
}
