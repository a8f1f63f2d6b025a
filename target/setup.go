package target

import "cairn.dev/cairn/manager"

// Setup adds the target controller to a manager's term: it reads Targets
// and Secrets through the term's shared informers, writes Target statuses
// through the term's client and records its steps in the term's traces.
// Fields of opts left unset take the term's.
func Setup(t *manager.Term, opts Options) error {
	opts.Informers, opts.Traces = t.Informers, t.Traces
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = t.Metrics
	}
	r, err := New(t.Client, opts)
	if err != nil {
		return err
	}
	t.Add("target", manager.RunnableFunc(r.Run))
	return nil
}
