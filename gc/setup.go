package gc

import (
	"cairn.dev/cairn/manager"
)

// Setup adds the garbage collector to a manager's term: it reads every kind
// through the term's shared informers, acts through the term's client and
// records its steps in the term's traces. It builds the dependency graph
// anew for every term; Standby keeps one current across terms instead.
func Setup(t *manager.Term, opts Options) error {
	c := newCollector(t.Client, opts, t.Informers, t.Logger, t.Metrics)
	t.Add("gc-graph", manager.RunnableFunc(c.Watch))
	return c.lead(t)
}

// Standby adds the garbage collector to a manager as a warm standby
// (manager.Controller.Standby): the process keeps the dependency graph
// current from its start, through the process's shared informers, whether
// or not it leads (Collector.Watch); each term only runs the collector's
// workers on it, acting through the term's fenced client. A new leader's
// collector thus acts at once, however large the graph. The graph also
// answers, in every process, what a deletion would take
// (manager.Process.SetDependents).
func Standby(p *manager.Process, opts Options) (func(t *manager.Term) error, error) {
	c := newCollector(p.Client, opts, p.Informers, p.Logger, p.Metrics)
	p.SetDependents(c)
	p.Add("gc-graph", manager.RunnableFunc(c.Watch))
	return c.lead, nil
}
