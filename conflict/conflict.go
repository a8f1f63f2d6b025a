// Package conflict runs a read-modify-write again when it lost a race: the
// one way cairn's controllers and services meet a Conflict (a
// resourceVersion compare-and-swap that failed because someone else wrote
// the object in between). It is client-go's retry.RetryOnConflict with
// controller-runtime's CreateOrPatch shape (Modify: read, change, write,
// and again on Conflict), with one limit and one pace for every caller:
// at most Attempts attempts, Interval apart (jittered by a tenth).
//
// Only a Conflict is retried here, and only a few times at once: a caller
// that gives up returns the Conflict, and a controller then retries its key
// with its work queue's backoff.
package conflict

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"cairn.dev/cairn/api"
)

const (
	// Attempts bounds the attempts of one read-modify-write: the first
	// and the retries after a Conflict.
	Attempts = 10
	// Interval is the pause between two attempts (±10%): as client-go's
	// retry.DefaultRetry, so that a few writers racing on one object
	// (a controller and an annotation, the observer and a cancel) take
	// turns within a tenth of a second.
	Interval = 10 * time.Millisecond
)

// backoff is the pace of Retry: Attempts steps, Interval apart.
func backoff() wait.Backoff {
	return wait.Backoff{Steps: Attempts, Duration: Interval, Factor: 1, Jitter: 0.1}
}

// Is reports whether err is a Conflict (errors.Is(err, api.ErrConflict)).
func Is(err error) bool { return errors.Is(err, api.ErrConflict) }

// Retry runs fn, and again while it returns a Conflict, at most Attempts
// times in all (see RetryIf). fn must read afresh what it changes: it is
// the whole read-modify-write, not the write alone.
func Retry(ctx context.Context, fn func() error) error {
	return RetryIf(ctx, Is, fn)
}

// RetryIf runs fn, and again while it returns an error retriable accepts,
// at most Attempts times in all, Interval apart. It blocks for fn's calls
// and the pauses (at most about Attempts×Interval besides them). It
// returns nil once fn does; fn's first error retriable refuses; the last
// retriable error once the attempts are spent; or, when ctx is done
// between two attempts, fn's last error (no further attempt is made).
func RetryIf(ctx context.Context, retriable func(error) bool, fn func() error) error {
	return retry.OnError(backoff(), func(err error) bool {
		return ctx.Err() == nil && retriable(err)
	}, fn)
}

// Modify is a read-modify-write of one object, retried on Conflict: it
// takes first (a private copy: it is changed in place; the zero T to
// start from a read) or else reads the object with get, lets change
// change it, and writes it with write (a compare-and-swap on the
// resourceVersion read). When the write answers Conflict, it reads the
// object again with get and changes it again, as Retry paces it.
//
// change reports whether there is anything to write: false ends Modify
// without a write, answering the object as read. An error of change
// ends Modify too, returned as it is (a Conflict of change's is not
// retried: change says the object is no longer the one to change).
// get's errors are returned as they are, NotFound included: the caller
// decides whether an object gone is an error. It blocks on the reads and
// writes; out is what write answered (or, without a write, the object
// read), and wrote whether a write succeeded.
func Modify[T comparable](ctx context.Context, first T,
	get func(context.Context) (T, error),
	change func(T) (bool, error),
	write func(context.Context, T) (T, error)) (out T, wrote bool, err error) {
	var zero T
	obj := first
	var stop error
	err = Retry(ctx, func() error {
		if obj == zero {
			var gerr error
			if obj, gerr = get(ctx); gerr != nil {
				stop = gerr
				return nil
			}
		}
		ok, cerr := change(obj)
		if cerr != nil || !ok {
			out, stop = obj, cerr
			return nil
		}
		res, werr := write(ctx, obj)
		if werr != nil {
			obj = zero // read again before the next attempt
			return werr
		}
		out, wrote = res, true
		return nil
	})
	if err == nil {
		err = stop
	}
	if err != nil {
		return zero, false, err
	}
	return out, wrote, nil
}
