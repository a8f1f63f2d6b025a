package watchcache

import (
	"context"
	"errors"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// The steps of Cache.run.

// closing ends the cache's watchers because the cache is closing.
func (c *Cache) closing() {
	c.stop(api.NewStatus(api.ReasonUnavailable, "the watch cache is closing: watch again"))
}

// silent ends the cache's watchers because etcd stopped answering
// (liveness.go).
func (c *Cache) silent() {
	c.opts.Logger.Warn("registry: watch cache: etcd does not answer; ending its watchers", "kind", c.src.Kind)
	c.stop(errStoreSilent(c.opts.StoreTimeout))
}

// rewatch follows the etcd watch sw, whose event channel closed, with a
// new one from c.rev+1 after backoff (doubled for the next time, up to 5 s
// and live's interval), and returns it; the caller closes it. It blocks
// for the backoff. It returns false, having stopped the cache with the
// reason, when the watch cannot go on: ctx ended (closing), the revision
// was compacted (Gone), the store's client is closed, or etcd is silent
// (live).
func (c *Cache) rewatch(ctx context.Context, sw *store.Watch, live *liveness, backoff *time.Duration) (*store.Watch, bool) {
	err := sw.Err()
	switch {
	case ctx.Err() != nil:
		c.closing()
		return nil, false
	case errors.Is(err, store.ErrCompacted):
		c.stop(api.NewExpired("the watch cache fell behind a compaction: %v; list again", err))
		return nil, false
	case c.store.Client().Ctx().Err() != nil:
		c.stop(api.NewStatus(api.ReasonUnavailable, "the store is closed"))
		return nil, false
	}
	if _, dead := live.check(time.Now()); dead {
		c.silent()
		return nil, false
	}
	c.opts.Logger.Warn("registry: watch cache: etcd watch ended; restarting", "kind", c.src.Kind, "err", err)
	select {
	case <-ctx.Done():
		c.closing()
		return nil, false
	case <-time.After(*backoff):
	}
	*backoff = min(2**backoff, 5*time.Second, live.interval())
	c.mu.RLock()
	from := c.rev + 1
	c.mu.RUnlock()
	sw.Close()
	return c.store.Watch(ctx, c.src.Prefix, from), true
}

// collect appends to batch the entries of ev and of the events sw has
// ready after it, up to maxBatch in all, and returns it; it does not
// block. Progress notifications become bookmarks no more often than
// markEvery (marked: when one last did, at now). Only run calls it: it
// notes the entries' keys in c.latest.
func (c *Cache) collect(sw *store.Watch, ev store.Event, now time.Time, marked *time.Time, batch []*entry) []*entry {
	keep := func(ev store.Event) {
		if ev.Type == store.EventProgress {
			// Answers to liveness checks become bookmarks no
			// more often than bookmarks are asked for.
			if now.Sub(*marked) < markEvery(c.opts.BookmarkInterval) {
				return
			}
			*marked = now
		}
		e := newEntry(&c.src, ev, c.latest)
		c.noteLatest(e)
		batch = append(batch, e)
	}
	keep(ev)
	for len(batch) < maxBatch {
		select {
		case ev, ok := <-sw.Events():
			if !ok {
				return batch // the next receive reports it
			}
			keep(ev)
		default:
			return batch
		}
	}
	return batch
}
