// Package cleaner is the Cleaner controller: it deletes a Cleaner's
// targets, then the Cleaner, once its TTL has passed and its CEL
// conditions hold (see the seed cleaner-controller.md and DESIGN.md).
//
// The decision is a plain function (Decide) over plain data; the
// Controller around it reads Cleaners and their targets from the shared
// informers, keeps every Cleaner's next evaluation in a min-heap
// (Schedule), re-queues a Cleaner when one of its evaluated targets
// changes (an index from targets to Cleaners on the Cleaner informer),
// and writes status and deletions through the client. Package condition
// holds the CEL environment, which admission (package kinds) shares.
package cleaner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner/condition"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
)

// Options configures a Controller. The zero value is usable.
type Options struct {
	// Workers is the number of Cleaners reconciled concurrently; default
	// 64. Twice as many statuses are written concurrently
	// (statuswriter.go): with a client that commits the status writes
	// waiting together in one transaction (client.GroupStatuses, as a
	// manager's term client does), more writers make larger batches when
	// many Cleaners are due.
	Workers int
	// SyncTimeout bounds how long a reconcile waits for the cache of a
	// target's kind to fill the first time that kind is needed; default
	// 30s (then the reconcile fails and is retried).
	SyncTimeout time.Duration
}

// Index names on the Cleaner informer.
const (
	// IndexTargets finds Cleaners by "Kind/namespace/name" of an evaluated
	// target: every object in status.resolvedTargets and every evaluated
	// target named in spec (found or not).
	IndexTargets = "cleaner.targets"
	// IndexSelectors finds Cleaners by "Kind/namespace" of an evaluated
	// target selected by labels.
	IndexSelectors = "cleaner.selectors"
)

// Controller is the Cleaner controller: one controller.Controller keyed by
// "namespace/name" of Cleaners, fed by the Cleaner informer, the target
// kinds' informers and the Schedule.
type Controller struct {
	c     client.Interface
	opts  Options
	log   *slog.Logger
	m     *metrics
	sched *Schedule
	// statuses writes the statuses the evaluations decide (statuswriter.go).
	statuses *statusWriter
	// refs caches the last Cleaner's target references for the indexes.
	refs refsCache

	factory  *informer.Factory
	cleaners *informer.Informer
	ctrl     *controller.Controller
	// served maps the served kinds to whether they are namespaced; set
	// by restore, before the workers and the watch loop start.
	served map[string]bool

	mu sync.Mutex
	// watched holds the target kinds whose informer has our handler.
	watched map[string]*informer.Informer
	// programs caches compiled conditions by Cleaner uid (and generation);
	// compiler shares them among Cleaners with the same conditions.
	programs map[string]compiled
	compiler *condition.Compiler
	// changed holds, by uid, when the controller saw a target object's
	// last change besides its status; since holds, by kind, when it
	// started watching the kind (LastChangeTime).
	changed map[string]time.Time
	since   map[string]time.Time
	// toWatch holds kinds asked for by handlers, watched by Run's loop.
	toWatch map[string]bool
	wakeW   chan struct{}

	// restored turns true once the first list of Cleaners has been
	// handled: Cleaners seen before are scheduled from their status.
	restored atomic.Bool
	started  atomic.Bool
}

type compiled struct {
	generation int64
	set        *condition.Set
	err        error
}

// New builds a controller; Setup adds it to a term. When many Cleaners
// are due together, each evaluation yields a status to write: a term's
// client commits the status writes waiting together in one transaction
// (client.GroupStatuses).
func New(opts Options) *Controller {
	if opts.Workers <= 0 {
		opts.Workers = 64
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = 30 * time.Second
	}
	return &Controller{
		opts: opts, sched: NewSchedule(), watched: map[string]*informer.Informer{}, programs: map[string]compiled{},
		compiler: condition.NewCompiler(), toWatch: map[string]bool{}, wakeW: make(chan struct{}, 1),
		changed: map[string]time.Time{}, since: map[string]time.Time{},
	}
}

// bind makes c act through cl, log to log and register its metrics
// (cairn_cleaner_scheduled, cairn_cleaner_evaluations_total{result},
// cairn_cleaner_deletions_total) on reg (none when nil).
func (c *Controller) bind(cl client.Interface, log *slog.Logger, reg prometheus.Registerer) {
	c.c, c.log = cl, log.With("controller", "cleaner")
	c.m = newMetrics(reg, c.log)
	c.statuses = newStatusWriter(cl, func(ns, name string) (*api.Object, bool) { return c.cleaners.Get(ns, name) }, c.log, c.m)
}

// Schedule returns the controller's schedule (for tests and benchmarks:
// read it, never set it).
func (c *Controller) Schedule() *Schedule { return c.sched }

// Restored reports whether the Cleaners that existed when Run started
// have all been scheduled again (or queued). It never blocks.
func (c *Controller) Restored() bool { return c.restored.Load() }

