package gc

// The test kit shared by the package's internal and external tests (the
// exported names exist in test builds only).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

// WidgetKind is a namespaced test kind with no spec, served next to
// kinds.All(kinds.Deps{}) by the servers of the tests that use a Churn.
// testkit.Widget builds its objects.
const WidgetKind = testkit.KindWidget

// LabelChurn, set to "true" on a Widget, lets a Churn disturb its deletion.
const LabelChurn = "test.cairn.dev/churn"

type widget struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
}

// Churn makes the registry lose, for real, every race to mark a labelled
// Widget deleting: while its condition holds, each time the registry
// prepares the deletion mark of such a Widget, Churn first modifies that
// Widget through the registry (an annotation counter), so the guarded
// write that follows fails. Once the registry stops retrying, Delete
// answers Conflict ("the object keeps changing; retry").
type Churn struct {
	t   testing.TB
	reg atomic.Pointer[registry.Registry]

	mu   sync.Mutex
	cond func() bool

	// Writes counts the modifications made.
	Writes atomic.Int64
}

// NewChurn returns a Churn that does nothing until Start.
func NewChurn(t testing.TB) *Churn { return &Churn{t: t} }

// Kind returns the Widget kind whose deletions ch disturbs.
func (ch *Churn) Kind() registry.Kind {
	return registry.Define(registry.Spec[*widget]{Kind: WidgetKind, Namespaced: true,
		PrepareForDelete: ch.prepareForDelete})
}

// Start makes ch modify labelled Widgets through r while cond returns true.
func (ch *Churn) Start(r *registry.Registry, cond func() bool) {
	ch.mu.Lock()
	ch.cond = cond
	ch.mu.Unlock()
	ch.reg.Store(r)
}

// prepareForDelete is the Widget's hook. Unlike a real hook, it writes (a
// hook's Admission.Get cannot): through the registry, as the system.
func (ch *Churn) prepareForDelete(ctx context.Context, _ *registry.Admission, w *widget) error {
	r := ch.reg.Load()
	ch.mu.Lock()
	cond := ch.cond
	ch.mu.Unlock()
	if r == nil || w.Labels[LabelChurn] != "true" || !cond() {
		return nil
	}
	n := ch.Writes.Add(1)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d"}}}`, LabelChurn, n)
	if _, err := r.Patch(identity.With(ctx, identity.System()), WidgetKind, w.Namespace, w.Name, patch, false); err != nil {
		ch.t.Errorf("churn %s: %v", w.Name, err)
	}
	return nil
}

// ConflictCounter passes every call on to the client it embeds and counts
// the Conflicts its Deletes answered.
type ConflictCounter struct {
	client.Interface
	n atomic.Int64
}

// Delete calls the embedded client's Delete and counts a Conflict.
func (c *ConflictCounter) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	obj, gone, err := c.Interface.Delete(ctx, kind, ns, name, opts)
	if errors.Is(err, api.ErrConflict) {
		c.n.Add(1)
	}
	return obj, gone, err
}

// Conflicts returns the number of Conflicts answered so far.
func (c *ConflictCounter) Conflicts() int64 { return c.n.Load() }

// LogRecorder is a slog.Handler keeping every record, at every level.
type LogRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

// Enabled reports true for every level.
func (h *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps a copy of r.
func (h *LogRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// WithAttrs returns h: the records keep only their own attributes.
func (h *LogRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup returns h.
func (h *LogRecorder) WithGroup(string) slog.Handler { return h }

// Records returns the records with message msg, at any level.
func (h *LogRecorder) Records(msg string) []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Record
	for _, r := range h.recs {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

// Count returns how many records with message msg were logged at level.
func (h *LogRecorder) Count(level slog.Level, msg string) int {
	n := 0
	for _, r := range h.Records(msg) {
		if r.Level == level {
			n++
		}
	}
	return n
}

// Attr returns the value of r's attribute key, or the zero Value.
func Attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

// MsgRefused is the message of the log records of refused deletions.
const MsgRefused = msgRefused
