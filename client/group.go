package client

import (
	"context"
	"sync"

	"cairn.dev/cairn/api"
)

// Status writes committed together.
//
// Most reconciles end in a status write, and when many objects move at
// once (a burst of creations, Cleaners due together, a restart) one store
// transaction per write bounds the controllers by the store's
// transactions rather than by their work. A StatusGroup commits the
// writes handed to it concurrently in batches: each of its flushers takes
// a write, then every other write already waiting (up to MaxStatusBatch),
// and commits them with one UpdateStatuses call, which the in-process
// client turns into one store transaction. A lone write goes out at once
// as a batch of one: nothing waits for a batch to fill, so an idle
// controller's latency is unchanged. Each write is still a
// compare-and-swap with its own outcome, and its caller blocks until that
// outcome is known, so a reconcile fails (and is retried) exactly when its
// write fails, as with one UpdateStatus each.
const (
	// MaxStatusBatch is the most writes of one batch: the registry's
	// transaction limit (registry.MaxTxnItems).
	MaxStatusBatch = 64
	// statusFlushers is how many batches may be in flight at once: while
	// some are committed, the others fill.
	statusFlushers = 4
)

// StatusGroup batches status writes (see above). Build it with
// NewStatusGroup; it writes nothing until Run.
type StatusGroup struct {
	b    StatusBatcher
	reqs chan *statusReq
}

// statusReq is one write waiting for its batch; done receives its outcome.
type statusReq struct {
	obj  *api.Object
	done chan StatusResult
}

// NewStatusGroup returns a group committing its writes through b.
func NewStatusGroup(b StatusBatcher) *StatusGroup {
	return &StatusGroup{b: b, reqs: make(chan *statusReq)}
}

// Write hands obj's status write to the next batch and blocks until it is
// committed or has failed: it returns what UpdateStatus would (the object
// as stored; NotFound, Conflict, Invalid, ...). When ctx ends first it
// returns ctx's error; the write, if a batch took it already, may still be
// committed. It needs Run to be running.
func (g *StatusGroup) Write(ctx context.Context, obj *api.Object) (*api.Object, error) {
	req := &statusReq{obj: obj, done: make(chan StatusResult, 1)}
	select {
	case g.reqs <- req:
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

// Run commits batches until ctx is done; it blocks until its flushers have
// all returned. A batch in flight when ctx ends is cut short by ctx: its
// writes not committed yet fail (and their callers, whose ctx ends too as
// a rule, have returned already).
func (g *StatusGroup) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range statusFlushers {
		wg.Go(func() { g.flush(ctx) })
	}
	wg.Wait()
}

// flush takes a write, then every other write waiting (up to
// MaxStatusBatch), commits them together and answers each, until ctx is
// done.
func (g *StatusGroup) flush(ctx context.Context) {
	for {
		var batch []*statusReq
		select {
		case <-ctx.Done():
			return
		case r := <-g.reqs:
			batch = append(make([]*statusReq, 0, MaxStatusBatch), r)
		}
	more:
		for len(batch) < MaxStatusBatch {
			select {
			case r := <-g.reqs:
				batch = append(batch, r)
			default:
				break more
			}
		}
		objs := make([]*api.Object, len(batch))
		for i, r := range batch {
			objs[i] = r.obj
		}
		for i, res := range g.b.UpdateStatuses(ctx, objs) {
			batch[i].done <- res
		}
	}
}

// GroupStatuses returns c with its UpdateStatus committed through a new
// StatusGroup, and that group, which must Run for as long as the client
// is used. When c is no StatusBatcher (the HTTP client) batching gains
// nothing: it returns c itself and a nil group. The client returned is a
// StatusBatcher too, whose UpdateStatuses goes straight to c's.
func GroupStatuses(c Interface) (Interface, *StatusGroup) {
	b, ok := c.(StatusBatcher)
	if !ok {
		return c, nil
	}
	g := NewStatusGroup(b)
	return &grouped{Interface: c, b: b, g: g}, g
}

// grouped is the client of GroupStatuses.
type grouped struct {
	Interface
	b StatusBatcher
	g *StatusGroup
}

func (c *grouped) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return c.g.Write(ctx, obj)
}

func (c *grouped) UpdateStatuses(ctx context.Context, objs []*api.Object) []StatusResult {
	return c.b.UpdateStatuses(ctx, objs)
}
