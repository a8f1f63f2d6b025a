package deployer

import "cairn.dev/cairn/manager"

// Setup adds a deployer controller to a manager's term, named
// "deployer-<type>": it reads DeployItems through the term's shared
// informers, acts through the term's client and records its steps in the
// term's traces. Fields of opts left unset take the term's.
func Setup(t *manager.Term, opts Options) error {
	opts.Informers, opts.Traces = t.Informers, t.Traces
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = t.Metrics
	}
	k, err := New(t.Client, opts)
	if err != nil {
		return err
	}
	t.Add("deployer-"+opts.Type, manager.RunnableFunc(k.Run))
	return nil
}
