package cleaner

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"k8s.io/client-go/util/workqueue"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
)

// Statuses are written behind the evaluations.
//
// An evaluation decides from the informer caches alone and acts at once:
// it schedules the next evaluation, or deletes. The status it yields
// (phase, lastEvaluation, nextScheduledEvaluation, lastError) reports that
// decision, and the statusWriter writes it apart from the evaluation, so
// that when many Cleaners are due together the evaluations (and the
// deletions of the Cleaners whose conditions hold) are not held up behind
// as many status writes; the writes follow, committed many to a
// transaction (client.GroupStatuses).
//
// Only the newest status of a Cleaner waits: a newer decision replaces one
// not written yet, and the next evaluation starts from it. A write that
// conflicts (the cache had not caught up with the Cleaner) is made again
// on the newest cached version, as the status is the controller's alone; a
// Cleaner gone, or re-created under its name (another uid), drops its
// pending status; other failures are retried with the work queue's
// backoff. A crash loses nothing that matters: a Cleaner whose status was
// not written yet names an earlier evaluation time (or none), so the next
// controller evaluates it again at once.
//
// pending is a write-behind queue, not a second stale-cache guard: it
// holds decisions not written yet (latest lets the next evaluation start
// from one), where controller.Written remembers writes already made.
type statusWriter struct {
	c     client.Interface
	get   func(ns, name string) (*api.Object, bool) // the Cleaner cache
	log   *slog.Logger
	m     *metrics
	queue workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	pending map[string]*pendingStatus // by "namespace/name"
}

// pendingStatus is a status waiting to be written on the Cleaner uid.
type pendingStatus struct {
	uid string
	raw json.RawMessage
}

func newStatusWriter(c client.Interface, get func(ns, name string) (*api.Object, bool), log *slog.Logger, m *metrics) *statusWriter {
	return &statusWriter{
		c: c, get: get, log: log, m: m, pending: map[string]*pendingStatus{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "cleaner-status"}),
	}
}

// set makes raw the status to write on the Cleaner key, of uid, replacing
// any not written yet.
func (w *statusWriter) set(key, uid string, raw json.RawMessage) {
	w.mu.Lock()
	w.pending[key] = &pendingStatus{uid: uid, raw: raw}
	w.m.setPendingStatuses(len(w.pending))
	w.mu.Unlock()
	w.queue.Add(key)
}

// latest returns the status waiting to be written on the Cleaner key of
// uid, if any.
func (w *statusWriter) latest(key, uid string) (json.RawMessage, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pending[key]; p != nil && p.uid == uid {
		return p.raw, true
	}
	return nil, false
}

// done forgets the status of key when it is still p (a newer one stays).
func (w *statusWriter) done(key string, p *pendingStatus) {
	w.mu.Lock()
	if w.pending[key] == p {
		delete(w.pending, key)
	}
	w.m.setPendingStatuses(len(w.pending))
	w.mu.Unlock()
	w.queue.Forget(key)
}

// run writes statuses with the given number of workers until ctx is done;
// it returns once they have stopped. The statuses not written by then are
// dropped (see above).
func (w *statusWriter) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for w.writeNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
}

// writeNext writes the status of the next key queued; false once the
// queue is shut down.
func (w *statusWriter) writeNext(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	w.mu.Lock()
	p := w.pending[key]
	w.mu.Unlock()
	if p == nil {
		w.queue.Forget(key)
		return true
	}
	ns, name, _ := strings.Cut(key, "/")
	obj, found := w.get(ns, name)
	switch {
	case !found || obj.UID != p.uid:
		w.done(key, p) // gone, or another Cleaner now
		return true
	case !controller.StatusChanged(obj.Field(api.FieldStatus), p.raw):
		w.done(key, p) // written already
		return true
	}
	o := obj.DeepCopy()
	o.SetField(api.FieldStatus, p.raw)
	_, err := w.c.UpdateStatus(ctx, o)
	switch {
	case err == nil, errors.Is(err, api.ErrNotFound):
		w.done(key, p)
	case ctx.Err() != nil:
	case errors.Is(err, api.ErrConflict):
		// The cache is behind the Cleaner: write again on its next version.
		w.queue.AddRateLimited(key)
	default:
		w.log.Warn("cannot write a Cleaner's status; retrying", "cleaner", key, "err", err)
		w.queue.AddRateLimited(key)
	}
	return true
}
