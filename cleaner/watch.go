package cleaner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/informer"
)

// cleanerRefs is the part of a Cleaner the indexes read.
type cleanerRefs struct {
	Spec struct {
		Targets  []api.CleanerTarget  `json:"targets"`
		Capacity *api.CleanerCapacity `json:"capacity"`
	} `json:"spec"`
	Status struct {
		ResolvedTargets []string `json:"resolvedTargets"`
	} `json:"status"`
}

// refsCache gives the refs of Cleaner objects to the indexes and the
// handlers. It keeps each Cleaner's spec targets by uid and generation
// (the spec changes only with the generation, so a status write, or a
// restart's list then its handlers, decode no spec), and the refs of the
// last object asked for: the informer computes both indexes of an object
// and the handlers then look at it, one after the other, so its status is
// decoded once instead of three times. Cached objects are never modified,
// so the pointer identifies the version. The zero value is ready to use.
type refsCache struct {
	mu    sync.Mutex
	obj   *api.Object
	refs  cleanerRefs
	specs map[string]specTargets // by uid
}

// specTargets are the targets (and capacity) of one generation of a
// Cleaner's spec.
type specTargets struct {
	generation int64
	targets    []api.CleanerTarget
	capacity   *api.CleanerCapacity
}

// of returns the refs of o. They are shared: read them, never modify
// them.
func (rc *refsCache) of(o *api.Object) cleanerRefs {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.obj == o {
		return rc.refs
	}
	var r cleanerRefs
	if s, ok := rc.specs[o.UID]; ok && s.generation == o.Generation {
		r.Spec.Targets, r.Spec.Capacity = s.targets, s.capacity
	} else {
		if raw := o.Field(api.FieldSpec); raw != nil {
			_ = json.Unmarshal(raw, &r.Spec) // admitted specs decode; a bad one indexes nothing
		}
		if rc.specs == nil {
			rc.specs = map[string]specTargets{}
		}
		rc.specs[o.UID] = specTargets{generation: o.Generation, targets: r.Spec.Targets, capacity: r.Spec.Capacity}
	}
	if raw := o.Field(api.FieldStatus); raw != nil {
		_ = json.Unmarshal(raw, &r.Status)
	}
	rc.obj, rc.refs = o, r
	return r
}

// forget drops what is kept of the Cleaner uid (deleted).
func (rc *refsCache) forget(uid string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	delete(rc.specs, uid)
	if rc.obj != nil && rc.obj.UID == uid {
		rc.obj, rc.refs = nil, cleanerRefs{}
	}
}

// targetKey is an object's value in IndexTargets.
func targetKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// indexTargets indexes a Cleaner under each resolved target of its status
// and each evaluated target its spec names.
func (c *Controller) indexTargets(o *api.Object) []string {
	r := c.refs.of(o)
	var out []string
	for _, ref := range r.Status.ResolvedTargets {
		if kind, name, ok := strings.Cut(ref, "/"); ok {
			out = append(out, targetKey(kind, o.Namespace, name))
		}
	}
	for _, t := range r.Spec.Targets {
		if t.Evaluated() && t.Reference.Name != "" {
			out = append(out, targetKey(t.Reference.Kind, o.Namespace, t.Reference.Name))
		}
	}
	return out
}

// indexSelectors indexes a Cleaner under "Kind/ns" of each evaluated
// target selected by labels, and of its capacity's selector.
func (c *Controller) indexSelectors(o *api.Object) []string {
	var out []string
	r := c.refs.of(o)
	for _, t := range r.Spec.Targets {
		if t.Evaluated() && t.Reference.Name == "" {
			out = append(out, t.Reference.Kind+"/"+o.Namespace)
		}
	}
	if cp := r.Spec.Capacity; cp != nil {
		out = append(out, cp.Selector.Kind+"/"+o.Namespace)
	}
	return out
}

