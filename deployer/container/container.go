// Package container is the deployer of the deploy item type "container":
// it runs a command on the process's runtime (package runtime) for each
// run of an item. Its config:
//
//	command: [sh, -c, "..."]        # argv, required
//	deleteCommand: [sh, -c, "..."]  # argv run on deletion; none: nothing to uninstall
//	env: {KEY: value}               # the command's environment (PATH defaults to the system's)
//
// The command finds a JSON file at $CAIRN_IMPORTS holding {name, config,
// imports, target} (imports: config.imports, when set; target: the spec
// of the item's Target) and may write its exports, as JSON, to the file
// at $CAIRN_EXPORTS. Exit code 0 → Succeeded with those exports; any
// other → Failed, with the tail of its output as the error. An abort, and
// the progressing timeout, kill the command's whole process group.
//
// Each run is one runtime unit whose id is the run's (derived from the
// item's uid, generation and lastReconcileTime): after a restart the unit
// is found again, never started twice.
package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/unitlog"
)

// Type is the deploy item type this deployer handles.
const Type = api.DeployItemTypeContainer

// Config is a container deploy item's spec.config.
type Config struct {
	Command       []string          `json:"command"`
	DeleteCommand []string          `json:"deleteCommand,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	// Imports, when set, is passed on as "imports" in the imports file.
	Imports json.RawMessage `json:"imports,omitempty"`

	// resolved is spec.config with its Secret references resolved (what
	// the imports file holds), and values the values put in; set by
	// resolve, never written anywhere but into the unit.
	resolved json.RawMessage
	values   []string
}

// Files in a unit's workspace.
const (
	importsFile = "imports.json"
	exportsFile = "exports.json"
)

// tailBytes bounds the output quoted in an error.
const tailBytes = 1500

// defaultPath is the command's PATH unless its env sets one.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// Deployer is the container deployer.
type Deployer struct {
	rt runtime.Runtime
	// keep keeps the output of ended runs through the API (nil: not kept).
	keep *unitlog.Keeper

	mu      sync.Mutex
	waiting map[string]bool // units a goroutine waits on
}

// New returns the deployer running commands on rt.
func New(rt runtime.Runtime) *Deployer { return &Deployer{rt: rt, waiting: map[string]bool{}} }

// Options configures the container deployer's Setup.
type Options struct {
	// LogTailBytes is how much of each ended run's output is kept through
	// the API (package unitlog), which `cairn logs deployitem/NAME` serves
	// once the runtime no longer has it; default api.DefaultLogTailBytes.
	LogTailBytes int
}

// Setup adds the container deployer to a manager's term with the default
// Options; it fails when the process has no runtime.
func Setup(t *manager.Term) error { return SetupWith(t, Options{}) }

// SetupWith adds the container deployer to a manager's term; it fails
// when the process has no runtime.
func SetupWith(t *manager.Term, opts Options) error {
	if t.Runtime == nil {
		return errors.New("deployer-container: this process has no runtime")
	}
	d := New(t.Runtime)
	d.keep = unitlog.New(t.Client, t.Runtime, opts.LogTailBytes)
	return deployer.Setup(t, deployer.Options{Type: Type, Deployer: d})
}

// deleteUnit is the unit of an uninstall attempt of item: one per
// lastReconcileTime, which a retry renews.
func deleteUnit(item *deployer.Item) string {
	return deletePrefix(item.UID) + fmt.Sprint(item.Status.LastReconcileTime.Unix())
}

func deletePrefix(uid string) string { return deployer.RunPrefix(uid) + "delete-" }

// Reconcile starts the run's unit unless it exists, and reports its end.
func (d *Deployer) Reconcile(ctx context.Context, item *deployer.Item) (deployer.Outcome, error) {
	cfg, err := config(item)
	if err != nil {
		return deployer.Failed(api.ReasonInvalidConfig, "%v", err), nil
	}
	if len(cfg.Command) == 0 {
		return deployer.Failed(api.ReasonInvalidConfig, "spec.config.command is required: the argv to run"), nil
	}
	if out, err := resolve(ctx, item, &cfg); out != nil || err != nil {
		return deref(out), err
	}
	if err := d.stopOthers(ctx, item.UID, item.Run); err != nil {
		return deployer.Outcome{}, err
	}
	return d.run(ctx, item, item.Run, cfg.Command, cfg, func(ctx context.Context) (deployer.Outcome, error) {
		data, err := d.rt.ReadFile(ctx, item.Run, exportsFile)
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			data = nil
		case errors.Is(err, runtime.ErrInvalid):
			return deployer.Failed(api.ReasonInvalidExports, "the exports file cannot be read: %v", err), nil
		case err != nil:
			return deployer.Outcome{}, fmt.Errorf("container: read exports of %s: %w", item.Run, err)
		case !json.Valid(data):
			return deployer.Failed(api.ReasonInvalidExports, "the command wrote exports that are not JSON to $CAIRN_EXPORTS"), nil
		}
		return deployer.Succeeded(data), nil
	})
}

// run starts unit id with argv unless it exists and, once it has ended,
// reports it: success through ok, failure with the output's tail.
func (d *Deployer) run(ctx context.Context, item *deployer.Item, id string, argv []string, cfg Config,
	ok func(context.Context) (deployer.Outcome, error)) (deployer.Outcome, error) {
	st, err := d.rt.State(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		var out *deployer.Outcome
		if st, out, err = d.start(ctx, item, id, argv, cfg); out != nil {
			return *out, nil
		}
	}
	if err != nil {
		return deployer.Outcome{}, fmt.Errorf("container: unit %s: %w", id, err)
	}
	if st.Phase.Done() {
		if err := d.keepLog(ctx, item, id); err != nil {
			return deployer.Outcome{}, err
		}
	}
	switch st.Phase {
	case runtime.PhasePending, runtime.PhaseRunning:
		d.wait(ctx, id, item.Notify)
		return deployer.InProgress(0), nil
	case runtime.PhaseExited:
		// The workspace stays until the next run or the item's deletion:
		// a repeated call (the status write failed) reads the same exports.
		if st.ExitCode == 0 {
			return ok(ctx)
		}
		return deployer.Failed(api.ReasonCommandFailed, "%s exited with code %d%s; output ends with: %s", argv[0], st.ExitCode,
			reasonSuffix(st.Reason), redact(d.tail(ctx, id), cfg.values)), nil
	case runtime.PhaseFailed:
		return deployer.Failed(api.ReasonStartFailed, "%s could not be started: %s", argv[0], st.Reason), nil
	default:
		return deployer.Failed(api.ReasonLost, "the command's unit %s was lost: %s", id, st.Reason), nil
	}
}

// start starts the unit id of item, which the runtime does not have,
// unless its start was recorded already (lost: an outcome). It records the
// run first (recordRun): a refused record starts nothing. A spec the
// runtime refuses is an outcome too. It blocks on the API and the runtime.
// Errors: the record's, the runtime's.
func (d *Deployer) start(ctx context.Context, item *deployer.Item, id string, argv []string, cfg Config) (runtime.State, *deployer.Outcome, error) {
	spec, err := unitSpec(item, id, argv, cfg)
	if err != nil {
		out := deployer.Failed(api.ReasonInvalidConfig, "%v", err)
		return runtime.State{}, &out, nil
	}
	if decideStart(id, recordedRun(item), false) == lostRun {
		out := lost(id)
		return runtime.State{}, &out, nil
	}
	was := item.Status.ProviderStatus
	if err := recordRun(ctx, item, id); err != nil {
		return runtime.State{}, nil, err
	}
	st, err := d.rt.Start(ctx, spec)
	if errors.Is(err, runtime.ErrExists) {
		st, err = d.rt.State(ctx, id)
	}
	if errors.Is(err, runtime.ErrInvalid) {
		out := deployer.Failed(api.ReasonInvalidConfig, "%v", err)
		return runtime.State{}, &out, nil
	}
	if err != nil {
		return st, nil, d.withdraw(ctx, item, id, was, err)
	}
	return st, nil, nil
}

// withdraw takes back the record of run id after its start failed for
// err, when the runtime says it has no unit for it: the retry may start
// it (this leader's or another's). It returns err, joined with the
// withdrawal's error.
func (d *Deployer) withdraw(ctx context.Context, item *deployer.Item, id string, was []byte, err error) error {
	if _, serr := d.rt.State(ctx, id); !errors.Is(serr, runtime.ErrNotFound) {
		return err // it may run: the record stays
	}
	item.Status.ProviderStatus = was
	if rerr := item.Record(ctx); rerr != nil {
		return errors.Join(err, fmt.Errorf("container: withdraw the record of run %s: %w", id, rerr))
	}
	return err
}

// keepLog keeps the output of the ended unit id of item through the API
// (a Secret owned by the item), which `cairn logs deployitem/NAME` serves
// once the runtime no longer has it. A refusal for good is not an error:
// the run's outcome matters more than its output. Errors: the API's
// others (the reconcile is retried).
func (d *Deployer) keepLog(ctx context.Context, item *deployer.Item, id string) error {
	if d.keep == nil {
		return nil
	}
	owner := api.OwnerReference{APIVersion: api.APIVersion, Kind: api.KindDeployItem, Name: item.Name, UID: item.UID}
	err := d.keep.Keep(ctx, item.Namespace, owner, id)
	if err == nil || errors.Is(err, unitlog.ErrNotKept) || errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("container: %w", err)
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return " (" + r + ")"
}

// wait has one goroutine per running unit notify the item when it ends
// (or ctx ends).
func (d *Deployer) wait(ctx context.Context, id string, notify func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting[id] {
		return
	}
	d.waiting[id] = true
	go func() {
		_, _ = d.rt.Wait(ctx, id)
		d.mu.Lock()
		delete(d.waiting, id)
		d.mu.Unlock()
		if ctx.Err() == nil && notify != nil {
			notify()
		}
	}()
}

// tail returns the end of a unit's output, on one line.
func (d *Deployer) tail(ctx context.Context, id string) string {
	rc, err := d.rt.Logs(ctx, id, runtime.LogOptions{})
	if err != nil {
		return "(no output: " + err.Error() + ")"
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	if len(b) > tailBytes {
		b = append([]byte("…"), b[len(b)-tailBytes:]...)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(no output)"
	}
	return s
}

// stopOthers kills the runs of the item other than keep and cleans up
// their workspaces (their logs stay until the item is forgotten).
func (d *Deployer) stopOthers(ctx context.Context, uid, keep string) error {
	return d.stop(ctx, uid, keep, false)
}

// stop kills the runs of the item other than keep, and its delete runs
// too when deletes is set, and cleans up their workspaces.
func (d *Deployer) stop(ctx context.Context, uid, keep string, deletes bool) error {
	units, err := d.rt.List(ctx)
	if err != nil {
		return fmt.Errorf("container: list units: %w", err)
	}
	prefix := deployer.RunPrefix(uid)
	for _, u := range units {
		if !strings.HasPrefix(u.ID, prefix) || u.ID == keep || (!deletes && strings.HasPrefix(u.ID, deletePrefix(uid))) {
			continue
		}
		if err := d.rt.Cleanup(ctx, u.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			return fmt.Errorf("container: stop earlier run %s: %w", u.ID, err)
		}
	}
	return nil
}

// Abort kills every running run of the item with its process group, its
// uninstall's included: an abort during the deletion stops the delete
// command (bounded so by the item's progressing timeout).
func (d *Deployer) Abort(ctx context.Context, item *deployer.Item) error {
	return d.stop(ctx, item.UID, "", true)
}

// Delete stops every run, then runs the delete command, if any.
func (d *Deployer) Delete(ctx context.Context, item *deployer.Item) (deployer.Outcome, error) {
	if err := d.stopOthers(ctx, item.UID, ""); err != nil {
		return deployer.Outcome{}, err
	}
	cfg, err := config(item)
	if err != nil || len(cfg.DeleteCommand) == 0 {
		return deployer.Succeeded(nil), nil
	}
	if out, err := resolve(ctx, item, &cfg); out != nil || err != nil {
		return deref(out), err
	}
	// The delete unit stays (with its logs) until Forget: a Delete called
	// again finds it ended and does not run the command twice.
	return d.run(ctx, item, deleteUnit(item), cfg.DeleteCommand, cfg, func(context.Context) (deployer.Outcome, error) {
		return deployer.Succeeded(nil), nil
	})
}

// Forget removes every unit of a deleted item, logs included.
func (d *Deployer) Forget(ctx context.Context, item *deployer.Item) error {
	return d.removeAll(ctx, item.UID)
}

func (d *Deployer) removeAll(ctx context.Context, uid string) error {
	units, err := d.rt.List(ctx)
	if err != nil {
		return fmt.Errorf("container: list units: %w", err)
	}
	for _, u := range units {
		if strings.HasPrefix(u.ID, deployer.RunPrefix(uid)) {
			if err := d.rt.Remove(ctx, u.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				return fmt.Errorf("container: remove unit %s: %w", u.ID, err)
			}
			if d.keep != nil {
				d.keep.Forget(u.ID)
			}
		}
	}
	return nil
}

func config(item *deployer.Item) (Config, error) {
	var cfg Config
	if len(item.Spec.Config) == 0 {
		return cfg, errors.New("spec.config is required: {command: [argv], deleteCommand, env}")
	}
	if err := json.Unmarshal(item.Spec.Config, &cfg); err != nil {
		return cfg, fmt.Errorf("spec.config does not decode as {command: [argv], deleteCommand: [argv], env: {KEY: value}}: %v", err)
	}
	return cfg, nil
}

// unitSpec builds a unit running argv with the imports file.
func unitSpec(item *deployer.Item, id string, argv []string, cfg Config) (runtime.Spec, error) {
	imports := map[string]any{"name": item.Name, "config": cfg.configFile(item)}
	if n := item.Labels[api.LabelDeployItemName]; n != "" {
		imports["name"] = n
	}
	if len(cfg.Imports) > 0 {
		imports["imports"] = cfg.Imports
	}
	if item.Target != nil {
		imports["target"] = item.Target.Spec
	}
	data, err := json.Marshal(imports)
	if err != nil {
		return runtime.Spec{}, fmt.Errorf("encode the imports file: %v", err)
	}
	env := []string{}
	for _, k := range sortedKeys(cfg.Env) {
		env = append(env, k+"="+cfg.Env[k])
	}
	if _, ok := cfg.Env["PATH"]; !ok {
		env = append(env, "PATH="+defaultPath)
	}
	env = append(env, "CAIRN_NAMESPACE="+item.Namespace, "CAIRN_DEPLOYITEM="+item.Name)
	// The wrapper makes both paths absolute: the workspace is known only
	// to the runtime.
	wrapped := append([]string{"/bin/sh", "-c",
		`CAIRN_IMPORTS="$CAIRN_WORKSPACE/` + importsFile + `" CAIRN_EXPORTS="$CAIRN_WORKSPACE/` + exportsFile + `"; export CAIRN_IMPORTS CAIRN_EXPORTS; exec "$@"`,
		"cairn-container"}, argv...)
	return runtime.Spec{ID: id, Argv: wrapped, Env: env, WorkspaceEnv: "CAIRN_WORKSPACE",
		Files: map[string][]byte{importsFile: data}}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
