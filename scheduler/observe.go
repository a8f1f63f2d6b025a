package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/trace"
)

// errNoSecret: the event's secrets are missing (it was not created
// through the events endpoint), so its worker cannot get its data:
// SCHEDULING_FAILED.
var errNoSecret = errors.New("the event's secrets do not exist")

// action is one plan with the unit it is about.
type action struct {
	unit string
	plan Plan
	// live: the unit runs (and is not being killed): wait on it.
	live bool
}

func live(u Unit, p Plan) bool { return u.Exists && !u.State.Phase.Done() && !p.Kill }

// reconcile observes one event: it starts what the scheduler claimed,
// writes what the units' states say, kills and cleans up. Level-based: it
// reads the event from the cache and the units from the runtime.
func (s *Scheduler) reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	trace.Object(ctx, api.KindEvent, ns, name)
	obj, ok := s.events.Get(ns, name)
	if !ok {
		trace.Check(ctx, "the event is not in the cache: presumed deleted")
		return controller.Result{}, s.gone(ctx, key)
	}
	var ev api.Event
	if err := obj.Into(&ev); err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("scheduler: event %s does not decode: %w", key, err))
	}
	if ev.Deleting() {
		trace.Check(ctx, "the event is being deleted")
		trace.Action(ctx, "removed its runtime resources at once (logs too)")
		return controller.Result{}, s.removeUnits(ctx, ev.UID)
	}
	now := s.opts.Now()
	if w := ev.Status.Worker; w.Phase == api.PhasePending {
		if wait, ok := s.Waiting(key); ok {
			trace.Exit(ctx, "PENDING, %s", wait)
		} else {
			trace.Exit(ctx, "PENDING: in the queue, the scheduler claims it when capacity allows")
		}
		return controller.Result{}, nil
	}
	// Read the units of the worker and its jobs, and plan.
	sights, err := s.sight(ctx, &ev, now)
	if err != nil {
		return controller.Result{}, err
	}
	ob := planObservation(ev.Status, sights, now, s.opts.GracePeriod)
	traceObservation(ctx, sights, ob)

	// Use the API to update the state (the seed's first step of every
	// observation), then start what was claimed, write what the starts
	// said, and act on the runtime.
	cur, res, done, err := s.writeObserved(ctx, key, &ev, ob.status)
	if done {
		return res, err
	}
	if err := s.keepLogs(ctx, cur, sights); err != nil {
		return controller.Result{}, err
	}
	acts := ob.acts
	if len(ob.starts) > 0 {
		plans, units := s.startClaimed(ctx, cur, sights, ob.starts, now)
		st := ob.status // as written, its jobs in the order of sights
		st.Jobs = append([]api.JobStatus(nil), ob.status.Jobs...)
		sacts, canceled := applyStarts(&st, sights, plans, units, now)
		traceCanceled(ctx, canceled)
		if cur, res, done, err = s.writeObserved(ctx, key, cur, st); done {
			return res, err
		}
		acts = append(acts, sacts...)
	}
	var requeue time.Time
	for _, a := range acts {
		at, err := s.act(ctx, key, a)
		if err != nil {
			return controller.Result{}, err
		}
		requeue = earliest(requeue, at)
	}
	if requeue.IsZero() {
		trace.Exit(ctx, "worker %s: nothing to wait for", cur.Status.Worker.Phase)
		return controller.Result{}, nil
	}
	d := max(requeue.Sub(now), 10*time.Millisecond)
	trace.Exit(ctx, "worker %s: look again in %s", cur.Status.Worker.Phase, d.Round(time.Millisecond))
	return controller.Result{RequeueAfter: d}, nil
}

