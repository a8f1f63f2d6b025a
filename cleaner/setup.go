package cleaner

import "cairn.dev/cairn/manager"

// Setup adds the Cleaner controller to a manager's term: it reads
// Cleaners and their targets through the term's shared informers, acts
// through the term's client and records its steps in the term's traces.
// Fields of opts left unset take the term's logger and metrics.
func Setup(t *manager.Term, opts Options) error {
	opts.Informers, opts.Traces = t.Informers, t.Traces
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = t.Metrics
	}
	t.Add("cleaner", manager.RunnableFunc(New(t.Client, opts).Run))
	return nil
}
