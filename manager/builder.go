package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/client-go/util/workqueue"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
)

// Builder writes the skeleton of a controller once, for every family: on
// a Term, it builds a controller.Controller with the term's logger,
// metrics and traces, adds the indexes it asks for, registers the
// informer handlers that feed its work queue, and adds one runnable to the
// term that waits for the caches, runs the hooks and then the workers.
// A family brings only its reconciler, its key functions and its own
// knobs:
//
//	return manager.NewBuilder(t, "execution").
//		For(api.KindExecution).
//		Owns(api.KindDeployItem).
//		Index(api.KindDeployItem, informer.OwnerUIDIndex, informer.IndexOwnerUID).
//		Workers(opts.Workers).
//		Complete(r)
//
// It is controller-runtime's builder (For, Owns, Watches, Complete) over
// cairn's informers. A Builder is used once, from a controller's Setup; it
// is not safe for concurrent use. Its methods record what to do and
// return the Builder; Build and Complete do it, and report the first
// mistake any of them found.
type Builder struct {
	t        *Term
	name     string
	forKind  string
	opts     controller.Options
	indexes  []index
	watches  []watch
	reads    []string
	synced   []func(ctx context.Context) bool
	starting []func(ctx context.Context, c *controller.Controller) error
	also     []func(ctx context.Context, c *controller.Controller)
	stopped  []func()
	err      error
}

type index struct {
	kind, name string
	f          informer.IndexFunc
}

// watch is one informer handler to register: made, once the controller
// exists, by handler.
type watch struct {
	kind    string
	handler func(c *controller.Controller) informer.Handler
}

// NewBuilder starts the controller called name (its logs, metric labels
// and runnable; unique per process) on term t.
func NewBuilder(t *Term, name string) *Builder {
	b := &Builder{t: t, name: name}
	if name == "" {
		b.fail(errors.New("manager: a controller needs a name"))
	}
	return b
}

