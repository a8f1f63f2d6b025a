// Package controller runs reconcilers: a rate-limited work queue of keys
// (k8s.io/client-go/util/workqueue) drained by N workers that call a
// Reconciler, retry failures with backoff, honour requeue-after and never
// hand the same key to two workers at once. Every cairn controller (garbage
// collector, installation, execution, scheduler, cleaner, ...) is one
// Controller fed by informers (see EnqueueFromInformer). With
// Options.Traces, the controller also keeps a trace of each reconcile (see
// package trace), which `cairn explain` shows.
package controller

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/trace"
)

// Options configures a Controller. The zero value is usable.
type Options struct {
	// Workers is the number of keys reconciled concurrently; default 1.
	Workers int
	// RateLimiter decides the delay before a failed key is retried; default
	// workqueue.DefaultTypedControllerRateLimiter (per-key exponential
	// backoff from 5ms to 1000s, overall 10 retries/s with a burst of 100).
	RateLimiter workqueue.TypedRateLimiter[string]
	// Metrics, when set, receives the work queue metrics labelled with the
	// controller's name: cairn_workqueue_depth, _adds_total, _retries_total,
	// _queue_duration_seconds, _work_duration_seconds,
	// _unfinished_work_seconds, _longest_running_processor_seconds, and
	// cairn_controller_reconciles_total{result}. Several controllers may
	// share one Registerer; nothing is registered globally.
	Metrics prometheus.Registerer
	// Logger receives reconcile failures; default slog.Default().
	Logger *slog.Logger
	// Traces, when set, receives a trace of every reconcile: each
	// Reconcile gets a fresh trace.Recorder on its ctx, and when it
	// returns the steps it recorded and how it ended ("done",
	// "requeue in 5s", "failed: ...", "panicked: ...") are added to
	// Traces under the object the reconciler named with trace.Object.
	// Nil (the default) records nothing and costs one nil check.
	Traces *trace.Store
	// TraceKind files the trace of a reconcile whose reconciler did not
	// call trace.Object under the object of this kind named by the key
	// ("ns/name", or "name" for cluster-scoped kinds). Empty: such traces
	// are dropped. It suits controllers keyed by api.Key of one kind.
	TraceKind string
	// TraceUID, when set, gives the uid of the object a trace is filed
	// under (its cache's, "" when unknown) for reconciles whose
	// reconciler did not record one with trace.UID, so that a re-created
	// object does not inherit its predecessor's trace. It must not block.
	TraceUID func(ref api.ObjectReference) string
}

// Controller feeds keys from a work queue to a Reconciler. Create it with
// New, add keys with Enqueue (from informer handlers, usually), and start it
// with Run. Its methods are safe for concurrent use.
type Controller struct {
	name    string
	r       Reconciler
	queue   workqueue.TypedRateLimitingInterface[string]
	workers int
	log     *slog.Logger
	m       *metrics // nil without Options.Metrics
	traces  *trace.Store
	kind    string // Options.TraceKind
	uidOf   func(api.ObjectReference) string
	started atomic.Bool
}

// New builds a controller named name (used in logs and metric labels; it
// should be unique per process) around r. The queue exists from New on, so
// keys enqueued before Run are kept until Run starts the workers. The queue
// owns a timer goroutine from New on; it ends when Run returns, so every
// controller built must eventually be Run (a Run with a cancelled context
// just releases it).
//
// New does not fail: if the metrics cannot be registered (another collector
// with the same name but a different shape is already registered), it logs
// the error and runs without exporting them.
func New(name string, r Reconciler, opts Options) *Controller {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[string]()
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Controller{
		name:    name,
		r:       r,
		workers: opts.Workers,
		log:     opts.Logger.With("controller", name),
		traces:  opts.Traces,
		kind:    opts.TraceKind,
		uidOf:   opts.TraceUID,
	}
	cfg := workqueue.TypedRateLimitingQueueConfig[string]{}
	if opts.Metrics != nil {
		m, err := newMetrics(opts.Metrics)
		if err != nil {
			c.log.Error("cannot register work queue metrics", "err", err)
		} else {
			c.m = m
			// An unnamed queue records no metrics, so the name is only set
			// together with our own provider: the workqueue's global
			// provider is never consulted.
			cfg.Name = name
			cfg.MetricsProvider = provider{m: m}
		}
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter, cfg)
	return c
}

// Name returns the controller's name.
func (c *Controller) Name() string { return c.name }

