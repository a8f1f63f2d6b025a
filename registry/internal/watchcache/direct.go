package watchcache

import (
	"context"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// The steps of directWatcher.run.

// nextFirst reads the next event of the initial list: its next object as
// ADDED, and after the last one the end bookmark (w.end; nil when there is
// none), with initial set to nil. It blocks on initial's store reads.
// Errors: those of nextInitial, which end the watch.
func (w *directWatcher) nextFirst(ctx context.Context, initial Initial) (*api.ObjectEvent, Initial, error) {
	obj, ok, err := w.nextInitial(ctx, initial)
	switch {
	case err != nil:
		return nil, initial, err
	case ok:
		return &api.ObjectEvent{Type: api.Added, Object: obj}, initial, nil
	}
	if w.end != nil {
		return &api.ObjectEvent{Type: api.Bookmark, Object: w.end}, nil, nil
	}
	return nil, nil, nil
}

// receive queues what ev, read from etcd at now, shows the client: a
// bookmark, or a change its selection sees. Progress notifications become
// bookmarks no more often than markEvery (marked: when one last did). It
// does not block. It returns false when the watch must end, w.err telling
// why: ev is an error, or the client is too far behind (behind).
func (w *directWatcher) receive(ev store.Event, now time.Time, marked *time.Time) bool {
	if ev.Type == store.EventProgress {
		// Answers to liveness checks become bookmarks no more
		// often than bookmarks are asked for.
		if now.Sub(*marked) < markEvery(w.interval) {
			return true
		}
		*marked = now
	}
	e := newEntry(w.src, ev, nil)
	w.read.seq++
	w.read.before += e.size
	switch {
	case e.bookmark != nil:
		w.enqueue(api.ObjectEvent{Type: api.Bookmark, Object: e.bookmark}, e.size)
	case e.err != nil:
		w.err = w.mapErr(e.err)
		return false
	default:
		if out, visible := e.event(w.sel); visible {
			w.enqueue(out, e.size)
		}
	}
	return !w.behind()
}
