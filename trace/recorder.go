// Package trace records the steps controllers take while reconciling, so
// that `cairn explain KIND/NAME` (GET .../{plural}/{name}/trace) can say
// why an object is where it is.
//
// A Recorder collects the steps of one reconcile. The controller puts a
// fresh one on the context it passes to Reconcile (With); the reconciler
// names the object it is about (Object) and records its steps with Check,
// Exit, Subflow and Action. These functions are no-ops, and do not even
// format their message, when the context carries no Recorder, so
// reconcilers call them unconditionally. When Reconcile returns, the
// controller finishes the Recorder and adds the result to a Store, a
// bounded in-memory ring of the last reconciles per object.
//
// Messages must never contain secret values: pass names (of objects,
// fields, keys), phases, counts and reasons, never the value of a Secret
// or of any field a kind declares sensitive. Traces are shown to anyone
// who may read the object.
package trace

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"cairn.dev/cairn/api"
)

// Bounds of one reconcile's record.
const (
	// MaxSteps is the number of steps one reconcile keeps; later steps
	// are counted in TraceReconcile.Truncated and dropped.
	MaxSteps = 64
	// MaxMessageBytes bounds a step's message, and the error of a
	// reconcile; longer text is cut and ends with "…".
	MaxMessageBytes = 512
)

// Recorder collects the steps of one reconcile. It is safe for concurrent
// use: a reconciler may record from goroutines it fans out to. Steps
// recorded after Finish are ignored.
type Recorder struct {
	controller, key string
	now             func() time.Time
	start           time.Time

	mu        sync.Mutex
	ref       api.ObjectReference
	uid       string
	named     bool
	steps     []api.TraceStep
	truncated int
	finished  bool
}

// NewRecorder starts the record of one reconcile of key by controller;
// now is the clock (time.Now when nil), read once now for the start.
func NewRecorder(controller, key string, now func() time.Time) *Recorder {
	if now == nil {
		now = time.Now
	}
	return &Recorder{controller: controller, key: key, now: now, start: now()}
}

// recorderKey is the context key of the Recorder.
type recorderKey struct{}

// With returns a context carrying r; the package functions record on it. A
// nil r returns ctx unchanged.
func With(ctx context.Context, r *Recorder) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, recorderKey{}, r)
}

// From returns the Recorder ctx carries, or nil. Reconcilers rarely need
// it: the package functions are already no-ops without one. Use it to skip
// work done only to build a message.
func From(ctx context.Context) *Recorder {
	r, _ := ctx.Value(recorderKey{}).(*Recorder)
	return r
}

// Object names the object the reconcile is about: its trace is filed under
// kind, namespace ns (empty for cluster-scoped kinds) and name. A
// controller whose key is not "ns/name" of one kind (a uid, say) must call
// it for the reconcile to be stored. The last call wins.
func Object(ctx context.Context, kind, ns, name string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.finished {
			r.ref, r.named = api.ObjectReference{Kind: kind, Namespace: ns, Name: name}, true
		}
	}
}

// UID records the uid of the object the reconcile is about, so that its
// trace is not shown for a later object of the same name (see
// api.Trace.Of). Controllers built with a For kind find it in their cache
// when the reconciler does not call it; a reconciler keyed by uid, or that
// may delete its object, calls it. The last call wins.
func UID(ctx context.Context, uid string) {
	if r := From(ctx); r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.finished {
			r.uid = uid
		}
	}
}

// Check records a question asked of the world and its answer, e.g.
// Check(ctx, "sibling %s is %s", name, phase). The message is formatted
// as by fmt.Sprintf; it must name things, never carry secret values.
func Check(ctx context.Context, format string, args ...any) {
	record(ctx, api.StepCheck, format, args)
}

// Exit records where the reconcile stopped and why, e.g.
// Exit(ctx, "PendingDependencies: import %s waits for sibling %s (%s)", ...).
func Exit(ctx context.Context, format string, args ...any) {
	record(ctx, api.StepExit, format, args)
}

// Subflow records entering a named part of the reconcile's flow, e.g.
// Subflow(ctx, "deletion").
func Subflow(ctx context.Context, format string, args ...any) {
	record(ctx, api.StepSubflow, format, args)
}

// Action records a change the reconcile made, e.g.
// Action(ctx, "deleted %s %s", kind, name).
func Action(ctx context.Context, format string, args ...any) {
	record(ctx, api.StepAction, format, args)
}

func record(ctx context.Context, t api.StepType, format string, args []any) {
	if r := From(ctx); r != nil {
		r.Record(t, fmt.Sprintf(format, args...))
	}
}

// Record adds one step of type t. Past MaxSteps the step is only counted;
// after Finish it is ignored. It never blocks for long.
func (r *Recorder) Record(t api.StepType, msg string) {
	at := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.finished:
	case len(r.steps) >= MaxSteps:
		r.truncated++
	default:
		r.steps = append(r.steps, api.TraceStep{Type: t, Message: clip(msg), Time: at})
	}
}

// Finish ends the record: result says how the reconcile ended, for people
// ("done", "requeue in 5s", "failed: ..."), and err is what Reconcile
// returned. It returns the reconcile and the object it was about; ok is
// false when the reconciler never named its object (see Object), in which
// case the caller decides where to file it. Finishing twice returns the
// same record with a later end time; steps recorded after the first Finish
// are ignored.
func (r *Recorder) Finish(result string, err error) (ref api.ObjectReference, rec api.TraceReconcile, ok bool) {
	end := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = true
	rec = api.TraceReconcile{
		Controller: r.controller,
		Key:        r.key,
		UID:        r.uid,
		Start:      r.start,
		End:        end,
		Steps:      slices.Clone(r.steps),
		Result:     clip(result),
		Truncated:  r.truncated,
	}
	if err != nil {
		rec.Error = clip(err.Error())
	}
	return r.ref, rec, r.named
}

// clip cuts s to at most MaxMessageBytes, on a rune boundary, marking the
// cut with "…".
func clip(s string) string {
	if len(s) <= MaxMessageBytes {
		return s
	}
	const mark = "…"
	cut := MaxMessageBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// Round rounds d for people, as trace messages show durations: to 10ms
// from a second on ("4m59.99s", not "4m59.999999123s"), to the
// millisecond under a second, to the microsecond under a millisecond.
func Round(d time.Duration) time.Duration {
	switch a := d.Abs(); {
	case a >= time.Second:
		return d.Round(10 * time.Millisecond)
	case a >= time.Millisecond:
		return d.Round(time.Millisecond)
	default:
		return d.Round(time.Microsecond)
	}
}
