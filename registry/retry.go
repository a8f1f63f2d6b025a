package registry

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"cairn.dev/cairn/api"
)

// How writes that lost a race are retried (run, in commit.go).
//
// A write without a resourceVersion (Update, UpdateStatus, a Patch that
// does not set one, a Txn item without one) applies to the latest
// version: when
// another write commits between its read and its commit, it reads again
// and retries, with a jittered backoff, until it commits, the caller's ctx
// ends (Timeout), or maxUnconditionalAttempts races are lost (Conflict).
// Within one process such writes to the same object also wait for each
// other (keyLocks), so that they commit one after another instead of
// failing each other's compare-and-swap; writers in other processes (other
// API servers on the same etcd) are met by the retries.
//
// A conditional write is retried only when its first (serializable) read
// was stale or a guard (a new owner, the namespace) moved, at most
// maxUpdateAttempts times; a resourceVersion that is not current is a
// Conflict at once.
const (
	// maxUpdateAttempts bounds the retries of a conditional update or
	// delete (and of a Txn as a whole) whose guards moved.
	maxUpdateAttempts = 16
	// maxUnconditionalAttempts bounds the retries of a write without a
	// resourceVersion: generous, since each lost race means another write
	// to the object did commit; with the backoff below it spans seconds.
	maxUnconditionalAttempts = 100
	// retryBackoff and maxRetryBackoff shape the wait before a retry: a
	// random duration below retryBackoff·2^(attempt-1), capped at
	// maxRetryBackoff. The first retry does not wait (it usually follows a
	// stale read, not a race).
	retryBackoff    = time.Millisecond
	maxRetryBackoff = 50 * time.Millisecond
)

// pause waits before retry number attempt+1 of a write. It returns a
// Timeout, the write not applied, when ctx ends first.
func pause(ctx context.Context, attempt int) error {
	if attempt == 0 {
		if ctx.Err() != nil {
			return notApplied()
		}
		return nil
	}
	d := min(maxRetryBackoff, retryBackoff<<min(attempt-1, 16))
	t := time.NewTimer(rand.N(d) + 1)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return notApplied()
	}
}

// notApplied is the error of a write whose caller gave up (ctx ended) while
// it waited for its turn or for a retry: nothing was written.
func notApplied() error {
	return api.NewStatus(api.ReasonTimeout, "the request ended before the write could be applied: the object kept changing; nothing was written")
}

// keyLocks serializes the unconditional writes of one process to the same
// object: a lock per store key, created on first use and dropped when no
// writer holds or waits for it, so that writes to different objects share
// nothing but a short critical section. The zero value is ready to use.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

// keyLock is the lock of one key: a token in a one-slot channel, so that
// waiting for it can be abandoned when a context ends.
type keyLock struct {
	token chan struct{}
	refs  int // writers holding or waiting for it, under keyLocks.mu
}

// heldKeys is the context key under which lock records the keys whose
// locks the write that carries the context holds.
type heldKeys struct{}

// lock takes the locks of keys, in sorted order (so that two callers never
// wait for each other crosswise), and returns a context derived from ctx
// that records them, and the function that releases them all. A key whose
// lock ctx already records is skipped: a write made while planning
// another (which kind hooks must not do, but a test's may) does not wait
// for itself. It blocks until it holds every lock or ctx ends; then it
// releases those it took and returns notApplied. keys must be distinct.
func (l *keyLocks) lock(ctx context.Context, keys []string) (context.Context, func(), error) {
	held, _ := ctx.Value(heldKeys{}).([]string)
	if len(held) > 0 {
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(held, k) })
	}
	if len(keys) == 0 {
		return ctx, func() {}, nil
	}
	if len(keys) > 1 {
		keys = slices.Sorted(slices.Values(keys))
	}
	locked := make([]*keyLock, 0, len(keys))
	unlock := func() {
		for i := len(locked) - 1; i >= 0; i-- {
			<-locked[i].token
			l.release(keys[i], locked[i])
		}
	}
	for _, key := range keys {
		k := l.acquire(key)
		select {
		case k.token <- struct{}{}:
			locked = append(locked, k)
		case <-ctx.Done():
			l.release(key, k)
			unlock()
			return nil, nil, notApplied()
		}
	}
	return context.WithValue(ctx, heldKeys{}, append(slices.Clip(held), keys...)), unlock, nil
}

// acquire returns the lock of key, counting the caller among its users.
func (l *keyLocks) acquire(key string) *keyLock {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = map[string]*keyLock{}
	}
	k := l.locks[key]
	if k == nil {
		k = &keyLock{token: make(chan struct{}, 1)}
		l.locks[key] = k
	}
	k.refs++
	return k
}

// release drops the caller from k's users, and k when it was the last.
func (l *keyLocks) release(key string, k *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.refs--; k.refs == 0 {
		delete(l.locks, key)
	}
}
