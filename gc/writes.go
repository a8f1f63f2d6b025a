package gc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/trace"
)

// namespaceEmpty asks the API whether anything is left in namespace ns: one
// list of at most one item per namespaced kind. It runs once per namespace
// deletion, when the graph says the namespace is empty, because the graph
// may lag behind on some kind's watch.
func (c *Collector) namespaceEmpty(ctx context.Context, ns string) (bool, error) {
	for _, k := range c.namespaced {
		l, err := c.w.List(ctx, k, ns, api.ListOptions{Limit: 1})
		if err != nil {
			return false, fmt.Errorf("gc: check namespace %s is empty: list %s: %w", ns, k, err)
		}
		if len(l.Items) > 0 {
			c.log.Debug("namespace not empty yet", "namespace", ns, "kind", k, "name", l.Items[0].Name)
			return false, nil
		}
	}
	return true, nil
}

// deleteAll deletes the victims, a bounded number at a time. It returns
// how long to wait before the owner is handled again (zero: no need): the
// ConfirmRetry when some victim was held back because an owner the graph
// thought gone is still there, the refusal backoff when the API refused to
// delete one (see delete); the shortest of them. The errors of the victims
// that failed with a retryable error are joined.
func (c *Collector) deleteAll(ctx context.Context, victims []target) (after time.Duration, err error) {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, parallelDeletes)
	)
	for _, v := range victims {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var wait time.Duration
			present, err := c.anyPresent(ctx, v.Namespace, v.confirm)
			switch {
			case err != nil:
			case present:
				wait = c.opts.ConfirmRetry
			default:
				wait, err = c.delete(ctx, v.Node, v.leaf, "cascade")
			}
			mu.Lock()
			defer mu.Unlock()
			after = sooner(after, wait)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return after, errors.Join(errs...)
}

// sooner returns the shorter of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// anyPresent reads the owners the graph believes gone and reports whether
// one of them exists with the referenced uid (any uid for a reference
// without one).
func (c *Collector) anyPresent(ctx context.Context, ns string, refs []api.OwnerReference) (bool, error) {
	for _, r := range refs {
		rns := ns
		if r.Kind == NamespaceKind {
			rns = ""
		}
		o, err := c.w.Get(ctx, r.Kind, rns, r.Name)
		switch {
		case errors.Is(err, api.ErrNotFound):
			continue
		case err != nil:
			return false, fmt.Errorf("gc: read owner %s %s: %w", r.Kind, api.Key(rns, r.Name), err)
		case r.UID == "" || o.UID == r.UID:
			return true, nil
		}
	}
	return false, nil
}

// delete marks n for deletion, guarded by its uid. An object already gone
// or replaced by another of the same name is not an error.
//
// A leaf (no finalizer, no dependents) is removed in one step instead: a
// forced delete guarded by its uid and the resourceVersion the graph saw.
// Marking it would only add cascade-deletion for the collector to remove
// again at once, with nothing in between to wait for; this halves the
// writes of a wide cascade. If the object changed since (a finalizer was
// added, say), or the client may not force, the guard fails and the
// ordinary delete follows. A dependent created for it meanwhile is an
// orphan and is collected as such.
//
// A Conflict from the ordinary delete is ambiguous: the uid precondition
// failed (n was replaced: nothing to do), or the API gave up on an object
// that kept changing under it (n must still go). delete tells them apart by
// reading n again (see afterConflict) and returns an error in the second
// case, so that the handled object is retried with the controller's
// backoff: a cascade never stalls on a victim that was busy once.
//
// A Forbidden answer (the API refuses this deletion: the default
// namespace, say, or a caller without the right) is not an error either,
// since retrying at once cannot change it, but it is not dropped: delete
// returns the delay after which the handled object should be reconciled
// again (see refuse), doubling for every refusal of n. Every other error
// is returned, wrapped.
func (c *Collector) delete(ctx context.Context, n Node, leaf bool, why string) (time.Duration, error) {
	if leaf && n.ResourceVersion != "" {
		_, _, err := c.w.Delete(ctx, n.Kind, n.Namespace, n.Name, api.DeleteOptions{Force: true,
			Preconditions: api.Preconditions{UID: n.UID, ResourceVersion: n.ResourceVersion}})
		switch {
		case err == nil:
			c.deleted(n, why)
			return 0, nil
		case errors.Is(err, api.ErrNotFound):
			return 0, nil
		case !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrForbidden):
			return 0, fmt.Errorf("gc: delete %s: %w", n, err)
		}
	}
	_, _, err := c.w.Delete(ctx, n.Kind, n.Namespace, n.Name,
		api.DeleteOptions{Preconditions: api.Preconditions{UID: n.UID}})
	switch {
	case err == nil:
		c.deleted(n, why)
		return 0, nil
	case errors.Is(err, api.ErrNotFound):
		return 0, nil
	case errors.Is(err, api.ErrConflict):
		return 0, c.afterConflict(ctx, n, err)
	case errors.Is(err, api.ErrForbidden):
		trace.Check(ctx, "the API refuses to delete %s: %v", n, err)
		return c.refuse(n, why, err), nil
	default:
		return 0, fmt.Errorf("gc: delete %s: %w", n, err)
	}
}

