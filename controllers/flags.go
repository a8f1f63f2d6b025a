package controllers

import (
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/pflag"

	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/manager"
)

// Flags are the command-line flags that choose and configure the
// controllers, defined once for every command that runs them (`cairn
// server` and `cairn controller-manager`): --controllers, --leader-ttl,
// --gc-workers, the event scheduler's and the deploy item timeouts'.
// Register them with AddFlags; Selected reads them.
type Flags struct {
	// Controllers is --controllers: "true", "false" or a list of names
	// (Select).
	Controllers string
	// LeaderTTL is --leader-ttl: how long a dead leader blocks failover.
	LeaderTTL time.Duration
	// Config holds --gc-workers and the event flags; Timeouts the deploy
	// item timeouts as given (0: never), which Config takes negative.
	Config   Config
	Timeouts deployitem.Timeouts
}

// DefaultLeaderTTL is the default of --leader-ttl.
const DefaultLeaderTTL = 5 * time.Second

// AddFlags registers the flags on fs, into f. controllersUsage is the
// help of --controllers, which says what its values mean to the command.
func (f *Flags) AddFlags(fs *pflag.FlagSet, controllersUsage string) {
	fs.StringVar(&f.Controllers, "controllers", "true", controllersUsage)
	fs.DurationVar(&f.LeaderTTL, "leader-ttl", DefaultLeaderTTL, "how long a dead leader blocks failover")
	fs.IntVar(&f.Config.GCWorkers, "gc-workers", 8, "concurrent garbage-collector workers")
	f.Config.AddEventFlags(fs)
	fs.StringVar(&f.Config.ConsoleURL, "console-url", "", "the console's URL the commit statuses of github Gateways' events link to, "+
		"e.g. https://cairn.example.com/ui/ (default: this process's API server URL + /ui/)")
	fs.DurationVar(&f.Timeouts.Pickup, "deployitem-pickup-timeout", deployitem.DefaultPickup, "how long a deploy item may wait for a deployer to pick it up before it fails (0: never)")
	fs.DurationVar(&f.Timeouts.Aborting, "deployitem-aborting-timeout", deployitem.DefaultAborting, "how long a deployer may take to abort a deploy item before it fails (0: never)")
	fs.DurationVar(&f.Timeouts.Progressing, "deployitem-progressing-timeout", deployitem.DefaultProgressing, "how long a deployer may work on a deploy item before it is aborted, unless its spec.timeout says otherwise (0: never)")
}

// Selected returns the controllers --controllers chooses, configured by
// the other flags (none for "false"). Errors, each naming the flag: a leader TTL under 1s, negative workers or event settings, an
// unknown controller name.
func (f *Flags) Selected() ([]manager.Controller, error) {
	switch {
	case f.LeaderTTL < time.Second:
		return nil, fmt.Errorf("--leader-ttl must be at least 1s (leases count whole seconds), got %s", f.LeaderTTL)
	case f.Config.GCWorkers < 0:
		return nil, fmt.Errorf("--gc-workers must not be negative, got %d", f.Config.GCWorkers)
	}
	if err := f.Config.CheckEvents(); err != nil {
		return nil, err
	}
	if err := CheckConsoleURL(f.Config.ConsoleURL); err != nil {
		return nil, err
	}
	cfg := f.Config
	cfg.DeployItemTimeouts = deployitem.NeverAsNegative(f.Timeouts)
	ctrls, err := Select(List(cfg), f.Controllers)
	if err != nil {
		return nil, fmt.Errorf("--controllers: %w", err)
	}
	return ctrls, nil
}

// CheckConsoleURL refuses a --console-url that is set but not an absolute
// http or https URL, naming the flag. It is a pure function.
func CheckConsoleURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("--console-url must be an absolute http or https URL such as https://cairn.example.com/ui/, got %q", v)
	}
	return nil
}
