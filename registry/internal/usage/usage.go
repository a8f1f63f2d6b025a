// Package usage counts, per namespace, the objects of every namespaced kind
// and the bytes of their stored encodings, and refuses writes that would
// take a namespace over its limits.
//
// # How it counts
//
// A Tracker keeps in memory, for every object key, the size and mod
// revision of the newest version it knows, and per namespace the sums over
// its live keys. Start builds it from a paginated list of the objects'
// prefix at one revision; from there an etcd watch of the prefix delivers
// every later write, including other servers', in revision order. This
// server's own commits are applied at once, as they succeed (Reserve, then
// Reservation.Commit with the revision), so its next write sees them
// without waiting for the watch. A version is applied only when it is newer
// than the one known for its key, so the watch delivering a commit already
// applied, or an older version after a newer one, changes nothing; a
// deletion applied ahead of the watch stays as a tombstone until the watch
// passes its revision. Each namespace's count is therefore the sum of the
// newest sizes known, whatever the order in which the versions arrived.
//
// The Namespace objects are in the same prefix: the watch also keeps each
// namespace's declared limits, which are therefore known without a read.
//
// This was chosen over counters stored in etcd (every create would then
// write one shared key, and concurrent creates in a namespace would
// conflict) and over reading the namespace's objects on each write (linear
// in its size).
//
// # Memory
//
// A key is held as a 16-byte hash (see keyHash) with a 16-byte entry:
// 40 to 90 bytes per object in Go's map, depending on how full it is
// (83 MB measured for a million objects), plus a few dozen bytes per
// namespace. The list reads the values
// (etcd cannot return sizes alone) a page at a time, its page size adapted
// to the largest value seen so far (see listPage).
//
// # Overshoot
//
// Reserve checks a write against the namespace's usage plus what writes
// in flight in this server have reserved, and reserves the write's growth
// until it commits or fails, under one lock: the writes of one server never
// take a namespace over a limit together. Several servers sharing one etcd
// see each other's writes only through the watch, usually milliseconds
// late: a namespace can then exceed a limit by what the other servers
// commit to it within that delay, and never by more than (servers - 1) ×
// the limit, since each server's own live writes stay within it. The same
// holds briefly after the watch had to be rebuilt (Start's list again,
// after its revision was compacted) and for a write whose outcome the store
// could not tell (a timeout): its reservation is released and the watch
// counts it if it was applied.
package usage

import (
	"fmt"
	"strings"
)

// Unset marks a declared limit left to the default; as a default or an
// effective limit, it means none.
const Unset = -1

// Limits bound a namespace's objects and bytes; Unset for a bound not set.
type Limits struct {
	Objects, Bytes int64
}

// Change is one key a commit writes.
type Change struct {
	// Key is the object's key.
	Key string
	// Size is the stored value's length (not read when Deleted).
	Size int64
	// Deleted reports that the commit removes the key.
	Deleted bool
	// Exempt changes are counted and reserved but never refused (a
	// deletion mark, a write to an object being deleted).
	Exempt bool
	// Limits are a Namespace object's declared limits.
	Limits Limits

	// ns is the namespace the key counts in (for a Namespace object, its
	// name); namespace reports a Namespace object. Set by classify.
	ns        string
	namespace bool
}

// ExceededError is a write refused because it would take a namespace over
// one of its limits.
type ExceededError struct {
	Namespace string
	// Resource is "objects" or "bytes".
	Resource string
	// Limit is the limit in force; Default reports that the Namespace does
	// not declare it (the server's default applies).
	Limit   int64
	Default bool
	// Usage is what the namespace holds, with the writes in flight in this
	// server; Adds is what the refused write adds.
	Usage, Adds int64
}

// Field is the field of the Namespace that declares the limit.
func (e *ExceededError) Field() string { return "spec.limits." + e.Resource }

func (e *ExceededError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "namespace %q has reached its limit of %d %s (%s", e.Namespace, e.Limit, e.Resource, e.Field())
	if e.Default {
		b.WriteString(" is unset: the server's default applies")
	}
	unit := ""
	if e.Resource == "bytes" {
		unit = " bytes"
	}
	fmt.Fprintf(&b, "): it holds %d%s and this write adds %d", e.Usage, unit, e.Adds)
	return b.String()
}

// Report is a namespace's usage as a Tracker counts it.
type Report struct {
	Objects, Bytes int64
	// Limits are the limits in force (Unset: none).
	Limits Limits
	// Revision: every change up to it is counted (and this server's own
	// commits after it).
	Revision int64
}
