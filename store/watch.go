package store

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// EventType tells what happened to a key.
type EventType int

// Event types.
const (
	// EventPut: the key was created or updated.
	EventPut EventType = iota
	// EventDelete: the key was removed.
	EventDelete
	// EventProgress: no change; every change up to Revision has been sent.
	EventProgress
)

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	// KV is the key after the change (for a delete: the key, no value, and
	// the deletion revision as ModRevision).
	KV *KV
	// Prev is the key before the change, or nil when it did not exist.
	Prev *KV
	// Revision is the store revision of the event.
	Revision int64
}

// Watch is a stream of changes under a prefix.
type Watch struct {
	events  chan Event
	err     error
	w       clientv3.Watcher
	cancel  context.CancelFunc
	wctx    context.Context
	stopped chan struct{}
}

// Watch streams every change under prefix from revision from (inclusive;
// 0 means from now). The stream ends when ctx is done, Close is called, or
// the watch fails; Err then tells why: ErrCompacted when from has been
// compacted, nil after a cancellation by the caller.
func (s *Store) Watch(ctx context.Context, prefix string, from int64) *Watch {
	return s.watch(ctx, prefix, from, true)
}

// WatchNoPrev is Watch without the keys' previous versions: every Event's
// Prev is nil. It costs etcd less (no read of the previous version per
// update or delete, which is sent once per such watcher): for followers
// that need only the new state.
func (s *Store) WatchNoPrev(ctx context.Context, prefix string, from int64) *Watch {
	return s.watch(ctx, prefix, from, false)
}

func (s *Store) watch(ctx context.Context, prefix string, from int64, prev bool) *Watch {
	wctx, cancel := context.WithCancel(ctx)
	w := &Watch{
		events: make(chan Event, 100), w: clientv3.NewWatcher(s.cli),
		cancel: cancel, wctx: wctx, stopped: make(chan struct{}),
	}
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if prev {
		opts = append(opts, clientv3.WithPrevKV())
	}
	if from > 0 {
		opts = append(opts, clientv3.WithRev(from))
	}
	ch := w.w.Watch(clientv3.WithRequireLeader(wctx), prefix, opts...)
	go w.run(ch)
	return w
}

func (w *Watch) run(ch clientv3.WatchChan) {
	defer close(w.stopped)
	defer close(w.events)
	defer w.w.Close()
	for resp := range ch {
		if resp.CompactRevision != 0 {
			w.err = fmt.Errorf("%w: oldest available revision is %d", ErrCompacted, resp.CompactRevision)
			return
		}
		if err := resp.Err(); err != nil {
			w.err = mapErr(err)
			return
		}
		if resp.IsProgressNotify() {
			if !w.send(Event{Type: EventProgress, Revision: resp.Header.Revision}) {
				return
			}
			continue
		}
		for _, ev := range resp.Events {
			e := Event{KV: toKV(ev.Kv), Revision: ev.Kv.ModRevision}
			if ev.PrevKv != nil {
				e.Prev = toKV(ev.PrevKv)
			}
			if ev.Type == mvccpb.DELETE {
				e.Type = EventDelete
			}
			if !w.send(e) {
				return
			}
		}
	}
	if w.wctx.Err() == nil {
		w.err = fmt.Errorf("store: watch closed by etcd")
	}
}

func (w *Watch) send(e Event) bool {
	select {
	case w.events <- e:
		return true
	case <-w.wctx.Done():
		return false
	}
}

// Events returns the change stream; it is closed when the watch ends.
func (w *Watch) Events() <-chan Event { return w.events }

// Err tells why the stream ended. Call it after Events is closed.
func (w *Watch) Err() error {
	<-w.stopped
	return w.err
}

// RequestProgress asks etcd for a progress event (EventProgress) carrying
// the revision up to which every change has been delivered. It does not
// block on delivery.
func (w *Watch) RequestProgress(ctx context.Context) error {
	return w.w.RequestProgress(clientv3.WithRequireLeader(w.wctx))
}

// Close stops the watch and waits for its goroutine to finish.
func (w *Watch) Close() {
	w.cancel()
	<-w.stopped
}