// conflict is the seed's 409: the status changed under the write. Read it
// again: gone → presumed deleted; a terminal worker → treat it as canceled
// or aborted (kill and clean up at once); a job that became terminal
// while the worker lives → that job is terminal at once ("Job State is
// Observed": treat it as such going forward): its unit is killed and
// cleaned up now, and the rest of the event is observed again when the
// cache shows the new version (the write that made the job terminal
// enqueues the event); otherwise someone else wrote it meanwhile or the
// cache was behind: no error, it is observed again with the new version.
func (s *Scheduler) conflict(ctx context.Context, ev *api.Event) (controller.Result, error) {
	cur, err := client.For[*api.Event](s.c).Get(ctx, ev.Namespace, ev.Name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		trace.Exit(ctx, "409 then 404: presumed deleted, its runtime resources go at once")
		return controller.Result{}, s.removeUnits(ctx, ev.UID)
	case err != nil:
		return controller.Result{}, err
	case cur.UID != ev.UID:
		return controller.Result{}, s.removeUnits(ctx, ev.UID)
	case cur.Status.Worker.Phase.Terminal():
		trace.Exit(ctx, "409: the worker is already %s: treated as canceled/aborted, its units killed and cleaned up at once", cur.Status.Worker.Phase)
		return controller.Result{}, s.killAll(ctx, cur)
	}
	if ended := endedJobs(ev, cur); len(ended) > 0 {
		ids := make([]string, len(ended))
		for i, j := range ended {
			ids[i] = unitFor(cur, j.Name)
		}
		if err := s.cleanupNow(ctx, ids); err != nil {
			return controller.Result{}, err
		}
		trace.Exit(ctx, "409: %s already terminal while the worker lives: treated as such at once, killed and cleaned up; the rest is observed again with the new version", jobsPhases(ended))
		return controller.Result{}, nil
	}
	// Someone else wrote the event meanwhile (a claim of the pass, an
	// action through the API): no error, only an older version. Its
	// watch event brings the key back; the short requeue covers a
	// cache that shows it late.
	trace.Exit(ctx, "409: the event changed while being observed; observed again with the new version")
	return controller.Result{RequeueAfter: conflictRequeue}, nil
}

// conflictRequeue is how soon an event whose status write met a plain
// conflict is observed again, should its watch event be late.
const conflictRequeue = 100 * time.Millisecond

// endedJobs are the jobs terminal in cur that were not in old.
func endedJobs(old, cur *api.Event) []api.JobStatus {
	was := map[string]api.EventPhase{}
	for _, j := range old.Status.Jobs {
		was[j.Name] = j.Phase
	}
	var out []api.JobStatus
	for _, j := range cur.Status.Jobs {
		if j.Phase.Terminal() && !was[j.Name].Terminal() {
			out = append(out, j)
		}
	}
	return out
}

func jobsPhases(jobs []api.JobStatus) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = fmt.Sprintf("job %s (%s)", j.Name, j.Phase)
	}
	return strings.Join(parts, ", ")
}

// killAll kills and cleans up every unit of ev at once.
func (s *Scheduler) killAll(ctx context.Context, ev *api.Event) error {
	ids := []string{unitFor(ev, "")}
	for _, j := range ev.Status.Jobs {
		ids = append(ids, unitFor(ev, j.Name))
	}
	return s.cleanupNow(ctx, ids)
}

// cleanupNow kills and cleans up the units ids at once (a unit the runtime
// does not know is no error). It blocks on the runtime. Errors: the
// runtime's.
func (s *Scheduler) cleanupNow(ctx context.Context, ids []string) error {
	for _, id := range ids {
		if err := s.rt.Cleanup(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return err
		}
		s.markCleaned(id)
	}
	return nil
}

// start starts the unit of ev's worker (job "") or job, or finds it
// started (a restart never starts a unit twice: the runtime keeps its ID).
// It reads the event's secrets and registers a token minted for the unit
// (by its hash: the plain token goes only to the unit) before starting it;
// a token registered for a unit that turns out to be started already is
// never used, and goes with the event.
func (s *Scheduler) start(ctx context.Context, ev *api.Event, job string, spec api.WorkerSpec) (runtime.State, error) {
	sec, err := s.eventSecrets(ctx, ev)
	if err != nil {
		return runtime.State{}, err
	}
	token, hash, err := newUnitToken()
	if err != nil {
		return runtime.State{}, err
	}
	us, err := s.opts.BuildUnit(UnitInput{Event: ev, Job: job, Spec: spec, Secrets: sec.Data, Token: token,
		Server: s.opts.APIServer, CAFile: s.opts.APICAFile, Path: s.opts.Path})
	if err != nil {
		return runtime.State{}, err
	}
	if err := s.registerToken(ctx, ev, hash); err != nil {
		return runtime.State{}, err
	}
	st, err := s.rt.Start(ctx, us)
	if errors.Is(err, runtime.ErrExists) {
		st, err = s.rt.State(ctx, us.ID)
	}
	if err != nil {
		return runtime.State{}, err
	}
	return st, nil
}

