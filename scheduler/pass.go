package scheduler

import (
	"context"
	"errors"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// retraceDelay bounds how stale the place in the queue shown by an
// event's trace may be.
const retraceDelay = 2 * time.Second

// snapshot is the scheduler's view of the queue, read from the caches.
type snapshot struct {
	events       map[string]*api.Event
	workers      []Item
	jobs         []Item
	workersByPrj map[string]int
	jobsByPrj    map[string]int
	workerCap    Capacity
	jobCap       Capacity
}

// pass is one round of the seed's "Worker is Scheduled by the
// Controller", steps 1 and 2: the PENDING events are the queue; the
// scheduler waits for capacity (Choose) and claims what may start by a
// compare-and-swap PENDING → STARTING. The observer does the rest.
func (s *Scheduler) pass(ctx context.Context) {
	snap := s.snapshot()
	startW, waitW := Choose(snap.workers, snap.workersByPrj, snap.workerCap)
	startJ, _ := Choose(snap.jobs, snap.jobsByPrj, snap.jobCap)

	// A waiting event whose reason changed is observed again, so that its
	// trace says why it waits: at once for a new reason, within
	// retraceDelay for a new place in the queue (places move with every
	// start: a burst must not cost a reconcile of every waiting event per
	// start).
	s.mu.Lock()
	var now, later []string
	for key, w := range waitW {
		switch old, ok := s.waiting[key]; {
		case !ok || old.Limit != w.Limit:
			now = append(now, key)
		case old != w:
			later = append(later, key)
		}
	}
	s.waiting = waitW
	s.mu.Unlock()
	for _, key := range now {
		s.ctrl.Enqueue(key)
	}
	for _, key := range later {
		s.ctrl.EnqueueAfter(key, retraceDelay)
	}
	s.m.observe(snap, len(startW), len(startJ))
	for _, it := range startW {
		s.claimWorker(ctx, snap.events[it.Key])
	}
	jobs := map[string][]string{}
	var order []string
	for _, it := range startJ {
		evKey, job := splitJobKey(it.Key)
		if _, ok := jobs[evKey]; !ok {
			order = append(order, evKey)
		}
		jobs[evKey] = append(jobs[evKey], job)
	}
	for _, evKey := range order {
		s.claimJobs(ctx, snap.events[evKey], jobs[evKey])
	}
}

func splitJobKey(key string) (evKey, job string) {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return key, ""
}

// snapshot reads the queue and the load from the caches, counting what
// this scheduler claimed and the cache does not show yet as running.
func (s *Scheduler) snapshot() snapshot {
	snap := snapshot{events: map[string]*api.Event{}, workersByPrj: map[string]int{}, jobsByPrj: map[string]int{},
		workerCap: Capacity{Global: s.opts.MaxWorkers, PerProject: map[string]int{}},
		jobCap:    Capacity{Global: s.opts.MaxJobs, PerProject: map[string]int{}}}
	for _, o := range s.projects.List() {
		var p api.Project
		if o.Into(&p) == nil {
			key := api.Key(p.Namespace, p.Name)
			snap.workerCap.PerProject[key] = p.Spec.MaxConcurrentWorkers
			snap.jobCap.PerProject[key] = p.Spec.MaxConcurrentJobs
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	decoded := make(map[string]cachedEvent, len(s.decoded))
	for _, o := range s.events.List() {
		key := api.Key(o.Namespace, o.Name)
		c, ok := s.decoded[key]
		if !ok || c.rv != o.ResourceVersion {
			c = cachedEvent{rv: o.ResourceVersion}
			if o.Into(&c.ev) != nil {
				continue
			}
		}
		decoded[key] = c
		if o.Deleting() || c.ev.Status.Worker.Phase.Terminal() && !hasLiveJobs(&c.ev) {
			continue
		}
		ev := c.ev // the pass's own copy (its slices are never modified)
		prj := api.Key(ev.Namespace, ev.Spec.Project)
		snap.events[key] = &ev
		ph := ev.Status.Worker.Phase
		switch claimed := s.claimed[key]; {
		case ph == api.PhasePending && !claimed:
			snap.workers = append(snap.workers, Item{Key: key, Project: prj, Created: ev.CreationTimestamp})
		case !ph.Terminal():
			snap.workersByPrj[prj]++
			seen[key] = claimed && ph == api.PhasePending
		}
		for i, j := range ev.Status.Jobs {
			jk := key + "/" + j.Name
			switch claimed := s.claimed[jk]; {
			case j.Phase == api.PhasePending && !claimed:
				if ph == api.PhaseStarting || ph == api.PhaseRunning {
					created := ev.CreationTimestamp.Add(time.Duration(i) * time.Nanosecond)
					snap.jobs = append(snap.jobs, Item{Key: jk, Project: prj, Created: created})
				}
			case !j.Phase.Terminal():
				snap.jobsByPrj[prj]++
				seen[jk] = claimed && j.Phase == api.PhasePending
			}
		}
	}
	s.decoded = decoded
	// A claim the cache now shows (or whose event is gone) is forgotten.
	for k := range s.claimed {
		if !seen[k] {
			delete(s.claimed, k)
		}
	}
	return snap
}

// cachedEvent is an event as decoded at a resourceVersion.
type cachedEvent struct {
	rv string
	ev api.Event
}

// hasLiveJobs reports whether a job of ev is not terminal.
func hasLiveJobs(ev *api.Event) bool {
	for _, j := range ev.Status.Jobs {
		if !j.Phase.Terminal() {
			return true
		}
	}
	return false
}

// claimWorker moves ev's worker PENDING → STARTING by a compare-and-swap
// on the cached version. A Conflict or NotFound means someone else moved
// it (a cancel, a deletion, another scheduler): the next pass decides
// again from the new state.
func (s *Scheduler) claimWorker(ctx context.Context, ev *api.Event) {
	key := api.Key(ev.Namespace, ev.Name)
	next := *ev
	next.Status.Worker.Phase = api.PhaseStarting
	if _, err := client.For[*api.Event](s.c).UpdateStatus(ctx, &next); err != nil {
		if !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrNotFound) && ctx.Err() == nil {
			s.log.Warn("could not claim an event", "event", key, "err", err)
		}
		return
	}
	s.mu.Lock()
	s.claimed[key] = true
	s.mu.Unlock()
	s.m.claimed("worker", 1)
	s.ctrl.Enqueue(key)
}

// claimJobs moves the jobs of ev PENDING → STARTING in one
// compare-and-swap.
func (s *Scheduler) claimJobs(ctx context.Context, ev *api.Event, jobs []string) {
	key := api.Key(ev.Namespace, ev.Name)
	next := *ev
	next.Status.Jobs = append([]api.JobStatus(nil), ev.Status.Jobs...)
	for i := range next.Status.Jobs {
		for _, name := range jobs {
			if next.Status.Jobs[i].Name == name {
				next.Status.Jobs[i].Phase = api.PhaseStarting
			}
		}
	}
	if _, err := client.For[*api.Event](s.c).UpdateStatus(ctx, &next); err != nil {
		if !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrNotFound) && ctx.Err() == nil {
			s.log.Warn("could not claim jobs", "event", key, "err", err)
		}
		return
	}
	s.mu.Lock()
	for _, name := range jobs {
		s.claimed[key+"/"+name] = true
	}
	s.mu.Unlock()
	s.m.claimed("job", len(jobs))
	s.ctrl.Enqueue(key)
}
