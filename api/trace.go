package api

import "time"

// KindTrace is the kind of the body of GET .../{plural}/{name}/trace. A
// Trace is not a stored kind: controllers keep traces in memory only.
const KindTrace = "Trace"

// ActionTrace is the name of the object endpoint that answers a Trace:
// GET .../{plural}/{name}/trace.
const ActionTrace = "trace"

// NewTrace returns the trace of ref with no reconciles: the answer for an
// object no controller has handled since the controllers started.
func NewTrace(ref ObjectReference) *Trace {
	return &Trace{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: KindTrace}, Object: ref,
		Reconciles: []TraceReconcile{}}
}

// Trace is what the controllers did about one object in its last
// reconciles: the answer to "why is this stuck?". Traces live in the memory
// of the controller process (the leader), are bounded, and are lost when it
// restarts.
type Trace struct {
	TypeMeta `json:",inline"`
	// Object is the object the reconciles were about.
	Object ObjectReference `json:"object"`
	// Reconciles are the last reconciles of the object, by any controller,
	// oldest first.
	Reconciles []TraceReconcile `json:"reconciles"`
}

// Of returns the trace of the incarnation of the object with uid uid,
// created at created: its reconciles that recorded uid, and those that
// recorded no uid but started after created. The reconciles of a
// predecessor of the same name (another uid, or none and older) are left
// out. An empty uid (the object is gone) keeps every reconcile. t is not
// modified.
func (t *Trace) Of(uid string, created time.Time) *Trace {
	out := *t
	if uid == "" {
		return &out
	}
	out.Reconciles = make([]TraceReconcile, 0, len(t.Reconciles))
	for _, r := range t.Reconciles {
		if r.UID == uid || (r.UID == "" && !r.Start.Before(created)) {
			out.Reconciles = append(out.Reconciles, r)
		}
	}
	return &out
}

// ObjectReference names one object by kind, namespace and name; Namespace
// is empty for cluster-scoped kinds.
type ObjectReference struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the reference as "Kind ns/name" (or "Kind name").
func (r ObjectReference) String() string { return r.Kind + " " + Key(r.Namespace, r.Name) }

// TraceReconcile is one call of a controller's Reconcile: the steps it took
// and how it ended.
type TraceReconcile struct {
	// Controller is the name of the controller that reconciled.
	Controller string `json:"controller"`
	// Key is the work queue key reconciled ("ns/name", or whatever the
	// controller keys its queue by, such as a uid).
	Key string `json:"key"`
	// UID is the uid of the object the reconcile was about, when the
	// controller knew it: a re-created object (same name, new uid) does
	// not inherit its predecessor's reconciles (see Trace.Of).
	UID   string    `json:"uid,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Steps are the steps recorded, in order.
	Steps []TraceStep `json:"steps"`
	// Result says how the reconcile ended, for people: "done",
	// "requeue in 5s", "failed: <error>", "panicked: <value>".
	Result string `json:"result"`
	// Error is the error Reconcile returned, if any.
	Error string `json:"error,omitempty"`
	// Truncated counts the steps dropped because the reconcile recorded
	// more than a trace keeps.
	Truncated int `json:"truncated,omitempty"`
}

// TraceStep is one step of a reconcile.
type TraceStep struct {
	Type StepType `json:"type"`
	// Message says what was checked, decided or done, naming objects and
	// fields but never secret values.
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// StepType is the kind of a trace step, in the vocabulary of the
// reconciliation flows cairn's controllers implement.
type StepType string

// The step types.
const (
	// StepCheck is a question the reconciler asked of the world ("is the
	// sibling ready?") and its answer.
	StepCheck StepType = "check"
	// StepExit is where the reconcile stopped and why ("import db waits
	// for sibling database").
	StepExit StepType = "exit"
	// StepSubflow is the reconciler entering a named part of its flow
	// ("deletion", "deploy items").
	StepSubflow StepType = "subflow"
	// StepAction is a change the reconciler made (a write, a process
	// started, an object deleted).
	StepAction StepType = "action"
)

// Symbol returns the mark printed before a step of this type: ❔ check,
// 🚪 exit, ↪ sub-flow, ✔️ action, and "•" for a type this version does not
// know (a newer controller may record more).
func (t StepType) Symbol() string {
	switch t {
	case StepCheck:
		return "❔"
	case StepExit:
		return "🚪"
	case StepSubflow:
		return "↪"
	case StepAction:
		return "✔️"
	default:
		return "•"
	}
}
