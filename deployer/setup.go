package deployer

import (
	"errors"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/manager"
)

// Setup adds the controller "deployer-<type>" of opts.Type to a manager's
// term: it handles the deploy items of its type when they change, reading
// through the term's shared informers and writing through its client.
// Errors: no Type or no Deployer.
func Setup(t *manager.Term, opts Options) error {
	switch {
	case opts.Type == "":
		return errors.New("deployer: Options.Type is required")
	case opts.Deployer == nil:
		return errors.New("deployer: Options.Deployer is required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 32
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	k := &Controller{c: t.Client, opts: opts, d: opts.Deployer, log: t.Logger, items: t.Informers.For(api.KindDeployItem)}
	ctrl, err := manager.NewBuilder(t, "deployer-"+opts.Type).
		Watches(api.KindDeployItem, func(obj *api.Object) []string {
			if TypeOf(obj) != opts.Type {
				return nil
			}
			return controller.ObjectKey(obj)
		}).
		TraceKind(api.KindDeployItem).
		Workers(opts.Workers).
		Build(k)
	k.ctrl = ctrl
	return err
}