func (b *Builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// For names the kind the controller reconciles: a change of an object of
// kind enqueues its own key (api.Key), and the traces of reconciles that
// name no object are filed under it (controller.Options.TraceKind). It may
// be given once.
func (b *Builder) For(kind string) *Builder {
	if b.forKind != "" {
		b.fail(fmt.Errorf("manager: controller %s: For(%s) after For(%s)", b.name, kind, b.forKind))
		return b
	}
	b.forKind = kind
	if b.opts.TraceKind == "" {
		b.opts.TraceKind = kind
	}
	return b.Watches(kind, controller.ObjectKey)
}

// Owns watches the objects of kind the controller creates: a change of
// one enqueues the key of its controlling owner of the For kind (see
// controller.ControllerOwnerKey). For must come first.
func (b *Builder) Owns(kind string) *Builder {
	if b.forKind == "" {
		b.fail(fmt.Errorf("manager: controller %s: Owns(%s) needs For first", b.name, kind))
		return b
	}
	return b.Watches(kind, controller.ControllerOwnerKey(b.forKind))
}

// Watches enqueues, for every added, updated (old and new state, and on
// resyncs) and deleted object of kind, the keys key maps it to.
func (b *Builder) Watches(kind string, key controller.KeyFunc) *Builder {
	return b.Handles(kind, func(c *controller.Controller) informer.Handler {
		return controller.Handler(c, key)
	})
}

// Handles registers on the informer of kind the handler that handler
// makes for the controller, for a family whose handlers do more than map
// objects to keys (filter updates, schedule instead of enqueue, keep a
// cache of their own). The handler is registered by Build, once the
// controller exists, and gets the informer's cache replayed as additions.
func (b *Builder) Handles(kind string, handler func(c *controller.Controller) informer.Handler) *Builder {
	b.watches = append(b.watches, watch{kind, handler})
	return b.Reads(kind)
}

// Reads names kinds the reconciler reads from the term's informers
// without watching them: their caches are synced before the workers
// start.
func (b *Builder) Reads(kinds ...string) *Builder {
	for _, k := range kinds {
		if !slices.Contains(b.reads, k) {
			b.reads = append(b.reads, k)
		}
	}
	return b
}

// Index adds the index name, computed by f, to the informer of kind before
// any handler is registered. An index of that name added already (by
// another controller sharing the informer, or an earlier term) is kept:
// controllers sharing an informer agree on what a name means.
func (b *Builder) Index(kind, name string, f informer.IndexFunc) *Builder {
	b.indexes = append(b.indexes, index{kind, name, f})
	return b
}

// Workers sets the number of keys reconciled at once (controller.Options.Workers);
// n <= 0 keeps the default, 1.
func (b *Builder) Workers(n int) *Builder {
	b.opts.Workers = n
	return b
}

// RateLimiter sets the delay before a failed key is retried
// (controller.Options.RateLimiter).
func (b *Builder) RateLimiter(rl workqueue.TypedRateLimiter[string]) *Builder {
	b.opts.RateLimiter = rl
	return b
}

// TraceKind files the traces of reconciles that name no object under
// kind (controller.Options.TraceKind); For sets it to its kind.
func (b *Builder) TraceKind(kind string) *Builder {
	b.opts.TraceKind = kind
	return b
}

// WaitFor adds a condition the workers wait for besides the caches (a
// graph built from them, say): synced blocks until it holds and returns
// true, or returns false once ctx is done.
func (b *Builder) WaitFor(synced func(ctx context.Context) bool) *Builder {
	b.synced = append(b.synced, synced)
	return b
}

// Starting adds a hook run once the caches have synced, before the
// workers start (hooks run in the order given): it may enqueue the work
// left over, restore a schedule, clean up. An error ends the term.
func (b *Builder) Starting(hook func(ctx context.Context, c *controller.Controller) error) *Builder {
	b.starting = append(b.starting, hook)
	return b
}

// Also runs loop beside the workers, from when they start until the term
// ends: a schedule that enqueues keys, a scheduling pass, a status writer.
// loop must return once ctx is done; the controller's runnable returns
// only after it has.
func (b *Builder) Also(loop func(ctx context.Context, c *controller.Controller)) *Builder {
	b.also = append(b.also, loop)
	return b
}

// Stopped adds a hook run once the workers have stopped and the loops of
// Also have returned, before the controller's runnable returns: it waits
// for what the reconciles started.
func (b *Builder) Stopped(hook func()) *Builder {
	b.stopped = append(b.stopped, hook)
	return b
}

// Build makes the controller around r and wires it: indexes, then
// handlers (which get the caches replayed, so the queue fills from the
// current state), then the runnable named after the controller, added to
// the term. It never blocks. It returns the controller (for a family that
// enqueues keys by itself), or the first error of the Builder's methods
// or of an index that cannot be added.
func (b *Builder) Build(r controller.Reconciler) (*controller.Controller, error) {
	if b.err != nil {
		return nil, b.err
	}
	if r == nil {
		return nil, fmt.Errorf("manager: controller %s: no reconciler", b.name)
	}
	for _, x := range b.indexes {
		if err := EnsureIndex(b.t.Informers.For(x.kind), x.name, x.f); err != nil {
			return nil, fmt.Errorf("manager: controller %s: index %s of %s: %w", b.name, x.name, x.kind, err)
		}
	}
	b.opts.Logger, b.opts.Metrics, b.opts.Traces = b.t.Logger, b.t.Metrics, b.t.Traces
	if b.opts.TraceUID == nil {
		b.opts.TraceUID = b.cachedUID
	}
	c := controller.New(b.name, r, b.opts)
	for _, w := range b.watches {
		b.t.Informers.For(w.kind).AddEventHandler(w.handler(c))
	}
	b.t.Add(b.name, RunnableFunc(func(ctx context.Context) error { return b.run(ctx, c) }))
	return c, nil
}

// cachedUID is the uid of the object ref in the cache of its kind, when
// the controller reads that kind; "" otherwise (controller.Options.TraceUID).
func (b *Builder) cachedUID(ref api.ObjectReference) string {
	if !slices.Contains(b.reads, ref.Kind) {
		return ""
	}
	if o, ok := b.t.Informers.For(ref.Kind).Get(ref.Namespace, ref.Name); ok {
		return o.UID
	}
	return ""
}

// Complete is Build for a family that needs nothing of the controller
// but its run.
func (b *Builder) Complete(r controller.Reconciler) error {
	_, err := b.Build(r)
	return err
}

// run waits for the caches and the conditions, runs the hooks and then
// the workers and the loops until ctx is done. When ctx ends first, the
// controller still runs, to release its queue.
func (b *Builder) run(ctx context.Context, c *controller.Controller) error {
	if !b.sync(ctx) {
		return c.Run(ctx)
	}
	for _, hook := range b.starting {
		if err := hook(ctx, c); err != nil {
			return fmt.Errorf("controller %s: %w", b.name, err)
		}
	}
	var wg sync.WaitGroup
	for _, loop := range b.also {
		wg.Go(func() { loop(ctx, c) })
	}
	err := c.Run(ctx)
	wg.Wait()
	for _, hook := range b.stopped {
		hook()
	}
	return err
}

// sync waits for the caches of every kind read, then for the conditions;
// false when ctx ended first.
func (b *Builder) sync(ctx context.Context) bool {
	for _, k := range b.reads {
		if !b.t.Informers.For(k).WaitForSync(ctx) {
			return false
		}
	}
	for _, synced := range b.synced {
		if !synced(ctx) {
			return false
		}
	}
	return true
}

// EnsureIndex adds the index name, computed by f, to inf, keeping one of
// that name added already (controllers sharing an informer agree on what
// an index name means). Errors: any but informer.ErrIndexExists.
func EnsureIndex(inf *informer.Informer, name string, f informer.IndexFunc) error {
	if err := inf.AddIndex(name, f); err != nil && !errors.Is(err, informer.ErrIndexExists) {
		return err
	}
	return nil
}