func isIndexExists(err error) bool { return errors.Is(err, informer.ErrIndexExists) }

// askWatch asks Run's watch loop to watch the kinds of o's targets. It
// never blocks (handlers call it).
func (c *Controller) askWatch(o *api.Object) {
	r := c.refs.of(o)
	c.mu.Lock()
	added := false
	kinds := make([]string, 0, len(r.Spec.Targets)+1)
	for _, t := range r.Spec.Targets {
		kinds = append(kinds, t.Reference.Kind)
	}
	if r.Spec.Capacity != nil {
		kinds = append(kinds, r.Spec.Capacity.Selector.Kind)
	}
	for _, k := range kinds {
		if _, ok := c.watched[k]; !ok && !c.toWatch[k] {
			c.toWatch[k] = true
			added = true
		}
	}
	c.mu.Unlock()
	if added {
		select {
		case c.wakeW <- struct{}{}:
		default:
		}
	}
}

// watchLoop watches the kinds askWatch asked for until ctx is done.
func (c *Controller) watchLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wakeW:
		}
		c.mu.Lock()
		var kinds []string
		for k := range c.toWatch {
			kinds = append(kinds, k)
		}
		clear(c.toWatch)
		c.mu.Unlock()
		for _, k := range kinds {
			if _, err := c.watch(k); err != nil {
				c.log.Debug("target kind not watched", "kind", k, "err", err)
			}
		}
	}
}

// watch returns the shared informer of kind with the controller's handler
// on it, adding the handler the first time. It fails (ErrUnresolvable)
// for a kind that is not served, not namespaced, or Cleaner. It does not wait for
// the informer to sync.
func (c *Controller) watch(kind string) (*informer.Informer, error) {
	namespaced, ok := c.served[kind]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: the server does not serve the kind %s", ErrUnresolvable, kind)
	case !namespaced:
		return nil, fmt.Errorf("%w: %s is cluster-scoped", ErrUnresolvable, kind)
	case kind == api.KindCleaner:
		// Admission refuses it: each evaluation writes a status, so
		// Cleaners watching Cleaners would wake each other for ever.
		return nil, fmt.Errorf("%w: a Cleaner cannot target Cleaners", ErrUnresolvable)
	}
	c.mu.Lock()
	inf, ok := c.watched[kind]
	c.mu.Unlock()
	if ok {
		return inf, nil
	}
	// Two callers may get here for one kind: the informer is shared and
	// the second registration is skipped below.
	inf = c.factory.For(kind)
	if err := inf.AddIndex(informer.NamespaceIndex, informer.IndexNamespace); err != nil && !isIndexExists(err) {
		return nil, err
	}
	c.mu.Lock()
	if prev, ok := c.watched[kind]; ok {
		c.mu.Unlock()
		return prev, nil
	}
	c.watched[kind] = inf
	c.since[kind] = time.Now()
	c.mu.Unlock()
	// The objects an informer already holds when the handler is added
	// (replayed to it by AddEventHandler) and those of its first list are
	// not changes: Cleaners that evaluated them are scheduled already, and
	// while the Cleaners of a restart are scheduled again from their
	// status they must not be evaluated early for nothing. An addition
	// counts when the informer has synced and the object is newer than
	// anything the informer had applied before the handler was added.
	base, _ := strconv.ParseInt(inf.ResourceVersion(), 10, 64)
	inf.AddEventHandler(informer.Handler{
		OnAdd: func(o *api.Object) {
			if !inf.HasSynced() {
				return
			}
			if rv, err := strconv.ParseInt(o.ResourceVersion, 10, 64); err == nil && rv <= base {
				return
			}
			c.targetChanged(kind, nil, o)
		},
		OnUpdate: func(old, o *api.Object) {
			if old != o { // a resync delivers the same object: not a change
				if specChanged(old, o) {
					c.observeChange(o.UID)
				}
				c.targetChanged(kind, old, o)
			}
		},
		OnDelete: func(o *api.Object) {
			c.forgetChange(o.UID)
			c.targetChanged(kind, o, nil)
		},
	})
	return inf, nil
}

