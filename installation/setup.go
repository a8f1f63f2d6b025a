package installation

import (
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
)

// Options configures the installation controller. The zero value is usable.
type Options struct {
	// Workers is the number of installations reconciled at once; default
	// 16 (a reconcile mostly waits for its writes).
	Workers int
	// Now is the clock (default time.Now), for automaticReconcile.
	Now func() time.Time
}

// Setup adds the installation controller to a manager's term, reading
// through the term's shared informers and writing through its client. An
// installation's change reconciles it, its parent, its nested
// installations, the siblings importing its exports (they may wait for
// it) and the siblings exporting its imports (their deletion may wait for
// it); an Execution's change reconciles its installation; a DataObject's,
// a Target's or a Blueprint's change reconciles the installations that
// import or use it.
func Setup(t *manager.Term, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = 16
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := t.Informers
	r := &Reconciler{c: t.Client, log: t.Logger.With("controller", "installation"), now: opts.Now,
		caches: caches{
			insts: f.For(api.KindInstallation), execs: f.For(api.KindExecution), items: f.For(api.KindDeployItem),
			data: f.For(api.KindDataObject), targets: f.For(api.KindTarget), blueprints: f.For(api.KindBlueprint),
		}}
	return manager.NewBuilder(t, "installation").
		For(api.KindInstallation).
		Index(api.KindInstallation, informer.OwnerUIDIndex, informer.IndexOwnerUID).
		Index(api.KindInstallation, indexExports, indexExportsFunc).
		Index(api.KindInstallation, indexImports, indexImportsFunc).
		Index(api.KindInstallation, indexBlueprint, indexBlueprintFunc).
		Watches(api.KindInstallation, r.relativesOf).
		Owns(api.KindExecution).
		Watches(api.KindDataObject, r.importersOf(refData, api.LabelDataRef)).
		Watches(api.KindTarget, r.importersOf(refTarget, api.LabelTargetRef)).
		Watches(api.KindBlueprint, r.usersOf).
		Reads(api.KindDeployItem).
		Workers(opts.Workers).
		Complete(r)
}

// relativesOf maps an installation to the others its change may concern:
// its parent, its nested installations, the siblings importing its
// exports and the siblings exporting its imports.
func (r *Reconciler) relativesOf(obj *api.Object) []string {
	keys := controller.ControllerOwnerKey(api.KindInstallation)(obj)
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
}

// usersOf maps a Blueprint to the installations that use it.
func (r *Reconciler) usersOf(obj *api.Object) []string {
	var keys []string
	for _, s := range r.caches.byIndex(indexBlueprint, api.Key(obj.Namespace, obj.Name)) {
		keys = append(keys, api.Key(s.Namespace, s.Name))
	}
	return keys
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
