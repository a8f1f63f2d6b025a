// Package controllers is the list of every controller cairn runs: the one
// place a new controller family is added (one entry in List), whether the
// controllers run inside `cairn server` or in a `cairn controller-manager`
// process.
//
// # Who is who
//
// "Controller" names four things:
//   - a controller: one entry of List (manager.Controller), named for
//     --controllers ("gc", "events", ...): a family's reconciler and the
//     informers that feed it;
//   - package controller: the machinery every family runs on (the work
//     queue, the workers, Reconciler and Result; manager.NewBuilder wires
//     it);
//   - package controllers (this one): the list;
//   - `cairn controller-manager`: a process that runs the list and nothing
//     else, beside the API servers (daemon.ControllerManager).
//
// Which package holds which controller: "gc" is package gc, "installation"
// installation, "execution" execution, "deployitem-timeout" deployitem,
// "deployer-*" deployer/* (mock, container, manifest, helm), "target"
// target, "cleaner" cleaner, and "events" is package scheduler (the queue
// of PENDING events, their capacity and the observer of their workers and
// jobs: it schedules Events, hence the package name).
//
// Manager, term, lease and election:
//   - the manager (package manager) runs the list in one process: the
//     shared informers, the leader election, the controllers' setup for
//     each term, and the builder (manager.NewBuilder) a Setup calls;
//   - a term is one stretch of leadership: the controllers are built for
//     it, act through its fenced client, and stop when it ends;
//   - the lease (package lease) is that election: the API's Lease object
//     "controllers", held by compare-and-swap through the API, so a
//     controller process needs no etcd access;
//   - the compaction election (package etcdelection) is another one, below
//     the API: the API servers elect, through an etcd lease, which of them
//     compacts the store. It never decides who runs controllers.
//
// "Explain" is `cairn explain KIND NAME` (package cli/explain): the traces
// a controller recorded of its reconciles (package trace). Elsewhere the
// word means what the sentence around it says: session.Explain rewords an
// error for a terminal, the cleaner's explain writes its decision into
// the trace, and the test kits' Explain read the trace.
package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/commitstatus"
	"cairn.dev/cairn/deployer/container"
	"cairn.dev/cairn/deployer/helm"
	"cairn.dev/cairn/deployer/manifest"
	"cairn.dev/cairn/deployer/mock"
	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/scheduler"
	"cairn.dev/cairn/target"
)

// Config holds the options of every controller, set from the flags of the
// process that runs them. The zero value gives every controller its
// defaults.
type Config struct {
	// GCWorkers is the number of concurrent garbage-collector workers.
	GCWorkers int
	// DeployItemTimeouts are the deploy item timeouts' defaults (zero
	// fields: deployitem's defaults; negative: not checked).
	DeployItemTimeouts deployitem.Timeouts
	// EventMaxWorkers and EventMaxJobs bound the event workers and jobs
	// running at once; EventGracePeriod is how long the runtime resources of
	// a worker or job that ended stay (scheduler.Options).
	EventMaxWorkers  int
	EventMaxJobs     int
	EventGracePeriod time.Duration
	// LogTailBytes is how much of each ended unit's output (workers, jobs,
	// container deploy items) is kept through the API; 0: the default.
	LogTailBytes int
	// ConsoleURL is the console's URL the commit statuses link to
	// (commitstatus.Options.ConsoleURL); "": the API server's URL + /ui/.
	ConsoleURL string
}

// CheckEvents refuses event settings that cannot work, naming the flag.
func (c Config) CheckEvents() error {
	switch {
	case c.EventMaxWorkers < 0:
		return fmt.Errorf("--event-max-workers must not be negative, got %d", c.EventMaxWorkers)
	case c.EventMaxJobs < 0:
		return fmt.Errorf("--event-max-jobs must not be negative, got %d", c.EventMaxJobs)
	case c.EventGracePeriod < 0:
		return fmt.Errorf("--event-grace-period must not be negative, got %s", c.EventGracePeriod)
	case c.LogTailBytes < 0:
		return fmt.Errorf("--log-tail-bytes must not be negative, got %d: the bytes of each ended unit's output kept through the API", c.LogTailBytes)
	}
	return nil
}