// eventSecrets reads the secrets of ev (an admin's action): errNoSecret
// when it has none, or they are another event's of its name.
func (s *Scheduler) eventSecrets(ctx context.Context, ev *api.Event) (*api.Secret, error) {
	raw, err := s.c.Action(ctx, client.ActionRequest{Method: http.MethodGet, Kind: api.KindEvent,
		Namespace: ev.Namespace, Name: ev.Name, Action: api.ActionEventSecrets})
	if errors.Is(err, api.ErrNotFound) {
		return nil, errNoSecret
	}
	if err != nil {
		return nil, err
	}
	var sec api.Secret
	if err := json.Unmarshal(raw, &sec); err != nil {
		return nil, fmt.Errorf("scheduler: the secrets of event %s do not decode: %w", ev.Name, err)
	}
	if !ownedBy(&sec, ev.UID) {
		return nil, errNoSecret
	}
	return &sec, nil
}

// registerToken registers the token whose hash is hash for a unit of ev
// (an admin's action). Errors: the action's (NotFound, Conflict: the
// event was deleted, replaced or ended meanwhile).
func (s *Scheduler) registerToken(ctx context.Context, ev *api.Event, hash string) error {
	body, err := json.Marshal(api.EventTokenRequest{UID: ev.UID, Hash: hash})
	if err != nil {
		return err
	}
	_, err = s.c.Action(ctx, client.ActionRequest{Kind: api.KindEvent, Namespace: ev.Namespace, Name: ev.Name,
		Action: api.ActionEventTokens, Body: body})
	if err != nil {
		return fmt.Errorf("register the unit's token: %w", err)
	}
	return nil
}

func ownedBy(sec *api.Secret, uid string) bool {
	for _, r := range sec.OwnerReferences {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// act carries a plan out on the runtime: kill, clean up now or say when,
// and have a goroutine wait on a running unit. It returns when to look
// again (zero: not needed).
func (s *Scheduler) act(ctx context.Context, key string, a action) (time.Time, error) {
	p, now := a.plan, s.opts.Now()
	if p.Kill {
		if err := s.rt.Kill(ctx, a.unit); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return time.Time{}, err
		}
		trace.Action(ctx, "killed unit %s and its process group", a.unit)
	}
	next := p.RecheckAt
	if a.live {
		s.watch(ctx, key, a.unit)
	}
	switch {
	case p.CleanupAt.IsZero():
	case !p.CleanupAt.After(now):
		if err := s.rt.Cleanup(ctx, a.unit); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return time.Time{}, err
		}
		if !s.isCleaned(a.unit) {
			trace.Action(ctx, "cleaned up unit %s (its logs stay until the event is deleted)", a.unit)
		}
		s.markCleaned(a.unit)
	default:
		trace.Check(ctx, "unit %s is cleaned up at %s (grace period)", a.unit, p.CleanupAt.UTC().Format(time.RFC3339))
		next = earliest(next, p.CleanupAt)
	}
	return next, nil
}

// watch has a goroutine wait for the unit to end and enqueue the event
// then, once per unit.
func (s *Scheduler) watch(ctx context.Context, key, id string) {
	s.mu.Lock()
	if s.watching[id] {
		s.mu.Unlock()
		return
	}
	s.watching[id] = true
	s.mu.Unlock()
	s.waiters.Add(1)
	go func() {
		defer s.waiters.Done()
		_, _ = s.rt.Wait(ctx, id)
		s.mu.Lock()
		delete(s.watching, id)
		s.mu.Unlock()
		s.ctrl.Enqueue(key)
	}()
}

// gone removes the units of a deleted event, known by its last uid.
func (s *Scheduler) gone(ctx context.Context, key string) error {
	s.mu.Lock()
	uid := s.uids[key]
	delete(s.uids, key)
	delete(s.waiting, key)
	s.mu.Unlock()
	if uid == "" {
		return nil
	}
	trace.Action(ctx, "removed its runtime resources at once (logs too)")
	return s.removeUnits(ctx, uid)
}