// afterConflict decides, from a fresh read, what a Conflict answered to
// the delete of n means. It returns nil when n is gone, was replaced by an
// object with another uid, or is already being deleted (someone else's
// delete won the race); the graph will see that. Otherwise n is still
// there and live, and it returns conflict wrapped: the delete must be
// retried. A failed read is returned too.
func (c *Collector) afterConflict(ctx context.Context, n Node, conflict error) error {
	cur, err := c.w.Get(ctx, n.Kind, n.Namespace, n.Name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("gc: delete %s: read after conflict: %w", n, err)
	case cur.UID != n.UID:
		c.log.Debug("not deleted: replaced by another object of the same name",
			"object", n.String(), "uid", cur.UID)
		return nil
	case cur.Deleting():
		return nil
	}
	return fmt.Errorf("gc: delete %s: still present after a conflict; retrying: %w", n, conflict)
}

// msgRefused is the message of the log records of refused deletions.
const msgRefused = "deletion refused by the API; will retry with backoff"

// maxRefusalRetry caps the delay before an object whose deletion the API
// refused is tried again.
const maxRefusalRetry = 5 * time.Minute

// refuse records that the API refused to delete n (Forbidden) and returns
// how long to wait before trying again: ConfirmRetry after the first
// refusal, doubling with each further one up to maxRefusalRetry. The
// first refusal of n is logged as a warning, the next ones at debug level,
// so a deletion the API will never allow is reported once and costs one
// request per backoff period, not a busy loop. The count is kept while n
// is in the graph and dropped when n is deleted or disappears.
func (c *Collector) refuse(n Node, why string, err error) time.Duration {
	c.mu.Lock()
	count := 1
	if _, ok := c.graph.nodes[n.UID]; ok {
		c.refused[n.UID]++
		count = c.refused[n.UID]
	}
	c.mu.Unlock()
	wait := c.opts.ConfirmRetry
	for i := 1; i < count && wait < maxRefusalRetry; i++ {
		wait *= 2
	}
	wait = min(wait, maxRefusalRetry)
	log := c.log.Debug
	if count == 1 {
		log = c.log.Warn
	}
	log(msgRefused, "object", n.String(),
		"reason", why, "refusals", count, "retryAfter", wait, "err", err)
	return wait
}

// deleted records a successful delete of n: until the graph sees n
// deleting or gone, cascades do not ask for it again.
func (c *Collector) deleted(n Node, why string) {
	c.mu.Lock()
	if cur, ok := c.graph.nodes[n.UID]; ok && !cur.Deleting {
		c.requested[n.UID] = struct{}{}
	}
	delete(c.refused, n.UID)
	c.mu.Unlock()
	c.m.action(why)
	c.log.Debug("deleted", "object", n.String(), "reason", why)
}

// detach removes d's references to owner uid.
func (c *Collector) detach(ctx context.Context, d Node, owner string) error {
	return c.modify(ctx, d, "detach", func(o *api.Object) bool {
		kept := o.OwnerReferences[:0:0]
		for _, r := range o.OwnerReferences {
			if r.UID != owner {
				kept = append(kept, r)
			}
		}
		if len(kept) == len(o.OwnerReferences) {
			return false
		}
		o.OwnerReferences = kept
		return true
	})
}

// removeFinalizer removes the collector's finalizer f from n; the API then
// removes n if no other finalizer remains.
func (c *Collector) removeFinalizer(ctx context.Context, n Node, f string) error {
	return c.modify(ctx, n, "finalize", func(o *api.Object) bool {
		return o.RemoveFinalizer(f)
	})
}

// reportCycle writes the cycle annotation on n, once.
func (c *Collector) reportCycle(ctx context.Context, n Node, report string) error {
	c.log.Warn("ownership cycle detected; its deletion will still complete",
		"object", n.String(), "cycle", report)
	return c.modify(ctx, n, "report-cycle", func(o *api.Object) bool {
		if o.Annotations[AnnotationCycle] != "" {
			return false
		}
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[AnnotationCycle] = report
		return true
	})
}

// modify applies change to a copy of n's current version and writes it
// with the resourceVersion compare-and-swap (conflict.Modify: it starts
// from the informer's cached copy and re-reads from the API after a
// Conflict). change returns false when there is nothing to write. An
// object gone, or replaced by one with another uid, is left alone.
func (c *Collector) modify(ctx context.Context, n Node, action string, change func(*api.Object) bool) error {
	get := func(ctx context.Context) (*api.Object, error) { return c.w.Get(ctx, n.Kind, n.Namespace, n.Name) }
	_, wrote, err := conflict.Modify(ctx, c.cached(n), get,
		func(o *api.Object) (bool, error) { return o.UID == n.UID && change(o), nil }, c.w.Update)
	switch {
	case errors.Is(err, api.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("gc: %s %s: %w", action, n, err)
	case wrote:
		c.m.action(action)
		c.log.Debug(action, "object", n.String())
	}
	return nil
}

// cached returns a private copy of n from its kind's shared informer, or
// nil.
func (c *Collector) cached(n Node) *api.Object {
	o, ok := c.factory.For(n.Kind).Get(n.Namespace, n.Name)
	if !ok || o.UID != n.UID {
		return nil
	}
	return o.DeepCopy()
}
