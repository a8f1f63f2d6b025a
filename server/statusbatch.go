package server

import (
	"context"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
)

// Status writes that arrive together are committed together.
//
// A controller manager in its own process writes every status with its own
// PUT .../status, many at once (one per reconcile that ends). Served one by
// one, each is one store transaction: the transactions, not the work,
// bound the controllers, where in-process they share transactions
// (client.StatusGroup). The server does the same for the requests: a
// status write that finds no other waiting is written at once, alone, by
// Registry.UpdateStatus, exactly as before; the writes of one caller that
// arrive while some of theirs are being committed wait and go together,
// up to registry.MaxTxnItems, in one Registry.UpdateStatuses (which
// authorizes and writes each as UpdateStatus would, each with its own
// outcome). Only plain writes are grouped: no dry run, no field manager,
// no Cairn-On-Behalf-Of; and only those of the same caller under the same
// fence (Cairn-Fence), since a batch is written as one caller.
//
// The API does not change: each request gets its own answer, the one
// UpdateStatus would give it (a Conflict, NotFound or Forbidden of one
// write does not touch the others).

// maxStatusFlushers bounds the batches of one caller in flight at once:
// while some are committed, the writes arriving meanwhile gather.
const maxStatusFlushers = 4

// statusBatcher groups the status writes of the requests (see above). Its
// zero value is not ready: use newStatusBatcher.
type statusBatcher struct {
	reg    *registry.Registry
	mu     sync.Mutex
	queues map[batchKey]*statusQueue // under mu; dropped when idle
}

// batchKey is what the writes of one batch share: the caller, the fence.
type batchKey struct {
	user  identity.User
	fence api.Fence
}

// statusQueue holds the writes of one batchKey waiting for a flusher.
type statusQueue struct {
	waiting  []*statusWrite
	flushers int // running, at most maxStatusFlushers
}

// statusWrite is one request's write and where its outcome goes.
type statusWrite struct {
	ctx  context.Context
	obj  *api.Object
	done chan registry.StatusResult
}

func newStatusBatcher(reg *registry.Registry) *statusBatcher {
	return &statusBatcher{reg: reg, queues: map[batchKey]*statusQueue{}}
}

// write writes obj's status as Registry.UpdateStatus(ctx, obj, o) would,
// committed with the other plain writes of the same caller and fence that
// wait meanwhile. It blocks until the write is committed or has failed,
// or ctx ends (then it returns ctx's error; the write may still be
// committed, as a write whose client left may be).
func (b *statusBatcher) write(ctx context.Context, obj *api.Object, o api.WriteOptions) (*api.Object, error) {
	key, ok := batchable(ctx, o)
	if !ok {
		return b.reg.UpdateStatus(ctx, obj, o)
	}
	w := &statusWrite{ctx: ctx, obj: obj, done: make(chan registry.StatusResult, 1)}
	if b.enqueue(key, w) {
		go b.flush(key)
	}
	select {
	case r := <-w.done:
		return r.Object, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// batchable returns the batch key of a write with options o in ctx; ok is
// false for a write that goes alone (dry run, field manager, acting on
// behalf of an object, no caller).
func batchable(ctx context.Context, o api.WriteOptions) (batchKey, bool) {
	if o != (api.WriteOptions{}) {
		return batchKey{}, false
	}
	if _, ok := api.OnBehalfOfFrom(ctx); ok {
		return batchKey{}, false
	}
	u, ok := identity.From(ctx)
	if !ok {
		return batchKey{}, false
	}
	f, _ := api.FenceFrom(ctx)
	return batchKey{user: u, fence: f}, true
}

// enqueue adds w to key's queue and reports whether a new flusher must
// start for it (fewer than maxStatusFlushers run).
func (b *statusBatcher) enqueue(key batchKey, w *statusWrite) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[key]
	if q == nil {
		q = &statusQueue{}
		b.queues[key] = q
	}
	q.waiting = append(q.waiting, w)
	if q.flushers < maxStatusFlushers {
		q.flushers++
		return true
	}
	return false
}

// next takes up to registry.MaxTxnItems writes of key's queue; none when
// it is empty, and then the calling flusher ends (and the queue goes when
// it was the last).
func (b *statusBatcher) next(key batchKey) []*statusWrite {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[key]
	n := min(len(q.waiting), registry.MaxTxnItems)
	if n == 0 {
		if q.flushers--; q.flushers == 0 {
			delete(b.queues, key)
		}
		return nil
	}
	batch := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	return batch
}

// flush commits key's waiting writes, batch after batch, until none wait.
func (b *statusBatcher) flush(key batchKey) {
	for batch := b.next(key); batch != nil; batch = b.next(key) {
		b.commit(batch)
	}
}

// commit writes batch and answers each write. A batch of one is written
// by UpdateStatus, as an unbatched request; a larger one by
// UpdateStatuses under the context of its first write, cut from that
// request's end (its client may leave; the others still wait) but keeping
// its caller, fence and store timeout, which bound the batch.
func (b *statusBatcher) commit(batch []*statusWrite) {
	if len(batch) == 1 {
		w := batch[0]
		obj, err := b.reg.UpdateStatus(w.ctx, w.obj)
		w.done <- registry.StatusResult{Object: obj, Err: err}
		return
	}
	objs := make([]*api.Object, len(batch))
	for i, w := range batch {
		objs[i] = w.obj
	}
	for i, r := range b.reg.UpdateStatuses(context.WithoutCancel(batch[0].ctx), objs) {
		batch[i].done <- r
	}
}
