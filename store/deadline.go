package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// How the store bounds the calls of API requests.
//
// A request's context carries a store timeout (WithTimeout): every call of
// the Store made with that context ends within the timeout, whatever etcd
// does, and fails fast (ErrUnavailable) on a member that has no leader
// instead of waiting for one (clientv3.WithRequireLeader). Reads, which
// change nothing, are retried inside the call while time remains: an
// attempt that finds etcd unavailable, or that gets no answer within half
// of the timeout (its connection may be black-holed), is sent again after
// a short jittered backoff, so that losing one member or the etcd leader
// costs a read latency, not an error. (A slow read is not cut sooner: on an
// overloaded etcd, retries would multiply its load; a member that dies or
// loses its leader fails its reads at once.) A read that has not succeeded
// when the timeout passes fails with ErrUnavailable.
//
// A transaction is sent once: whether a retry is safe depends on its
// conditions, which only its caller knows (the registry retries those whose
// compare-and-swap makes a retry harmless). Callers that retry bound each
// attempt with Attempt and the whole operation with Deadline.
//
// Without a store timeout in the context a call waits as long as the
// context allows and is not retried, as etcd's client does.

// DefaultTimeout is the store timeout of API requests unless configured
// otherwise (server.Options.StoreTimeout).
const DefaultTimeout = 5 * time.Second

// minAttemptTimeout bounds the time of one attempt from below.
const minAttemptTimeout = 250 * time.Millisecond

// Backoff between the attempts of a retried call: a random duration below
// retryBackoff·2^attempt, capped at maxRetryBackoff.
const (
	retryBackoff    = 20 * time.Millisecond
	maxRetryBackoff = 500 * time.Millisecond
)

type timeoutKey struct{}

// WithTimeout returns ctx carrying the store timeout d (d <= 0: none). The
// Store bounds every call made with it by d from the call's start (and by
// ctx's own deadline, when earlier) and retries reads within that time.
func WithTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, timeoutKey{}, d)
}

// TimeoutOf returns the store timeout ctx carries, 0 for none.
func TimeoutOf(ctx context.Context) time.Duration {
	d, _ := ctx.Value(timeoutKey{}).(time.Duration)
	return d
}

// Deadline bounds ctx by its store timeout from now: the deadline of an
// operation made of several calls and retries (a registry write), within
// which each call then fits. Without a store timeout it returns ctx. Call
// the returned function when the operation ends.
func Deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	d := TimeoutOf(ctx)
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// AttemptTimeout is how long one attempt of a transaction that its caller
// retries may wait for etcd under the store timeout d: a quarter of it, at
// least 250ms, at most d. An attempt that takes longer has likely lost its
// leader: a proposal forwarded to a leader that died is never answered
// (etcd itself gives up after 7s), and the caller does better to find out
// whether it was applied and send it again to the new leader.
func AttemptTimeout(d time.Duration) time.Duration {
	return min(d, max(d/4, minAttemptTimeout))
}

// Attempt bounds one attempt of an operation that its caller retries by
// AttemptTimeout of ctx's store timeout. Without a store timeout it
// returns ctx.
func Attempt(ctx context.Context) (context.Context, context.CancelFunc) {
	d := TimeoutOf(ctx)
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, AttemptTimeout(d))
}

// Backoff waits before retry number attempt+1 of a call (a random duration
// below 20ms·2^attempt, at most 500ms). It returns false, at once, when
// ctx ends first.
func Backoff(ctx context.Context, attempt int) bool {
	d := min(maxRetryBackoff, retryBackoff<<min(attempt, 10))
	t := time.NewTimer(rand.N(d) + time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// bound is the context of one call: ctx bounded by its store timeout, and
// requiring a leader, when it carries one.
func bound(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	d := TimeoutOf(ctx)
	if d <= 0 {
		return ctx, func() {}, 0
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	return clientv3.WithRequireLeader(ctx), cancel, d
}

// read runs one read of etcd, f, and classifies its failure: with a store
// timeout in ctx, retried while etcd is unavailable (see above), each
// attempt bounded by half the timeout. A read that did not complete in time
// fails with ErrUnavailable: nothing was changed, and etcd did not answer.
// The caller ending ctx itself (a cancellation) is ErrUnavailable too,
// wrapping ctx's error.
func (s *Store) read(ctx context.Context, f func(context.Context) error) error {
	if err := s.closed(); err != nil {
		return err
	}
	cctx, cancel, d := bound(ctx)
	defer cancel()
	if d <= 0 {
		return s.classifyRead(f(ctx))
	}
	for attempt := 0; ; attempt++ {
		actx, acancel := context.WithTimeout(cctx, max(d/2, minAttemptTimeout))
		err := f(actx)
		acancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return s.classifyRead(ctx.Err())
		}
		err = s.classifyRead(err)
		if !errors.Is(err, ErrUnavailable) {
			return err
		}
		if !Backoff(cctx, attempt) || ctx.Err() != nil {
			return fmt.Errorf("%w: no answer within the store timeout of %s (%d attempts; last: %w)", ErrUnavailable, d, attempt+1, err)
		}
	}
}

// classifyRead is classify for a read: a read has no outcome to be unsure
// of, so a timeout (etcd's, or a deadline) is ErrUnavailable.
func (s *Store) classifyRead(err error) error {
	if err == nil {
		return nil
	}
	if isTimeout(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return s.classify(err)
}
