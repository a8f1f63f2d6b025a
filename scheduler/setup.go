package scheduler

import (
	"errors"

	"cairn.dev/cairn/manager"
)

// Setup adds the event scheduler and observer to a manager's term: it
// runs units on the term's runtime (which it requires), reads Events and
// Projects through the term's shared informers and records its steps in
// the term's traces. Fields of opts left unset take the term's.
func Setup(t *manager.Term, opts Options) error {
	if t.Runtime == nil {
		return errors.New("scheduler: the process has no runtime to run workers on")
	}
	opts.Runtime, opts.Informers, opts.Traces = t.Runtime, t.Informers, t.Traces
	if opts.APIServer == "" {
		opts.APIServer, opts.APICAFile = t.APIServer, t.APICAFile
	}
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = t.Metrics
	}
	s, err := New(t.Client, opts)
	if err != nil {
		return err
	}
	t.Add("events", manager.RunnableFunc(s.Run))
	return nil
}
