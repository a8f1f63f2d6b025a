package controller

import (
	"context"
	"errors"
	"time"
)

// Reconciler makes the world match what the API declares, for one object at
// a time.
//
// Reconcilers are level-based, not edge-based: Reconcile receives only a key
// ("namespace/name", see api.Key), never the event that caused it. It must
// re-read the current state (from an informer cache or the API), act on the
// difference between desired and observed state, and return. Events for one
// key may be coalesced, and a key may be reconciled again with nothing
// changed (after a resync or a restart), so Reconcile must be idempotent.
//
// The controller never calls Reconcile for the same key from two workers at
// once. ctx is cancelled when the controller stops; Reconcile should return
// promptly then. With Options.Traces set, ctx carries a trace recorder:
// the reconciler names the object it handles (trace.Object) and records its
// steps (trace.Check, trace.Exit, trace.Subflow, trace.Action), which
// `cairn explain` shows.
//
// Returning a nil error forgets the key's failure history; with
// Result.RequeueAfter > 0 the key is reconciled again after that delay.
// Returning an error retries the key with the rate limiter's backoff, unless
// the error is marked with Terminal, in which case it is only logged.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc adapts a function to the Reconciler interface.
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

// Reconcile calls f(ctx, key).
func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Result tells the controller what to do with a key after a successful
// Reconcile.
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after this
	// delay (for timeouts, TTLs and polling). Zero means "done until the
	// next event". It is ignored when Reconcile returns an error.
	RequeueAfter time.Duration
}

// terminalError marks an error that retrying cannot fix.
type terminalError struct{ err error }

func (t *terminalError) Error() string { return t.err.Error() }
func (t *terminalError) Unwrap() error { return t.err }

// Terminal marks err as not retryable: when Reconcile returns it (possibly
// wrapped), the controller logs it and forgets the key instead of retrying
// with backoff. Use it for errors that only a change of the object can fix,
// such as an invalid spec; the next event for the object reconciles it
// again. Terminal(nil) returns nil.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or any error it wraps, was marked with
// Terminal.
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}