// targetChanged queues exactly the Cleaners that evaluate the object that
// changed: those whose index names it, and those with a label selector of
// its kind in its namespace that matches it before or after the change
// (so objects entering and leaving a selection count).
func (c *Controller) targetChanged(kind string, old, o *api.Object) {
	obj := o
	if obj == nil {
		obj = old
	}
	keys, _ := c.cleaners.IndexKeys(IndexTargets, targetKey(kind, obj.Namespace, obj.Name))
	for _, k := range keys {
		c.ctrl.Enqueue(k)
	}
	sel, _ := c.cleaners.ByIndex(IndexSelectors, kind+"/"+obj.Namespace)
	for _, cl := range sel {
		r := c.refs.of(cl)
		if cp := r.Spec.Capacity; cp != nil && cp.Selector.Kind == kind &&
			(old != nil && matches(cp.Selector.MatchLabels, old.Labels) || o != nil && matches(cp.Selector.MatchLabels, o.Labels)) {
			c.ctrl.Enqueue(api.Key(cl.Namespace, cl.Name))
			continue
		}
		for _, t := range r.Spec.Targets {
			if !t.Evaluated() || t.Reference.Kind != kind || t.Reference.Name != "" {
				continue
			}
			if old != nil && matches(t.Reference.MatchLabels, old.Labels) || o != nil && matches(t.Reference.MatchLabels, o.Labels) {
				c.ctrl.Enqueue(api.Key(cl.Namespace, cl.Name))
				break
			}
		}
	}
}

// cacheSource is the Source of a reconcile: the shared informers' caches,
// waiting (up to Options.SyncTimeout) for a kind's first list.
type cacheSource struct {
	ctx context.Context
	c   *Controller
}

func (s cacheSource) informer(kind string) (*informer.Informer, error) {
	inf, err := s.c.watch(kind)
	if err != nil {
		return nil, err
	}
	if !inf.HasSynced() {
		ctx, cancel := context.WithTimeout(s.ctx, s.c.opts.SyncTimeout)
		defer cancel()
		if !inf.WaitForSync(ctx) {
			return nil, fmt.Errorf("%w: the cache of %s is not filled yet", ErrUnresolvable, kind)
		}
	}
	return inf, nil
}

func (s cacheSource) Get(kind, ns, name string) (*api.Object, bool, error) {
	inf, err := s.informer(kind)
	if err != nil {
		return nil, false, err
	}
	o, ok := inf.Get(ns, name)
	return o, ok, nil
}

// LastChange is LastChangeTime of o with the change the controller
// observed and the time it started watching kind.
func (s cacheSource) LastChange(kind string, o *api.Object) time.Time {
	s.c.mu.Lock()
	observed, since := s.c.changed[o.UID], s.c.since[kind]
	s.c.mu.Unlock()
	return LastChangeTime(o, observed, since)
}

// observeChange records that the object uid changed (besides its status)
// now.
func (c *Controller) observeChange(uid string) {
	c.mu.Lock()
	c.changed[uid] = time.Now()
	c.mu.Unlock()
}

// forgetChange forgets the change observed of the object uid (deleted).
func (c *Controller) forgetChange(uid string) {
	c.mu.Lock()
	delete(c.changed, uid)
	c.mu.Unlock()
}

func (s cacheSource) Select(kind, ns string, labels map[string]string) ([]*api.Object, error) {
	inf, err := s.informer(kind)
	if err != nil {
		return nil, err
	}
	all, err := inf.ByIndex(informer.NamespaceIndex, ns)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnresolvable, err)
	}
	var out []*api.Object
	for _, o := range all {
		if matches(labels, o.Labels) {
			out = append(out, o)
		}
	}
	return out, nil
}
