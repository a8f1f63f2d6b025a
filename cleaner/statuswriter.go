package cleaner

import (
	"context"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// How statuses are written.
//
// Every reconcile that evaluates a Cleaner ends in a status write. When
// many Cleaners are due together (TTLs that expire in the same minute, a
// restart), one write each would bound the controller by the store's
// transactions. So, when the controller's client is a
// client.StatusBatcher (the in-process client), the workers hand their
// writes to a statusWriter, whose flushers commit the writes waiting when
// they are free in one UpdateStatuses call: one store transaction for up
// to maxStatusBatch Cleaners, each write still a compare-and-swap with its
// own outcome. A lone write goes out at once, as a batch of one: nothing
// waits for a batch to fill. Each worker blocks until its own write's
// outcome is known, so a reconcile fails (and is retried) exactly when its
// write fails, as with one UpdateStatus each.
const (
	// maxStatusBatch is the most writes of one batch: the registry's
	// transaction limit (registry.MaxTxnItems).
	maxStatusBatch = 64
	// statusFlushers is how many batches may be in flight at once: while
	// some are committed, the others fill.
	statusFlushers = 4
)

// statusWriter batches status writes (see above). Build it with
// newStatusWriter; it writes nothing until Run.
type statusWriter struct {
	b    client.StatusBatcher
	reqs chan *statusReq
}

// statusReq is one write waiting for its batch; done receives its outcome.
type statusReq struct {
	obj  *api.Object
	done chan client.StatusResult
}

func newStatusWriter(b client.StatusBatcher) *statusWriter {
	return &statusWriter{b: b, reqs: make(chan *statusReq)}
}

// Write hands obj's status write to the next batch and blocks until it is
// committed or has failed: it returns what UpdateStatus would (the object
// as stored; NotFound, Conflict, Invalid, ...). When ctx ends first it
// returns ctx's error; the write, if a batch took it already, may still be
// committed. It needs Run to be running.
func (w *statusWriter) Write(ctx context.Context, obj *api.Object) (*api.Object, error) {
	req := &statusReq{obj: obj, done: make(chan client.StatusResult, 1)}
	select {
	case w.reqs <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-req.done:
		return r.Object, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run commits batches with statusFlushers goroutines until ctx is done; it
// blocks until they have all returned. A batch in flight when ctx ends is
// cut short by ctx: its writes not committed yet fail (and their workers,
// whose ctx ends too, have returned already).
func (w *statusWriter) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range statusFlushers {
		wg.Go(func() { w.flush(ctx) })
	}
	wg.Wait()
}

// flush takes a write, then every other write waiting (up to
// maxStatusBatch), commits them together and answers each, until ctx is
// done.
func (w *statusWriter) flush(ctx context.Context) {
	for {
		var batch []*statusReq
		select {
		case <-ctx.Done():
			return
		case r := <-w.reqs:
			batch = append(make([]*statusReq, 0, maxStatusBatch), r)
		}
	more:
		for len(batch) < maxStatusBatch {
			select {
			case r := <-w.reqs:
				batch = append(batch, r)
			default:
				break more
			}
		}
		objs := make([]*api.Object, len(batch))
		for i, r := range batch {
			objs[i] = r.obj
		}
		for i, res := range w.b.UpdateStatuses(ctx, objs) {
			batch[i].done <- res
		}
	}
}
