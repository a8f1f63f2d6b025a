package installation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Options configures the installation controller. The zero value is usable.
type Options struct {
	// Workers is the number of installations reconciled at once; default
	// 16 (a reconcile mostly waits for its writes).
	Workers int
	// Logger receives the controller's logs; default slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the work queue metrics of the
	// "installation" controller.
	Metrics prometheus.Registerer
	// Informers is the process's shared informer factory. Nil gives the
	// controller a factory of its own, run by Run.
	Informers *informer.Factory
	// Traces, when set, keeps the steps of each reconcile for `cairn explain`.
	Traces *trace.Store
	// Now is the clock (default time.Now), for automaticReconcile.
	Now func() time.Time
}

// Controller is the installation controller: a Reconciler fed by the
// shared informers of the deployment kinds.
type Controller struct {
	c       client.Interface
	opts    Options
	r       *Reconciler
	started atomic.Bool
}

// New builds the controller acting through c. It does nothing until Run.
func New(c client.Interface, opts Options) *Controller {
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Controller{c: c, opts: opts, r: &Reconciler{
		c: c, log: opts.Logger.With("controller", "installation"), now: opts.Now,
	}}
}

// Setup adds the installation controller to a manager's term, reading
// through the term's shared informers and writing through its client.
func Setup(t *manager.Term, opts Options) error {
	opts.Informers, opts.Traces = t.Informers, t.Traces
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = t.Metrics
	}
	t.Add("installation", manager.RunnableFunc(New(t.Client, opts).Run))
	return nil
}

func addIndex(inf *informer.Informer, name string, f informer.IndexFunc) error {
	if err := inf.AddIndex(name, f); err != nil && !errors.Is(err, informer.ErrIndexExists) {
		return fmt.Errorf("installation: index %s: %w", name, err)
	}
	return nil
}

// Run registers the informers, their indexes and handlers, waits for the
// caches and reconciles until ctx is done. It blocks; it returns nil when
// ctx is done, or an error at once when an index cannot be added. A
// Controller runs once: a second Run returns an error at once.
func (c *Controller) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("installation: Run called twice")
	}
	f := c.opts.Informers
	if f == nil {
		f = informer.NewFactory(c.c, informer.Options{Logger: c.opts.Logger})
		f.Start(ctx)
		defer f.Shutdown()
	}
	r := c.r
	r.caches = caches{
		insts: f.For(api.KindInstallation), execs: f.For(api.KindExecution), items: f.For(api.KindDeployItem),
		data: f.For(api.KindDataObject), targets: f.For(api.KindTarget), blueprints: f.For(api.KindBlueprint),
	}
	for name, fn := range map[string]informer.IndexFunc{
		informer.OwnerUIDIndex: informer.IndexOwnerUID, indexExports: indexExportsFunc,
		indexImports: indexImportsFunc, indexBlueprint: indexBlueprintFunc,
	} {
		if err := addIndex(r.caches.insts, name, fn); err != nil {
			return err
		}
	}
	ctrl := controller.New("installation", r, controller.Options{
		Workers: c.opts.Workers, Logger: c.opts.Logger, Metrics: c.opts.Metrics,
		Traces: c.opts.Traces, TraceKind: api.KindInstallation,
	})
	// An installation's change reconciles it, its parent, its nested
	// installations, the siblings importing its exports (they may wait
	// for it) and the siblings exporting its imports (their deletion may
	// wait for it).
	controller.EnqueueFromInformer(r.caches.insts, ctrl, func(obj *api.Object) []string {
		keys := []string{api.Key(obj.Namespace, obj.Name)}
		keys = append(keys, controller.ControllerOwnerKey(api.KindInstallation)(obj)...)
		for _, s := range subinstallationsOf(obj) {
			keys = append(keys, api.Key(obj.Namespace, s.Ref))
		}
		for _, v := range indexExportsFunc(obj) {
			for _, s := range r.caches.byIndex(indexImports, v) {
				keys = append(keys, api.Key(s.Namespace, s.Name))
			}
		}
		for _, v := range indexImportsFunc(obj) {
			for _, s := range r.caches.byIndex(indexExports, v) {
				keys = append(keys, api.Key(s.Namespace, s.Name))
			}
		}
		return keys
	})
	controller.EnqueueFromInformer(r.caches.execs, ctrl, controller.ControllerOwnerKey(api.KindInstallation))
	// A DataObject's or a Target's change reconciles the installations
	// importing it.
	controller.EnqueueFromInformer(r.caches.data, ctrl, r.importersOf(refData, api.LabelDataRef))
	controller.EnqueueFromInformer(r.caches.targets, ctrl, r.importersOf(refTarget, api.LabelTargetRef))
	controller.EnqueueFromInformer(r.caches.blueprints, ctrl, func(obj *api.Object) []string {
		var keys []string
		for _, s := range r.caches.byIndex(indexBlueprint, api.Key(obj.Namespace, obj.Name)) {
			keys = append(keys, api.Key(s.Namespace, s.Name))
		}
		return keys
	})
	for _, inf := range []*informer.Informer{r.caches.insts, r.caches.execs, r.caches.items, r.caches.data, r.caches.targets, r.caches.blueprints} {
		if !inf.WaitForSync(ctx) {
			return ctrl.Run(ctx)
		}
	}
	return ctrl.Run(ctx)
}

// importersOf maps a DataObject or a Target (kind refData or refTarget) to
// the installations that import it from its context: the context and its
// name there are its labels when an installation exported it, else the
// namespace's root context and its own name.
func (r *Reconciler) importersOf(kind, refLabel string) func(obj *api.Object) []string {
	return func(obj *api.Object) []string {
		ref := obj.Labels[refLabel]
		if ref == "" {
			ref = obj.Name
		}
		var keys []string
		for _, s := range r.caches.byIndex(indexImports, refKey(obj.Namespace, obj.Labels[api.LabelContext], kind, ref)) {
			keys = append(keys, api.Key(s.Namespace, s.Name))
		}
		return keys
	}
}
