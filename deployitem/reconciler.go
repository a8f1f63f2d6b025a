package deployitem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Options configures the timeout controller.
type Options struct {
	// Timeouts; a zero field takes its default (DefaultPickup, ...), a
	// negative one disables that check.
	Timeouts Timeouts
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Workers; default 4.
	Workers int
}

// Reconciler checks the timeouts of deploy items. It is level-based: each
// Reconcile reads the item from the shared informer, decides with Check
// and writes the outcome: a Failed status, then the annotations.
type Reconciler struct {
	c     client.Interface
	opts  Options
	items *informer.Informer
}

// Setup adds the timeout controller "deployitem-timeout" to a manager's
// term: it checks a deploy item when it changes and when its earliest
// timeout is due.
func Setup(t *manager.Term, opts Options) error {
	opts.Timeouts = withDefaults(opts.Timeouts)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	r := &Reconciler{c: t.Client, opts: opts, items: t.Informers.For(api.KindDeployItem)}
	return manager.NewBuilder(t, "deployitem-timeout").For(api.KindDeployItem).Workers(opts.Workers).Complete(r)
}

func withDefaults(t Timeouts) Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			*d = 0
		}
	}
	def(&t.Pickup, DefaultPickup)
	def(&t.Aborting, DefaultAborting)
	def(&t.Progressing, DefaultProgressing)
	return t
}

// Reconcile checks the timeouts of the deploy item key ("ns/name").
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name := api.SplitKey(key)
	obj, ok := r.items.Get(ns, name)
	if !ok {
		return controller.Result{}, nil
	}
	d, err := controller.Decode[*api.DeployItem](obj)
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("deployitem: %w", err))
	}
	now := r.opts.Now()
	dec := Check(d, now, r.opts.Timeouts)
	for _, s := range dec.Steps {
		trace.Check(ctx, "timeout %s", s)
	}
	if dec.Fail != nil {
		e := *dec.Fail
		e.Time = now.UTC()
		d.Status.Phase, d.Status.ObservedGeneration, d.Status.LastError = api.DeployFailed, d.Generation, &e
		out, err := controller.StatusUpdate(d, d.Status)
		if err != nil {
			return controller.Result{}, err
		}
		if _, err := r.c.UpdateStatus(ctx, out); err != nil {
			return controller.Result{}, fmt.Errorf("deployitem: fail %s by %s: %w", key, e.Reason, err)
		}
		trace.Action(ctx, "Failed: %s: %s", e.Reason, e.Message)
	}
	if len(dec.Set) > 0 || len(dec.Remove) > 0 {
		ann := map[string]any{}
		for _, k := range dec.Remove {
			ann[k] = nil
		}
		for k, v := range dec.Set {
			ann[k] = v
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
		if err != nil {
			return controller.Result{}, err
		}
		if _, err := r.c.Patch(ctx, api.KindDeployItem, ns, name, patch, false); err != nil && !errors.Is(err, api.ErrNotFound) {
			return controller.Result{}, fmt.Errorf("deployitem: annotate %s: %w", key, err)
		}
		for _, k := range sortedKeys(dec.Set) {
			trace.Action(ctx, "set annotation %s: %s", k, dec.Set[k])
		}
		for _, k := range dec.Remove {
			trace.Action(ctx, "removed annotation %s", k)
		}
	}
	if dec.RequeueAt.IsZero() {
		trace.Exit(ctx, "no timeout pending")
		return controller.Result{}, nil
	}
	after := dec.RequeueAt.Sub(now)
	if after <= 0 {
		after = time.Millisecond
	}
	trace.Exit(ctx, "timeouts checked; next check at %s", dec.RequeueAt.UTC().Format(time.RFC3339))
	return controller.Result{RequeueAfter: after}, nil
}

// NeverAsNegative maps each timeout of 0 (a flag's "never") to the
// negative value that disables its check in Options (where zero takes the
// default).
func NeverAsNegative(t Timeouts) Timeouts {
	for _, d := range []*time.Duration{&t.Pickup, &t.Aborting, &t.Progressing} {
		if *d == 0 {
			*d = -1
		}
	}
	return t
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
