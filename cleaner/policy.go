package cleaner

import (
	"slices"
	"strings"
	"time"

	"cairn.dev/cairn/api"
)

// The policies of a Cleaner besides its TTL and conditions (DESIGN.md,
// "Cleaner model"): the keep annotation, the capacity, dry runs, the time
// of a target's last change, and the backoff of failed evaluations. Each
// is a plain function over plain data.

// Kept reports whether o carries cairn.dev/keep: "true", which keeps
// every Cleaner from deleting it.
func Kept(o *api.Object) bool {
	return o != nil && o.Annotations[api.AnnotationKeep] == "true"
}

// CapacityItem is one object a capacity selector matched.
type CapacityItem struct {
	Name    string
	UID     string
	Created time.Time
	// Deleting objects do not count; Keep ones count but stay.
	Deleting, Keep bool
}

// OverCapacity chooses what a capacity of max deletes among items: the
// live objects (those not being deleted) beyond max, the oldest first
// (creation time, then name), skipping those that carry the keep
// annotation (returned as kept: they count, and stay). It deletes no
// more than the live count exceeds max, so an object kept makes an older
// or newer one go in its place only when it is among the excess.
func OverCapacity(items []CapacityItem, max int) (del, kept []CapacityItem) {
	live := make([]CapacityItem, 0, len(items))
	for _, it := range items {
		if !it.Deleting {
			live = append(live, it)
		}
	}
	excess := len(live) - max
	if excess <= 0 {
		return nil, nil
	}
	slices.SortFunc(live, func(a, b CapacityItem) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, it := range live {
		if len(del) == excess {
			break
		}
		if it.Keep {
			kept = append(kept, it)
			continue
		}
		del = append(del, it)
	}
	return del, kept
}

// LastChangeTime is an object's lastChangeTime: the time of its last
// write besides its status, as far as cairn knows. That is the latest of
// its creation, the times of its managed fields entries (but those of the
// status), and observed (the last change the controller saw, zero when
// none). An object with no managed fields has no durable record of its
// writes: its last change counts as no earlier than since (when the
// controller started watching its kind), so that a restart never makes
// an object look inactive for longer than it was.
func LastChangeTime(o *api.Object, observed, since time.Time) time.Time {
	t := o.CreationTimestamp
	later := func(u time.Time) {
		if u.After(t) {
			t = u
		}
	}
	later(observed)
	if len(o.ManagedFields) == 0 {
		later(since)
	}
	for _, e := range o.ManagedFields {
		if e.Subresource != "status" && e.Time != nil {
			later(e.Time.Time)
		}
	}
	return t.UTC()
}

// specChanged reports whether an update of an object changed more than
// its status: its generation (its desired state), labels or annotations.
func specChanged(old, o *api.Object) bool {
	if old == nil || o == nil {
		return false
	}
	return old.Generation != o.Generation || !mapsEqual(old.Labels, o.Labels) || !mapsEqual(old.Annotations, o.Annotations)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// The backoff of failed evaluations.
const (
	// FailureBackoffBase is the delay after the first failed evaluation.
	FailureBackoffBase = 5 * time.Second
	// FailureBackoffMax bounds the delay after many failures in a row.
	FailureBackoffMax = 10 * time.Minute
)

// FailureBackoff is the delay before evaluating again after failures
// failed evaluations in a row (1 for the first): FailureBackoffBase
// doubled with each further failure, at most FailureBackoffMax, and never
// more than period (retry.period).
func FailureBackoff(failures int, period time.Duration) time.Duration {
	d := FailureBackoffBase
	for i := 1; i < failures && d < FailureBackoffMax; i++ {
		d *= 2
	}
	return min(d, FailureBackoffMax, period)
}

// Announcement is one Event a Cleaner emits: a deletion or, in a dry run,
// a would-be deletion.
type Announcement struct {
	Type string // EventTypeDeleted or EventTypeWouldDelete
	Kind string
	Name string
}

// The Events a Cleaner emits by fan-out in its namespace.
const (
	// EventSource is the source of a Cleaner's Events.
	EventSource = "cairn.dev/cleaner"
	// EventTypeDeleted: the Cleaner deleted an object.
	EventTypeDeleted = "deleted"
	// EventTypeWouldDelete: a dryRun Cleaner would have deleted an
	// object.
	EventTypeWouldDelete = "would-delete"
)

// newlyWouldDelete returns what a dry run announces: the objects it would
// delete now that the previous evaluation did not list (so a Cleaner
// evaluated again and again announces each object once).
func newlyWouldDelete(prev, now []string) []string {
	var out []string
	for _, r := range now {
		if !slices.Contains(prev, r) {
			out = append(out, r)
		}
	}
	return out
}

// cleanerEvent is the Event announcing a of the Cleaner named cleaner,
// to be created by fan-out (no project) in namespace ns. Errors: the Event
// does not encode (never, for these strings).
func cleanerEvent(ns, cleaner string, a Announcement) (*api.Object, error) {
	ev := &api.Event{
		TypeMeta:   api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: ns, GenerateName: "cleaner-"},
		Spec: api.EventSpec{Source: EventSource, Type: a.Type,
			Labels:     map[string]string{"cleaner": cleaner, "kind": a.Kind, "name": a.Name},
			ShortTitle: a.Type + " " + a.Kind + "/" + a.Name + " (Cleaner " + cleaner + ")"},
	}
	return api.FromResource(ev)
}