// removeUnits removes every unit of the event uid, logs included.
func (s *Scheduler) removeUnits(ctx context.Context, uid string) error {
	s.mu.Lock()
	for id := range s.unknown {
		if got, ok := eventUID(id); ok && got == uid {
			delete(s.unknown, id)
		}
	}
	s.mu.Unlock()
	units, err := s.rt.List(ctx)
	if err != nil {
		return err
	}
	for _, u := range units {
		if got, ok := eventUID(u.ID); ok && got == uid {
			if err := s.rt.Remove(ctx, u.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				return err
			}
			s.mu.Lock()
			delete(s.cleaned, u.ID)
			delete(s.unknown, u.ID)
			s.mu.Unlock()
			s.keep.Forget(u.ID)
		}
	}
	return nil
}

// unit asks the runtime for the state of the unit id. A runtime that
// fails to answer is no error: the Unit says so (Unanswered), and the
// worker or job becomes UNKNOWN. Errors: ctx's, when it ended.
func (s *Scheduler) unit(ctx context.Context, id string) (Unit, error) {
	st, err := s.rt.State(ctx, id)
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		return Unit{}, nil
	case err != nil && ctx.Err() != nil:
		return Unit{}, ctx.Err()
	case err != nil:
		return Unit{Unanswered: err.Error()}, nil
	}
	return Unit{Exists: true, State: st}, nil
}

// unknownSince is since when the state of the unit id of a worker or job
// observed as o (its phase, unit and recorded intent) cannot be observed
// at now: the earliest of when this process first saw it so and when the
// runtime reported it lost; zero when its state is known (or it is terminal, or not started yet).
// The first of these is in memory: a restart of the observer starts
// counting again for units the runtime does not list or cannot be asked
// about.
func (s *Scheduler) unknownSince(id string, o Observed, now time.Time) time.Time {
	phase, u := o.Phase, o.Unit
	s.mu.Lock()
	defer s.mu.Unlock()
	notStarted := phase == api.PhaseStarting && !u.Exists && o.Intent == ""
	if phase.Terminal() || phase == api.PhasePending || notStarted || UnknownWhy(u) == "" {
		delete(s.unknown, id)
		return time.Time{}
	}
	since, ok := s.unknown[id]
	if !ok {
		since = now
	}
	if u.Exists && !u.State.Ended.IsZero() && u.State.Ended.Before(since) {
		since = u.State.Ended
	}
	s.unknown[id] = since
	return since
}

func (s *Scheduler) isCleaned(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cleaned[id]
}

func (s *Scheduler) markCleaned(id string) {
	s.mu.Lock()
	s.cleaned[id] = true
	s.mu.Unlock()
}

func timeout(w api.WorkerSpec) time.Duration {
	if w.Timeout == nil {
		return 0
	}
	return w.Timeout.Duration
}

// applyWorker writes a plan's phase into a worker's status, when the
// transition is allowed.
func applyWorker(w *api.WorkerStatus, p Plan) {
	if p.Phase == "" || !api.Transition(w.Phase, p.Phase) {
		return
	}
	w.Phase, w.Reason = p.Phase, p.Reason
	if p.ExitCode != nil {
		w.ExitCode = p.ExitCode
	}
	if !p.Started.IsZero() && w.Started.IsZero() {
		w.Started = p.Started.UTC()
	}
	if !p.Ended.IsZero() {
		w.Ended = p.Ended.UTC()
	}
}

func applyJob(j *api.JobStatus, p Plan) {
	w := api.WorkerStatus{Phase: j.Phase, Started: j.Started, Ended: j.Ended, Reason: j.Reason, ExitCode: j.ExitCode}
	applyWorker(&w, p)
	j.Phase, j.Started, j.Ended, j.Reason, j.ExitCode = w.Phase, w.Started, w.Ended, w.Reason, w.ExitCode
}

func jobsSummary(st *api.EventStatus) string {
	if len(st.Jobs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; jobs")
	for _, j := range st.Jobs {
		fmt.Fprintf(&b, " %s=%s", j.Name, j.Phase)
	}
	return b.String()
}

func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
