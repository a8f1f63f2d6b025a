package informer

import (
	"context"
	"sync"

	"cairn.dev/cairn/client"
)

// Factory hands out shared informers: one per kind, watching every
// namespace, shared by every controller of the process that asks for that
// kind. Controllers register their handlers and indexes on the shared
// informer instead of keeping their own cache, so each kind is listed and
// watched once and held in memory once.
//
// Build one Factory per process (per client), hand it to every controller,
// then Start it. Its methods are safe for concurrent use.
//
// Goroutines: Start runs each informer in a goroutine of its own (also
// those created later by For), all ending when Start's ctx is done or
// Shutdown is called. Shutdown stops them and waits until every one has
// returned; a process that ends its ctx should still call Shutdown to know
// they are gone (typically deferred right after NewFactory).
type Factory struct {
	c    client.Interface
	opts Options

	// ctx is cancelled by Shutdown, or when Start's ctx is done; every
	// informer runs with it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	informers map[string]*Informer // by kind
	started   bool
	stopped   bool
	unlink    func() bool // stops the link from Start's ctx to cancel

	// parent and scope are set in a view (Scope): it hands out parent's
	// informers with handlers owned by scope.
	parent *Factory
	scope  *scope
}

// Scope returns a view of f for a part of the process that ends before f
// does, such as one leadership term. Its For returns f's informers, shared
// (the same cache and indexes), but the handlers registered through them
// are removed by the view's Shutdown, which leaves the informers running:
// the next view finds them current, and a handler registered then gets the
// whole cache replayed as additions (see Informer.AddEventHandler). On a
// view, Start does nothing (f runs the informers) and WaitForSync waits
// for f's informers. A view of a view is a view of f.
func (f *Factory) Scope() *Factory {
	if f.parent != nil {
		f = f.parent
	}
	return &Factory{parent: f, scope: newScope(), informers: map[string]*Informer{}}
}

// NewFactory returns a factory whose informers read through c, each built
// with opts (a LabelSelector in opts would limit every informer; shared
// informers normally see everything). It starts nothing.
func NewFactory(c client.Interface, opts Options) *Factory {
	ctx, cancel := context.WithCancel(context.Background())
	return &Factory{c: c, opts: opts, ctx: ctx, cancel: cancel, informers: map[string]*Informer{}}
}

// For returns the informer of kind across all namespaces, creating it on
// the first call; every later call returns the same informer. kind must be
// the API kind name (api.KindSecret, not a plural or a short name: those
// would get an informer of their own). When the factory has been started,
// a new informer starts at once; otherwise it starts with Start. Never Run
// an informer of a factory yourself.
//
// After Shutdown it still returns the informer of kind, but a new one never
// runs (it never syncs). It never blocks on the network.
func (f *Factory) For(kind string) *Informer {
	if f.parent != nil {
		shared := f.parent.For(kind)
		f.mu.Lock()
		defer f.mu.Unlock()
		if inf, ok := f.informers[kind]; ok {
			return inf
		}
		inf := &Informer{core: shared.core, scope: f.scope}
		f.informers[kind] = inf
		return inf
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[kind]; ok {
		return inf
	}
	inf := New(f.c, kind, "", f.opts)
	f.informers[kind] = inf
	if f.started && !f.stopped {
		f.run(inf)
	}
	return inf
}

// run starts inf in a goroutine of the factory. The caller holds f.mu and
// has checked that the factory is not stopped, so the goroutine is counted
// before Shutdown waits.
func (f *Factory) run(inf *Informer) {
	f.wg.Go(func() { inf.Run(f.ctx) })
}

// Start runs every informer created so far, and from now on every informer
// created by For, until ctx is done or Shutdown is called. It does not
// block. Calls after the first, and calls after Shutdown, do nothing.
func (f *Factory) Start(ctx context.Context) {
	if f.parent != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.stopped {
		return
	}
	f.started = true
	f.unlink = context.AfterFunc(ctx, f.cancel)
	for _, inf := range f.informers {
		f.run(inf)
	}
}

// WaitForSync blocks until every informer created so far has delivered its
// first list (true), or until ctx is done or the factory stops first
// (false). Informers created after the call are not waited for. Before
// Start it waits for Start (or ctx).
func (f *Factory) WaitForSync(ctx context.Context) bool {
	if f.parent != nil {
		return f.parent.WaitForSync(ctx)
	}
	f.mu.Lock()
	infs := make([]*Informer, 0, len(f.informers))
	for _, inf := range f.informers {
		infs = append(infs, inf)
	}
	f.mu.Unlock()
	for _, inf := range infs {
		select {
		case <-inf.synced:
		case <-ctx.Done():
			return false
		case <-f.ctx.Done():
			if !inf.HasSynced() {
				return false
			}
		}
	}
	return true
}

// Shutdown stops every informer and blocks until all their goroutines have
// returned. It is idempotent, and safe to call whether or not Start was
// called or its ctx is done. On a view (Scope) it only removes the view's
// handlers, blocking until none of them runs.
func (f *Factory) Shutdown() {
	if f.parent != nil {
		f.scope.close()
		return
	}
	f.mu.Lock()
	f.stopped = true
	f.cancel()
	if f.unlink != nil {
		f.unlink()
	}
	f.mu.Unlock()
	f.wg.Wait()
}
