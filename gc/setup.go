package gc

import (
	"context"

	"cairn.dev/cairn/manager"
)

// Setup adds the garbage collector to a manager's term: it reads every kind
// through the term's shared informers, acts through the term's client and
// records its steps in the term's traces. Fields of opts left unset take
// the term's logger and metrics. It builds the dependency graph anew for
// every term; Standby keeps one current across terms instead.
func Setup(t *manager.Term, opts Options) error {
	opts.Informers, opts.Traces = t.Informers, t.Traces
	if opts.Logger == nil {
		opts.Logger = t.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = t.Metrics
	}
	t.Add("gc", manager.RunnableFunc(New(t.Client, opts).Run))
	return nil
}

// Standby adds the garbage collector to a manager as a warm standby
// (manager.Controller.Standby): the process keeps the dependency graph
// current from its start, through the process's shared informers, whether
// or not it leads (Collector.Watch); each term only runs the collector's
// workers on it, acting through the term's fenced client
// (Collector.Lead). A new leader's collector thus acts at once, however
// large the graph. The graph also answers, in every process, what a
// deletion would take (manager.Process.SetDependents). Fields of opts left unset take the process's logger and
// metrics.
func Standby(p *manager.Process, opts Options) (func(t *manager.Term) error, error) {
	opts.Informers, opts.Traces = p.Informers, p.Traces
	if opts.Logger == nil {
		opts.Logger = p.Logger
	}
	if opts.Metrics == nil {
		opts.Metrics = p.Metrics
	}
	c := New(p.Client, opts)
	p.SetDependents(c)
	p.Add("gc-graph", manager.RunnableFunc(c.Watch))
	return func(t *manager.Term) error {
		t.Add("gc", manager.RunnableFunc(func(ctx context.Context) error { return c.Lead(ctx, t.Client) }))
		return nil
	}, nil
}
