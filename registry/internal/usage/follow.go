package usage

import (
	"context"
	"errors"
	"time"

	"cairn.dev/cairn/store"
)

// Bounds of the pages of Start's list, in keys.
const (
	minPage = 16
	maxPage = 1024
)

// maxBatch bounds how many watch events are applied under one lock.
const maxBatch = 256

// listAttempts bounds how often build starts over when the revision it
// lists at is compacted under it.
const listAttempts = 3

// build lists every object at one revision into a fresh state. Pages start
// small and grow (at most doubling) to PageBytes over the largest value
// seen, within [minPage, maxPage] keys: a page of large values after many
// small ones can reach maxPage times the largest value etcd accepts.
func (t *Tracker) build(ctx context.Context) (*state, error) {
	for attempt := 1; ; attempt++ {
		st, err := t.list(ctx)
		if err == nil || !errors.Is(err, store.ErrCompacted) || attempt == listAttempts {
			return st, err
		}
	}
}

func (t *Tracker) list(ctx context.Context) (*state, error) {
	st := newState()
	var rev, largest int64
	opts := store.ListOptions{Limit: minPage}
	for {
		page, err := t.store.List(ctx, t.opts.Prefix, opts)
		if err != nil {
			return nil, err
		}
		rev = page.Revision
		for _, kv := range page.KVs {
			t.applyKV(st, kv, false)
			largest = max(largest, int64(len(kv.Value)))
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
		opts.Revision = rev
		opts.From = page.KVs[len(page.KVs)-1].Key + "\x00"
		opts.Limit = min(2*opts.Limit, t.opts.PageBytes/max(largest, 1))
		opts.Limit = min(max(opts.Limit, minPage), maxPage)
	}
	st.advance(rev)
	return st, nil
}

// applyKV counts a key as listed or watched (deleted for a watched
// deletion) at its mod revision.
func (t *Tracker) applyKV(st *state, kv *store.KV, deleted bool) {
	c := Change{Key: kv.Key, Size: int64(len(kv.Value)), Deleted: deleted}
	if !t.classify(&c) {
		return
	}
	if c.namespace && !deleted {
		l, err := t.opts.ParseLimits(kv.Value)
		if err != nil {
			t.opts.Logger.Warn("registry: namespace usage: a stored Namespace does not parse; its limits are the defaults",
				"key", kv.Key, "err", err)
			l = Limits{Objects: Unset, Bytes: Unset}
		}
		c.Limits = l
	}
	st.apply(&c, kv.ModRevision, true)
}

// follow applies the store's changes from the state's revision on until
// ctx ends. A watch that ends is restarted after a pause; when its
// revision has been compacted, the state is listed again.
func (t *Tracker) follow(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for {
		t.mu.Lock()
		from := t.st.rev + 1
		t.mu.Unlock()
		w := t.store.WatchNoPrev(ctx, t.opts.Prefix, from)
		delivered := t.consume(w)
		err := w.Err()
		w.Close()
		switch {
		case ctx.Err() != nil:
			return
		case t.store.Client().Ctx().Err() != nil:
			t.opts.Logger.Warn("registry: namespace usage: the store is closed; only this server's writes are counted from now on")
			return
		case delivered:
			backoff = 50 * time.Millisecond
		}
		if errors.Is(err, store.ErrCompacted) {
			t.opts.Logger.Warn("registry: namespace usage: the watch fell behind a compaction; listing the store again", "err", err)
			if !t.rebuild(ctx) {
				return
			}
			continue
		}
		t.opts.Logger.Warn("registry: namespace usage: the watch ended; restarting it", "err", err)
		if !sleep(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// consume applies w's events until it ends; it reports whether any came.
func (t *Tracker) consume(w *store.Watch) bool {
	delivered := false
	batch := make([]store.Event, 0, maxBatch)
	for ev := range w.Events() {
		delivered = true
		batch = append(batch[:0], ev)
	more:
		for len(batch) < maxBatch {
			select {
			case ev, ok := <-w.Events():
				if !ok {
					break more
				}
				batch = append(batch, ev)
			default:
				break more
			}
		}
		t.mu.Lock()
		for _, ev := range batch {
			if ev.Type != store.EventProgress {
				t.applyKV(t.st, ev.KV, ev.Type == store.EventDelete)
			}
			t.st.advance(ev.Revision)
		}
		t.mu.Unlock()
		clear(batch)
	}
	return delivered
}

// rebuild lists the store again until it succeeds or ctx ends (false).
// Meanwhile the old state keeps answering.
func (t *Tracker) rebuild(ctx context.Context) bool {
	backoff := 100 * time.Millisecond
	for {
		st, err := t.build(ctx)
		if err == nil {
			t.install(st)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		t.opts.Logger.Warn("registry: namespace usage: listing the store failed; retrying", "err", err)
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// sleep waits d; false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