// Setup adds c to a manager's term, as the controller "cleaner": it
// reads Cleaners and their targets through the term's shared informers,
// acts through the term's client and records its steps in the term's
// traces. Once the first list of Cleaners is in (each Cleaner scheduled
// again at the time its status names, or queued when that time has passed
// or its spec changed), it discovers the served kinds and reconciles until
// the term ends. It never blocks. A Controller is set up once: a second
// call returns an error.
func (c *Controller) Setup(t *manager.Term) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("cleaner: Setup called twice")
	}
	c.bind(t.Client, t.Logger, t.Metrics)
	c.factory, c.cleaners = t.Informers, t.Informers.For(api.KindCleaner)
	ctrl, err := manager.NewBuilder(t, "cleaner").
		Index(api.KindCleaner, IndexTargets, c.indexTargets).
		Index(api.KindCleaner, IndexSelectors, c.indexSelectors).
		Handles(api.KindCleaner, c.handler).
		TraceKind(api.KindCleaner).
		Workers(c.opts.Workers).
		Starting(c.restore).
		Also(func(ctx context.Context, _ *controller.Controller) { c.watchLoop(ctx) }).
		Also(func(ctx context.Context, ctrl *controller.Controller) { c.sched.Run(ctx, ctrl.Enqueue) }).
		Also(func(ctx context.Context, _ *controller.Controller) { c.statuses.run(ctx, 2*c.opts.Workers) }).
		Build(controller.ReconcilerFunc(c.Reconcile))
	c.ctrl = ctrl
	return err
}

// Setup adds a Cleaner controller built with opts to a manager's term
// (see Controller.Setup).
func Setup(t *manager.Term, opts Options) error { return New(opts).Setup(t) }

// handler is the Cleaner informer's handler, feeding ctrl.
func (c *Controller) handler(ctrl *controller.Controller) informer.Handler {
	return informer.Handler{
		OnAdd:    func(o *api.Object) { c.onCleanerAdd(ctrl, o) },
		OnUpdate: func(old, o *api.Object) { c.onCleanerUpdate(ctrl, old, o) },
		OnDelete: func(o *api.Object) {
			c.dropPrograms(o.UID)
			c.refs.forget(o.UID)
			ctrl.Enqueue(api.Key(o.Namespace, o.Name))
		},
	}
}

// restore runs once the first list of Cleaners is in (each one scheduled
// or queued by onCleanerAdd): it discovers the served kinds and marks the
// schedule restored. Errors: the kinds cannot be discovered.
func (c *Controller) restore(ctx context.Context, ctrl *controller.Controller) error {
	kinds, err := c.c.Kinds(ctx)
	if err != nil {
		return fmt.Errorf("cleaner: discover kinds: %w", err)
	}
	served := map[string]bool{}
	for _, k := range kinds {
		served[k.Kind] = k.Namespaced
	}
	c.served = served // before the workers and the watch loop start
	c.restored.Store(true)
	c.log.Info("cleaners scheduled", "scheduled", c.sched.Len(), "queued", ctrl.Len())
	return nil
}

// onCleanerAdd queues a new Cleaner. A Cleaner of the first list (one that
// existed before this controller started) is instead scheduled at the
// next evaluation its status names, when that is still ahead and its spec
// has not changed since: a restart keeps the schedule instead of
// evaluating every Cleaner at once.
func (c *Controller) onCleanerAdd(ctrl *controller.Controller, o *api.Object) {
	c.askWatch(o)
	key := api.Key(o.Namespace, o.Name)
	if raw := o.Field(api.FieldStatus); !c.restored.Load() && raw != nil {
		// Only the status is decoded: a restart reads every Cleaner.
		var st api.CleanerStatus
		if json.Unmarshal(raw, &st) == nil && st.NextScheduledEvaluation != nil && st.ObservedGeneration == o.Generation &&
			st.Phase != api.CleanerDeleting && time.Now().Before(*st.NextScheduledEvaluation) && !o.Deleting() {
			c.sched.Set(key, *st.NextScheduledEvaluation)
			return
		}
	}
	ctrl.Enqueue(key)
}

// onCleanerUpdate queues a Cleaner whose spec changed or that is being
// deleted; the controller's own status writes queue nothing.
func (c *Controller) onCleanerUpdate(ctrl *controller.Controller, old, o *api.Object) {
	if old.Generation != o.Generation || old.Deleting() != o.Deleting() || old.UID != o.UID {
		c.askWatch(o)
		ctrl.Enqueue(api.Key(o.Namespace, o.Name))
	}
}

// programsFor returns the compiled conditions of cl, compiling them once
// per generation.
func (c *Controller) programsFor(cl *api.Cleaner) (*condition.Set, error) {
	c.mu.Lock()
	p, ok := c.programs[cl.UID]
	c.mu.Unlock()
	if ok && p.generation == cl.Generation {
		return p.set, p.err
	}
	var vars []string
	for _, t := range cl.Spec.Targets {
		if t.Evaluated() {
			vars = append(vars, t.Name)
		}
	}
	set, issues, err := c.compiler.Compile(vars, cl.Spec.Conditions)
	if err == nil && len(issues) > 0 {
		err = issues[0]
	}
	c.mu.Lock()
	c.programs[cl.UID] = compiled{generation: cl.Generation, set: set, err: err}
	c.mu.Unlock()
	return set, err
}

// dropPrograms forgets the compiled conditions of the Cleaner uid.
func (c *Controller) dropPrograms(uid string) {
	c.mu.Lock()
	delete(c.programs, uid)
	c.mu.Unlock()
}
