package api

import "time"

// KindCleaner deletes ephemeral objects once their time-to-live has passed
// and conditions over them hold.
const KindCleaner = "Cleaner"

// Cleaner deletes a set of objects (its targets) once its TTL has passed
// and every one of its CEL conditions, evaluated over the targets, is true;
// then it deletes itself.
type Cleaner struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       CleanerSpec   `json:"spec"`
	Status     CleanerStatus `json:"status,omitzero"`
}

// CleanerSpec says what to delete, when at the earliest, and under which
// conditions.
type CleanerSpec struct {
	// TTL is how long after its creation the Cleaner first evaluates its
	// conditions.
	TTL Duration `json:"ttl"`
	// Retry says when conditions that were not all true are evaluated
	// again (besides every change of an evaluated target).
	Retry CleanerRetry `json:"retry,omitzero"`
	// Targets are the objects the conditions see and the Cleaner deletes.
	Targets []CleanerTarget `json:"targets,omitempty"`
	// Conditions are CEL expressions that must all be true. Each sees
	// `time` (a timestamp: the evaluation's time) and one variable per
	// evaluated target, named by the target. No condition is always true
	// (but a Cleaner with a capacity and no conditions never deletes
	// itself: it is a standing capacity rule).
	Conditions []string `json:"conditions,omitempty"`
	// DryRun makes the Cleaner evaluate as usual but delete nothing: what
	// it would delete is recorded in status.lastEvaluation.wouldDelete (and
	// announced by would-delete Events), and it evaluates again after
	// retry.period.
	DryRun bool `json:"dryRun,omitempty"`
	// Capacity keeps at most Max objects matching a selector, deleting the
	// oldest beyond it at every evaluation after the TTL.
	Capacity *CleanerCapacity `json:"capacity,omitempty"`
}

// AnnotationKeep on an object ("true") keeps every Cleaner from deleting
// it: as a target, or beyond a capacity.
const AnnotationKeep = "cairn.dev/keep"

// CapacityOrderByCreation orders a capacity's objects by
// metadata.creationTimestamp, the oldest deleted first.
const CapacityOrderByCreation = "creationTimestamp"

// CleanerCapacity bounds how many objects of one kind with some labels the
// Cleaner's namespace holds.
type CleanerCapacity struct {
	// Max is how many matching objects are kept (at least 1). Objects
	// being deleted do not count; objects carrying cairn.dev/keep count
	// but are never deleted.
	Max int `json:"max"`
	// Selector selects the objects counted.
	Selector CapacitySelector `json:"selector"`
	// OrderBy says which objects go first: creationTimestamp (the only
	// order, and the default): the oldest.
	OrderBy string `json:"orderBy,omitempty"`
}

