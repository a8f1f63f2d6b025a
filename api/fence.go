package api

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// Fence conditions a write on a leadership term: the write commits only
// if, in the same store transaction, the Lease named Lease (with uid UID:
// a deleted and re-created Lease is another) is still held by Holder in
// the term that began when Holder acquired it with leaseTransitions Term.
// A controller manager fences every write its controllers make while it
// leads, so that the writes of a leader that lost its Lease fail (a
// NotLeader Conflict, see NewNotLeader) instead of racing the new
// leader's. A fence only restricts the writes that carry it.
type Fence struct {
	Lease  string
	UID    string
	Holder string
	Term   int
}

// HeaderFence is the HTTP request header that carries a Fence (see
// Fence.Header): a write sent with it commits only while the fence holds.
const HeaderFence = "Cairn-Fence"

// CauseNotLeader is the StatusCause type of a write refused because its
// fence no longer holds.
const CauseNotLeader = "NotLeader"

// HeldBy reports whether the record spec of the Lease with uid uid is
// still in f's term: the same Lease object, the same holder, the same
// count of transitions.
func (f Fence) HeldBy(uid string, spec LeaseSpec) bool {
	return f.Holder != "" && uid == f.UID && spec.HolderIdentity == f.Holder && spec.LeaseTransitions == f.Term
}

// String names the term for messages: `Lease "controllers" term 7 of
// https://a:7070`.
func (f Fence) String() string {
	return fmt.Sprintf("Lease %q term %d of %s", f.Lease, f.Term, f.Holder)
}

// Header is the value of HeaderFence for f: its fields as URL query
// parameters (lease, uid, holder, term).
func (f Fence) Header() string {
	return url.Values{"lease": {f.Lease}, "uid": {f.UID}, "holder": {f.Holder}, "term": {strconv.Itoa(f.Term)}}.Encode()
}

// ParseFence reads the value of a HeaderFence. Errors: BadRequest when it
// lacks a field or its term is not a number.
func ParseFence(v string) (Fence, error) {
	q, err := url.ParseQuery(v)
	if err != nil {
		return Fence{}, NewBadRequest("header %s: %v", HeaderFence, err)
	}
	f := Fence{Lease: q.Get("lease"), UID: q.Get("uid"), Holder: q.Get("holder")}
	term, err := strconv.Atoi(q.Get("term"))
	if err != nil || term < 0 || f.Lease == "" || f.UID == "" || f.Holder == "" {
		return Fence{}, NewBadRequest("header %s must be lease=NAME&uid=UID&holder=ID&term=N, got %q", HeaderFence, v)
	}
	f.Term = term
	return f, nil
}

type fenceKey struct{}

// WithFence returns ctx carrying f: every write made with it (through the
// in-process client, the HTTP client, or the registry itself) is fenced by
// f.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the fence ctx carries, if any.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}

// NewNotLeader is the error of a write whose fence f no longer holds: the
// Lease is now held by holder ("" when released or deleted). It is a
// Conflict (HTTP 409) about the Lease, with one cause of type
// CauseNotLeader.
func NewNotLeader(f Fence, holder string) *Status {
	now := "released"
	if holder != "" {
		now = "held by " + holder
	}
	msg := fmt.Sprintf("not the leader any more: Lease %q is %s (this write was fenced by term %d of %s)", f.Lease, now, f.Term, f.Holder)
	st := NewStatus(ReasonConflict, "%s", msg)
	st.Details = &StatusDetails{Kind: KindLease, Name: f.Lease, Causes: []StatusCause{{Type: CauseNotLeader, Message: msg}}}
	return st
}

// IsNotLeader reports whether err is, or wraps, a write refused because
// its fence no longer holds (NewNotLeader), whether it was made in-process
// or over HTTP.
func IsNotLeader(err error) bool {
	var st *Status
	if !errors.As(err, &st) || st.Reason != ReasonConflict || st.Details == nil {
		return false
	}
	for _, c := range st.Details.Causes {
		if c.Type == CauseNotLeader {
			return true
		}
	}
	return false
}
