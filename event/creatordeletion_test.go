package event_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/deployer/mock"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// runLandscaper runs the installation, execution, mock deployer and
// garbage collector controllers on the env's admin client, recording into
// traces, until stop is called or the test ends. stop blocks until they
// have stopped.
func (e *env) runLandscaper(traces *trace.Store) (stop func()) {
	e.t.Helper()
	m, err := manager.New(manager.Options{Client: e.c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Traces: traces, Controllers: []manager.Controller{
			{Name: "installation", Setup: func(t *manager.Term) error { return installation.Setup(t, installation.Options{}) }},
			{Name: "execution", Setup: func(t *manager.Term) error { return execution.Setup(t, execution.Options{}) }},
			{Name: "deployer-mock", Setup: mock.Setup},
			{Name: "gc", Standby: func(p *manager.Process) (func(*manager.Term) error, error) { return gc.Standby(p, gc.Options{}) }},
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	e.t.Cleanup(stop)
	return stop
}

// traced is every step message of the traces of Installation name.
func traced(traces *trace.Store, name string) string {
	tr, ok := traces.Get(api.KindInstallation, "default", name)
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, rec := range tr.Reconciles {
		for _, s := range rec.Steps {
			b.WriteString(s.Message + "\n")
		}
	}
	return b.String()
}

// gone reports nil once kind name is gone from default, else what is left.
func (e *env) gone(kind, name string) error {
	o, err := e.c.Get(e.ctx, kind, "default", name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%s %s still there (finalizers %v, status %s)", kind, name, o.Finalizers, o.Field(api.FieldStatus))
}

// A right its creator has lost never holds an Installation's deletion:
// a worker creates an Installation (and so, through the controllers, its
// Execution and DeployItem), its project's grant (run on DeployItems among
// them) is then withdrawn and its blueprint changed to run a command, and
// deleting the Installation still removes it and everything nested,
// though the update before the deletion (standard step 6, or
// force-reconcile's step 1.1) is refused for the creator.
func TestInstallation_DeletionCompletesAfterTheCreatorsGrantIsWithdrawn(t *testing.T) {
	for _, tc := range []struct {
		force bool
		step  string // what the trace says of the refused update
	}{
		{false, "6. update failed ("},
		{true, "1.1 cannot update the nested objects as the creator ("},
	} {
		force := tc.force
		t.Run(fmt.Sprintf("force-reconcile=%v", force), func(t *testing.T) {
			e := start(t)
			e.ctx = testkit.Context(t)
			all := []string{"get", "list", "create", "update", "delete"}
			tok := e.worker("p", api.PermissionRule{Kinds: []string{api.KindInstallation, api.KindExecution}, Verbs: all},
				api.PermissionRule{Kinds: []string{api.KindDeployItem}, Verbs: append(all, "run")})
			traces := trace.NewStore(1000, 100) // every reconcile of the test kept
			stop := e.runLandscaper(traces)
			e.expect("POST", "/namespaces/default/installations", tok, obj("Installation", "one", map[string]any{
				"blueprint": map[string]any{"inline": map[string]any{"deployExecutions": []any{
					map[string]any{"name": "items", "template": "deployItems: [{name: a, type: mock}]"}}}}}), http.StatusCreated)
			var execName string
			testkit.EventuallyNil(t, time.Minute, "the worker's installation to succeed", func() error {
				in, err := client.For[*api.Installation](e.c).Get(e.ctx, "default", "one")
				if err != nil {
					return err
				}
				if in.Status.Phase != api.InstallationSucceeded {
					return fmt.Errorf("phase %q, lastError %+v", in.Status.Phase, in.Status.LastError)
				}
				execName = in.Status.ExecutionRef
				return nil
			})
			items, err := e.c.List(e.ctx, api.KindDeployItem, "default", api.ListOptions{})
			if err != nil || len(items.Items) != 1 {
				t.Fatalf("deploy items %v, %v: want the one the worker's installation made", items, err)
			}
			item := items.Items[0].Name

			// The controllers are down while the grant goes, the blueprint
			// changes and the deletion is asked for: the deletion is the
			// first reconcile to see the new generation, so an update is due.
			stop()
			// The grant goes: the creator may now only read installations.
			p, err := client.For[*api.Project](e.c).Get(e.ctx, "default", "p")
			if err != nil {
				t.Fatal(err)
			}
			p.Spec.WorkerPermissions = []api.PermissionRule{{Kinds: []string{api.KindInstallation}, Verbs: []string{"get"}}}
			if _, err := client.For[*api.Project](e.c).Update(e.ctx, p); err != nil {
				t.Fatal(err)
			}
			e.expect("POST", "/namespaces/default/installations", tok, obj("Installation", "two", map[string]any{
				"blueprint": map[string]any{"inline": map[string]any{}}}), http.StatusForbidden)
			// A second deploy item, a container: the update of the Execution
			// that is due would run a command, which the creator may no
			// longer have run.
			patch := `{"spec":{"blueprint":{"inline":{"deployExecutions":[{"name":"items","template":"deployItems: [{name: a, type: mock}, {name: b, type: container, config: {command: [\"true\"]}}]"}]}}}}`
			if force {
				patch = `{"metadata":{"annotations":{"` + api.AnnotationOperation + `":"` + api.OperationForceReconcile + `"}},` + patch[1:]
			}
			if _, err := e.c.Patch(e.ctx, api.KindInstallation, "default", "one", []byte(patch), false); err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, "default", "one", api.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			e.runLandscaper(traces)
			testkit.EventuallyNil(t, time.Minute, "the installation and what it made gone", func() error {
				return errors.Join(e.gone(api.KindInstallation, "one"), e.gone(api.KindExecution, execName), e.gone(api.KindDeployItem, item))
			})
			if tr := traced(traces, "one"); !strings.Contains(tr, tc.step) || !strings.Contains(tr, "may not run deployitems") {
				t.Errorf("the deletion's trace does not show the refused update (%q):\n%s", tc.step, tr)
			}
		})
	}
}
