package execution

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
)

// Setup adds the execution controller to a manager's term: it reconciles
// an Execution when it changes and when one of the DeployItems it
// controls changes, reading through the term's shared informers and
// writing through its client.
func Setup(t *manager.Term, opts Options) error {
	r := newReconciler(t, opts)
	return manager.NewBuilder(t, "execution").
		For(api.KindExecution).
		Owns(api.KindDeployItem).
		Index(api.KindDeployItem, informer.OwnerUIDIndex, informer.IndexOwnerUID).
		Workers(r.opts.Workers).
		Complete(r)
}