// Enqueue adds key to the queue. A key already waiting is not added twice; a
// key being reconciled is queued again and reconciled once the current
// Reconcile returns. It never blocks and is a no-op after Run has returned.
func (c *Controller) Enqueue(key string) { c.queue.Add(key) }

// EnqueueAfter adds key to the queue after d (at once when d <= 0). Pending
// delays for one key are merged: the earliest wins. It never blocks for
// longer than handing the key to the queue's timer loop, and is a no-op after
// Run has returned.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// Len returns the number of keys waiting to be reconciled now (not counting
// keys whose delay has not expired, nor keys being reconciled).
func (c *Controller) Len() int { return c.queue.Len() }

// Run starts the workers and blocks until ctx is done. Then it shuts the
// queue down (keys still waiting are dropped), waits for the reconciles in
// progress to return, and returns nil. The ctx given to Reconcile is ctx, so
// running reconciles see the cancellation.
//
// A controller runs once: a second call to Run returns an error at once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("controller: %s: Run called twice", c.name)
	}
	c.log.Debug("starting", "workers", c.workers)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	c.log.Debug("stopped")
	return nil
}

// processNext takes one key from the queue, reconciles it and decides what
// happens next. It returns false when the queue has been shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	res, err := c.reconcile(ctx, key)
	switch {
	case err == nil:
		c.queue.Forget(key)
		if res.RequeueAfter > 0 {
			c.count(resultRequeue)
			c.queue.AddAfter(key, res.RequeueAfter)
		} else {
			c.count(resultSuccess)
		}
	case ctx.Err() != nil:
		// Stopping: the failure is most likely the cancellation itself, and
		// the queue is going away.
		c.log.Debug("reconcile interrupted by shutdown", "key", key, "err", err)
	case IsTerminal(err):
		c.count(resultTerminal)
		c.queue.Forget(key)
		c.log.Error("reconcile failed; not retrying", "key", key, "err", err)
	default:
		c.count(resultError)
		c.queue.AddRateLimited(key)
		c.log.Warn("reconcile failed; retrying with backoff", "key", key, "err", err,
			"retries", c.queue.NumRequeues(key))
	}
	return true
}

// reconcile calls the Reconciler, turning a panic into an error so one bad
// object cannot take the process down; the key is then retried like any
// failure. With Options.Traces it records the reconcile's trace.
func (c *Controller) reconcile(ctx context.Context, key string) (res Result, err error) {
	var rec *trace.Recorder
	if c.traces != nil {
		rec = trace.NewRecorder(c.name, key, time.Now)
		ctx = trace.With(ctx, rec)
	}
	defer func() {
		p := recover()
		if p != nil {
			c.log.Error("reconcile panicked", "key", key, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("controller: %s: reconcile of %q panicked: %v", c.name, key, p)
		}
		if rec != nil {
			c.fileTrace(rec, key, outcome(ctx, res, err, p), err)
		}
	}()
	return c.r.Reconcile(ctx, key)
}

// fileTrace finishes rec and adds it to the trace store under the object
// the reconciler named, or else under the key read as "ns/name" of
// Options.TraceKind; without either it is dropped.
func (c *Controller) fileTrace(rec *trace.Recorder, key, outcome string, err error) {
	ref, r, ok := rec.Finish(outcome, err)
	if !ok {
		if c.kind == "" {
			return
		}
		ref = api.ObjectReference{Kind: c.kind}
		ref.Namespace, ref.Name = api.SplitKey(key)
	}
	if r.UID == "" && c.uidOf != nil {
		r.UID = c.uidOf(ref)
	}
	c.traces.Add(ref, r)
}

// outcome words the end of a reconcile for people: "done",
// "requeue in 5s", "failed: ...", "failed, not retried: ...",
// "interrupted: ..." (the controller was stopping) or "panicked: ...".
func outcome(ctx context.Context, res Result, err error, panicked any) string {
	switch {
	case panicked != nil:
		return fmt.Sprintf("panicked: %v", panicked)
	case err == nil && res.RequeueAfter > 0:
		return "requeue in " + trace.Round(res.RequeueAfter).String()
	case err == nil:
		return "done"
	case ctx.Err() != nil:
		return "interrupted: " + err.Error()
	case IsTerminal(err):
		return "failed, not retried: " + err.Error()
	default:
		return "failed: " + err.Error()
	}
}

func (c *Controller) count(result string) {
	if c.m != nil {
		c.m.reconciles.WithLabelValues(c.name, result).Inc()
	}
}
