// Package controllermanager is the `cairn controller-manager` command: it
// runs cairn's controllers as a separate process against any API server
// (for instance `cairn server --controllers=false`), with leader election
// on the API so that several can run and one acts.
package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/gopace"
	"cairn.dev/cairn/internal/privfile"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	rtlocal "cairn.dev/cairn/runtime/local"
)

type flags struct {
	server           string
	tokenFile        string
	caFile           string
	listen           string
	advertise        string
	ctrl             controllers.Flags
	logLevel         string
	runtimeDir       string
	runtimeIsolation rtlocal.IsolationFlags
	runtimeSelect    rtkube.Flags
}

// New returns the `cairn controller-manager` command.
func New() *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run cairn's controllers as a separate process against an API server",
		Long: `Run cairn's controllers (` + strings.Join(controllers.Names(), ", ") + `) against the API server at
--server, acting with the token in --token-file. Any number of controller
managers (and cairn servers running controllers) may run: they elect one
leader through the API, which runs the controllers; the others stand by and
take over when it stops or dies.

It serves /healthz, /readyz, /metrics and the traces of its controllers
(which API servers forward 'cairn explain' requests to) on --listen;
everything but the probes needs a bearer token the API server accepts.
At start it obtains a peer certificate of cairn's CA from the API server
(the token must be an admin's) and serves HTTPS with it: API servers
forward trace requests only to a process that proves to be cairn's so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd.Context(), f, cmd.ErrOrStderr()) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", "", "URL of the cairn API server (required)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token the controllers act with (required; mode 0600)")
	fs.StringVar(&f.caFile, "certificate-authority", "", "PEM file of the CA the server's certificate is issued by (the server's <data-dir>/ca.crt; default the system's roots)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7071", "address for health, metrics and traces")
	fs.StringVar(&f.advertise, "advertise-url", "", "URL API servers reach this process at, to forward trace requests (default the --listen address; https:// once it holds a peer certificate)")
	f.ctrl.AddFlags(fs, "which controllers to run: true (all) or a list ("+strings.Join(controllers.Names(), ",")+")")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.runtimeDir, "runtime-dir", "", "where the commands the controllers run keep their workspaces, state and logs "+
		"(default "+defaultIsolatedRuntimeDir+", which units running as users of their own can pass through; ~/.cairn/controller-manager/runtime with --runtime-isolation=none)")
	f.runtimeIsolation.AddFlags(fs)
	f.runtimeSelect.AddFlags(fs)
	return cmd
}

// optionFlags names the flag of each daemon.ControllerManagerOptions
// field, for the errors of daemon.StartControllerManager.
var optionFlags = map[string]string{
	"Server": "--server", "Token": "--token-file", "CAFile": "--certificate-authority", "Listen": "--listen",
	"AdvertiseURL": "--advertise-url", "Controllers": "--controllers", "LeaderTTL": "--leader-ttl",
	"RuntimeDir": "--runtime-dir",
}

// run checks the flags, starts the controller manager (a library of
// package daemon) and blocks until SIGINT, SIGTERM or its failure.
func run(ctx context.Context, f *flags, stderr io.Writer) error {
	opts, err := f.options(stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	gopace.Set().Log(opts.Logger)
	cm, err := daemon.StartControllerManager(ctx, opts)
	var oe *daemon.OptionError
	switch {
	case errors.As(err, &oe) && oe.Option == "RuntimeDir":
		return runtimeDirError(opts.RuntimeDir, oe.Err)
	case errors.As(err, &oe) && optionFlags[oe.Option] != "":
		return fmt.Errorf("%s: %w", optionFlags[oe.Option], oe.Err)
	case err != nil:
		return err
	}
	return cm.Wait()
}

// options are the controller manager's options from the flags. Errors
// name the flag.
func (f *flags) options(stderr io.Writer) (daemon.ControllerManagerOptions, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return daemon.ControllerManagerOptions{}, fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	switch {
	case f.server == "":
		return daemon.ControllerManagerOptions{}, errors.New("--server is required: the URL of the cairn API server")
	case f.tokenFile == "":
		return daemon.ControllerManagerOptions{}, errors.New("--token-file is required: a file holding the token the controllers act with")
	}
	if err := absPaths(f); err != nil {
		return daemon.ControllerManagerOptions{}, err
	}
	ctrls, err := f.ctrl.Selected()
	if err != nil {
		return daemon.ControllerManagerOptions{}, err
	}
	if len(ctrls) == 0 {
		return daemon.ControllerManagerOptions{}, errors.New("--controllers selects no controller: a controller manager needs at least one")
	}
	runtimeDir, isolation, err := f.runtime()
	if err != nil {
		return daemon.ControllerManagerOptions{}, err
	}
	token, err := readToken(f.tokenFile)
	if err != nil {
		return daemon.ControllerManagerOptions{}, err
	}
	opts := daemon.ControllerManagerOptions{Server: f.server, Token: token, TokenSource: "--token-file " + f.tokenFile,
		CAFile: f.caFile, Listen: f.listen, AdvertiseURL: f.advertise, Controllers: ctrls, LeaderTTL: f.ctrl.LeaderTTL,
		RuntimeDir: runtimeDir, RuntimeIsolation: isolation,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))}
	// --runtime kubernetes: units run as pods. Open returns a nil
	// *Runtime for the local runtime, which must not become a non-nil
	// interface in opts.Runtime.
	kube, err := f.runtimeSelect.Open(opts.Logger)
	if err != nil {
		return daemon.ControllerManagerOptions{}, err
	}
	if kube != nil {
		opts.Runtime = kube
	}
	return opts, nil
}

// readToken reads a bearer token from path, refusing a file that other
// users may read (it grants the controllers' rights).
func readToken(path string) (string, error) {
	b, err := privfile.Read(path)
	var np *privfile.NotPrivateError
	switch {
	case errors.As(err, &np):
		return "", fmt.Errorf("--token-file %s is readable by other users (mode %04o): run 'chmod 600 %s'", path, np.Mode, path)
	case err != nil:
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--token-file %s is empty", path)
	}
	return token, nil
}

// defaultIsolatedRuntimeDir is the runtime dir when units run as users of
// their own: every directory above it lets them pass.
const defaultIsolatedRuntimeDir = "/var/lib/cairn/controller-manager/runtime"

// defaultRuntimeDir is ~/.cairn/controller-manager/runtime.
func defaultRuntimeDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".cairn", "controller-manager", "runtime")
	}
	return filepath.Join(home, ".cairn", "controller-manager", "runtime")
}

// runtime returns the runtime dir and the units' isolation the flags ask
// for. Errors: local.ErrBadIsolation naming the flag.
func (f *flags) runtime() (string, rtlocal.Isolation, error) {
	isolation, err := f.runtimeIsolation.Isolation()
	if err != nil {
		return "", isolation, err
	}
	switch {
	case f.runtimeDir != "":
		return f.runtimeDir, isolation, nil
	case isolation.None:
		return defaultRuntimeDir(), isolation, nil
	default:
		return defaultIsolatedRuntimeDir, isolation, nil
	}
}
