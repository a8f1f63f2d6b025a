package client

import (
	"context"
	"io"
	"sync"

	"cairn.dev/cairn/api"
)

// Fenced returns c with every write fenced by f: Create, Update,
// UpdateStatus, Patch, Delete, Action and ActionStream carry f in their
// context (api.WithFence), which the in-process client hands to the
// registry and the HTTP client sends as the Cairn-Fence header, so that
// they commit only while f's leadership term holds, checked in the same
// store transaction as the write. Reads, watches and discovery go through
// unchanged.
//
// The first write refused because the fence no longer holds
// (api.IsNotLeader) calls lost, once, with that error; from then on every
// write fails at once with the same error, without reaching the server.
// lost must not block; nil means no callback.
//
// The client returned is a StatusBatcher exactly when c is one (the
// in-process client): a fenced HTTP client is not, so that GroupStatuses
// leaves its status writes to go out concurrently, one request each,
// instead of funnelling them through a StatusGroup's few flushers.
func Fenced(c Interface, f api.Fence, lost func(err error)) Interface {
	fc := &fenced{c: c, f: f, lost: lost}
	if b, ok := c.(StatusBatcher); ok {
		return &fencedBatcher{fenced: fc, b: b}
	}
	return fc
}

// fenced is the Interface of Fenced. It embeds nothing, so that a method
// added to Interface must be added here too, fenced if it writes.
type fenced struct {
	c    Interface
	f    api.Fence
	lost func(error)

	mu  sync.Mutex
	err error // the NotLeader error, once a write got it
}

// begin returns ctx carrying the fence, or the error of a fence that has
// failed already.
func (c *fenced) begin(ctx context.Context) (context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	return api.WithFence(ctx, c.f), nil
}

// end passes err on, noting a failed fence.
func (c *fenced) end(err error) error {
	if err == nil || !api.IsNotLeader(err) {
		return err
	}
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = err
	}
	c.mu.Unlock()
	if first && c.lost != nil {
		c.lost(err)
	}
	return err
}

// write runs one write of c's under the fence: refused at once when the
// fence has failed, noted when the write finds that it has.
func write[T any](ctx context.Context, c *fenced, w func(ctx context.Context) (T, error)) (T, error) {
	ctx, err := c.begin(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := w(ctx)
	return out, c.end(err)
}

func (c *fenced) Create(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return write(ctx, c, func(ctx context.Context) (*api.Object, error) { return c.c.Create(ctx, obj) })
}

func (c *fenced) Update(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return write(ctx, c, func(ctx context.Context) (*api.Object, error) { return c.c.Update(ctx, obj) })
}

func (c *fenced) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return write(ctx, c, func(ctx context.Context) (*api.Object, error) { return c.c.UpdateStatus(ctx, obj) })
}

func (c *fenced) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error) {
	return write(ctx, c, func(ctx context.Context) (*api.Object, error) {
		return c.c.Patch(ctx, kind, ns, name, patch, status)
	})
}

func (c *fenced) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	var gone bool
	out, err := write(ctx, c, func(ctx context.Context) (out *api.Object, err error) {
		out, gone, err = c.c.Delete(ctx, kind, ns, name, opts)
		return out, err
	})
	return out, gone, err
}

func (c *fenced) Action(ctx context.Context, req ActionRequest) ([]byte, error) {
	return write(ctx, c, func(ctx context.Context) ([]byte, error) { return c.c.Action(ctx, req) })
}

func (c *fenced) ActionStream(ctx context.Context, req ActionRequest) (io.ReadCloser, error) {
	return write(ctx, c, func(ctx context.Context) (io.ReadCloser, error) { return c.c.ActionStream(ctx, req) })
}

func (c *fenced) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	return c.c.Get(ctx, kind, ns, name)
}

func (c *fenced) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	return c.c.List(ctx, kind, ns, opts)
}

func (c *fenced) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	return c.c.Watch(ctx, kind, ns, opts)
}

func (c *fenced) Kinds(ctx context.Context) ([]api.KindInfo, error) { return c.c.Kinds(ctx) }

// fencedBatcher is the fenced client of a StatusBatcher.
type fencedBatcher struct {
	*fenced
	b StatusBatcher
}

// UpdateStatuses implements StatusBatcher: the writes are fenced and
// committed as the client under the fence commits them (one store
// transaction per 64).
func (c *fencedBatcher) UpdateStatuses(ctx context.Context, objs []*api.Object) []StatusResult {
	out := make([]StatusResult, len(objs))
	ctx, err := c.begin(ctx)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	out = c.b.UpdateStatuses(ctx, objs)
	for i := range out {
		out[i].Err = c.end(out[i].Err)
	}
	return out
}
