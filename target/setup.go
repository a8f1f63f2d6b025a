package target

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/manager"
)

// Setup adds the target controller to a manager's term: it checks a
// Target when it changes, when the Secret it names changes, and every
// Options.Interval, reading through the term's shared informers and
// writing Target statuses through its client.
func Setup(t *manager.Term, opts Options) error {
	r := newReconciler(t, opts)
	return manager.NewBuilder(t, "target").
		For(api.KindTarget).
		Index(api.KindTarget, secretIndex, indexSecret).
		Watches(api.KindSecret, func(obj *api.Object) []string {
			keys, _ := r.targets.IndexKeys(secretIndex, api.Key(obj.Namespace, obj.Name))
			return keys
		}).
		Workers(r.opts.Workers).
		Complete(r)
}