// CapacitySelector selects the objects of a kind in the Cleaner's
// namespace whose labels include MatchLabels (every object of the kind
// when empty).
type CapacitySelector struct {
	Kind        string            `json:"kind"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// CleanerRetry paces evaluations after the TTL.
type CleanerRetry struct {
	// Period is the delay before conditions that were not all true are
	// evaluated again; default 1h.
	Period Duration `json:"period,omitzero"`
	// Monotonic asserts that once the conditions hold at some time they
	// hold at every later time, the targets unchanged: the Cleaner then
	// searches for the earliest time they hold and evaluates again then,
	// falling back to Period when none is found within its horizon.
	Monotonic bool `json:"monotonic,omitempty"`
}

// CleanerTarget is one object, or a set of objects selected by labels, in
// the Cleaner's namespace.
type CleanerTarget struct {
	// Name is the target's CEL variable: a CEL identifier, not "time",
	// unique among the Cleaner's targets.
	Name      string          `json:"name"`
	Reference TargetReference `json:"reference"`
	// Delete makes the Cleaner delete the target's objects when it acts.
	Delete bool `json:"delete,omitempty"`
	// IncludeWhenEvaluating makes the target a variable of the conditions
	// and re-evaluates them when it changes; default true.
	IncludeWhenEvaluating *bool `json:"includeWhenEvaluating,omitempty"`
}

// Evaluated reports whether the target is a variable of the conditions.
func (t CleanerTarget) Evaluated() bool {
	return t.IncludeWhenEvaluating == nil || *t.IncludeWhenEvaluating
}

// TargetReference names objects of a namespaced kind in the Cleaner's
// namespace: exactly one of Name and MatchLabels is set. A named target is
// the object itself to its conditions (null when it does not exist); a
// selected one is `{items: [...]}`, sorted by name. Each object also has
// `lastChangeTime`, a timestamp: the time of its last write besides its
// status, as far as cairn knows (see docs/cleaners.md).
type TargetReference struct {
	// Kind is a kind the API serves (e.g. Installation).
	Kind        string            `json:"kind"`
	Name        string            `json:"name,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// CleanerPhase is where a Cleaner is in its life.
type CleanerPhase string

// The phases of a Cleaner.
const (
	// CleanerWaiting: the TTL has not passed yet.
	CleanerWaiting CleanerPhase = "Waiting"
	// CleanerPending: the conditions were evaluated and not all were true;
	// status.nextScheduledEvaluation says when they are evaluated again.
	CleanerPending CleanerPhase = "Pending"
	// CleanerFailed: the last evaluation could not be made (lastError says
	// why); it is tried again at status.nextScheduledEvaluation.
	CleanerFailed CleanerPhase = "Failed"
	// CleanerDeleting: every condition held; the targets marked delete and
	// then the Cleaner are being deleted.
	CleanerDeleting CleanerPhase = "Deleting"
)

// CleanerStatus is what the cleaner controller last did and will do next.
type CleanerStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	ObservedGeneration int64        `json:"observedGeneration,omitempty"`
	Phase              CleanerPhase `json:"phase,omitempty"`
	// ResolvedTargets are the evaluated targets' objects found at the last
	// evaluation, as "Kind/name" (namespace: the Cleaner's): a change to
	// any of them re-evaluates the Cleaner.
	ResolvedTargets []string `json:"resolvedTargets,omitempty"`
	// NextScheduledEvaluation is when the controller evaluates the
	// conditions next (unless a target changes first).
	NextScheduledEvaluation *time.Time `json:"nextScheduledEvaluation,omitempty"`
	// LastEvaluation is the last evaluation of the conditions.
	LastEvaluation *CleanerEvaluation `json:"lastEvaluation,omitempty"`
	// LastError is why the last evaluation or deletion failed; nil after
	// one that succeeded.
	LastError *LastError `json:"lastError,omitempty"`
	// ConsecutiveFailures counts the evaluations in a row that failed
	// (a target unreadable, a condition failing): the next one is tried
	// after a backoff growing from seconds to minutes, never later than
	// retry.period. 0 after an evaluation that succeeded.
	ConsecutiveFailures int `json:"consecutiveFailures,omitempty"`
}

// CleanerEvaluation is one evaluation of a Cleaner's conditions.
type CleanerEvaluation struct {
	Time time.Time `json:"time"`
	// Results holds one entry per condition, in order (conditions after
	// the first false or failed one are still evaluated).
	Results []ConditionResult `json:"results,omitempty"`
	// Error is the first failure, naming its condition; empty when every
	// condition gave a boolean.
	Error string `json:"error,omitempty"`
	// Search says why the monotonic search for the earliest time every
	// condition holds found none (beyond its horizon, over its time limit,
	// a condition that failed at a time searched), so that retry.period
	// applies; empty when it found one or none was made.
	Search string `json:"search,omitempty"`
	// WouldDelete lists, for a dryRun Cleaner, the objects it would have
	// deleted at this evaluation ("Kind/name": targets, then objects
	// beyond the capacity); the Cleaner itself is not listed.
	WouldDelete []string `json:"wouldDelete,omitempty"`
	// Kept lists the objects spared because they carry cairn.dev/keep
	// ("Kind/name").
	Kept []string `json:"kept,omitempty"`
}

// ConditionResult is the outcome of one condition.
type ConditionResult struct {
	// Index is the condition's position in spec.conditions.
	Index int `json:"index"`
	// Value is the condition's value; absent when it failed.
	Value *bool `json:"value,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
}
