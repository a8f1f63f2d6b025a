package watchcache

import (
	"time"

	"cairn.dev/cairn/api"
)

// liveness tells a dead etcd watch from a quiet one. etcd's client keeps a
// watch whose member died and reconnects it silently, and a member that
// lost its quorum sends nothing: left alone, a watch goes silent for as
// long as an outage lasts. So a watch that has heard nothing from etcd (no
// event, no progress notification) for half of the store timeout asks for
// progress, which any member that serves answers at once, and keeps
// asking; one that then hears nothing for the store timeout more is dead.
// Its watchers are ended with ServiceUnavailable (errStoreSilent), and
// resume by watching again.
type liveness struct {
	timeout time.Duration
	heard   time.Time // when etcd was last heard from
	asked   time.Time // when progress was first asked for since; zero: not asked
}

func newLiveness(timeout time.Duration, now time.Time) liveness {
	return liveness{timeout: timeout, heard: now}
}

// interval is how often check should be called.
func (l *liveness) interval() time.Duration { return max(l.timeout/4, 10*time.Millisecond) }

// hear records that etcd sent something at now.
func (l *liveness) hear(now time.Time) { l.heard, l.asked = now, time.Time{} }

// check tells, at now, whether to ask etcd for progress, and whether the
// watch is dead.
func (l *liveness) check(now time.Time) (ask, dead bool) {
	if now.Sub(l.heard) < l.timeout/2 {
		return false, false
	}
	if l.asked.IsZero() {
		l.asked = now
	}
	return true, now.Sub(l.asked) >= l.timeout
}

// errStoreSilent is the error that ends the watchers of a dead etcd watch.
func errStoreSilent(timeout time.Duration) error {
	return api.NewUnavailable(1, "the store stopped answering the watch (no progress within %s: etcd has no quorum or cannot be reached): watch again from the last resourceVersion received", timeout)
}

// markEvery is the least time between two bookmarks made of progress
// notifications: the answers to liveness checks are not all passed on.
func markEvery(bookmarkInterval time.Duration) time.Duration { return bookmarkInterval / 2 }