// AddEventFlags registers the event scheduler's flags on fs, into c.
func (c *Config) AddEventFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.EventMaxWorkers, "event-max-workers", scheduler.DefaultMaxWorkers, "event workers running at once, over every project")
	fs.IntVar(&c.EventMaxJobs, "event-max-jobs", scheduler.DefaultMaxJobs, "event jobs running at once, over every project")
	fs.DurationVar(&c.EventGracePeriod, "event-grace-period", scheduler.DefaultGracePeriod,
		"how long the workspace of a worker or job that ended stays before it is cleaned up (logs stay until the event is deleted)")
	fs.IntVar(&c.LogTailBytes, "log-tail-bytes", api.DefaultLogTailBytes,
		"how many bytes of the end of each worker's, job's and container deploy item's output are kept through the API when it ends "+
			"(counted in the namespace's bytes; served by `cairn logs` once the runtime no longer has them)")
}

// List returns every controller, configured by cfg, in the order they
// start.
func List(cfg Config) []manager.Controller {
	return []manager.Controller{
		{Name: "gc", Standby: func(p *manager.Process) (func(*manager.Term) error, error) {
			return gc.Standby(p, gc.Options{Workers: cfg.GCWorkers})
		}},
		{Name: "installation", Setup: func(t *manager.Term) error { return installation.Setup(t, installation.Options{}) }},
		{Name: "execution", Setup: func(t *manager.Term) error { return execution.Setup(t, execution.Options{}) }},
		{Name: "deployitem-timeout", Setup: func(t *manager.Term) error {
			return deployitem.Setup(t, deployitem.Options{Timeouts: cfg.DeployItemTimeouts})
		}},
		{Name: "deployer-mock", Setup: mock.Setup},
		{Name: "deployer-container", Setup: func(t *manager.Term) error {
			return container.SetupWith(t, container.Options{LogTailBytes: cfg.LogTailBytes})
		}},
		{Name: "deployer-manifest", Setup: func(t *manager.Term) error {
			return manifest.Setup(t, manifest.Options{ProgressingTimeout: cfg.DeployItemTimeouts.Progressing})
		}},
		{Name: "deployer-helm", Setup: helm.Setup},
		{Name: "target", Setup: func(t *manager.Term) error { return target.Setup(t, target.Options{}) }},
		{Name: "cleaner", Setup: func(t *manager.Term) error { return cleaner.Setup(t, cleaner.Options{}) }},
		{Name: "events", Setup: func(t *manager.Term) error {
			return scheduler.Setup(t, scheduler.Options{MaxWorkers: cfg.EventMaxWorkers, MaxJobs: cfg.EventMaxJobs, GracePeriod: cfg.EventGracePeriod,
				LogTailBytes: cfg.LogTailBytes})
		}},
		{Name: "commitstatus", Setup: func(t *manager.Term) error {
			return commitstatus.Setup(t, commitstatus.Options{ConsoleURL: cfg.ConsoleURL})
		}},
	}
}

// Names returns the names of every controller, in order.
func Names() []string {
	var names []string
	for _, c := range List(Config{}) {
		names = append(names, c.Name)
	}
	return names
}

// Select picks the controllers a --controllers value names: "true", "*" or
// "all" for every one, "false", "none" or "" for none, otherwise a
// comma-separated list of names. An unknown name is an error that lists
// the known ones.
func Select(all []manager.Controller, value string) ([]manager.Controller, error) {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "true", "*", "all":
		return all, nil
	case "false", "none", "":
		return nil, nil
	}
	var out []manager.Controller
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(all, func(c manager.Controller) bool { return c.Name == name })
		if i < 0 {
			var known []string
			for _, c := range all {
				known = append(known, c.Name)
			}
			return nil, fmt.Errorf("unknown controller %q: the controllers are %s (or true/false)", name, strings.Join(known, ", "))
		}
		if !slices.ContainsFunc(out, func(c manager.Controller) bool { return c.Name == name }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}
