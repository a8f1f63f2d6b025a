package scheduler_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/internal/testkit"
)

// TestEvent_CreatedInProcessIsScheduledAndRuns creates an Event through
// the in-process client (the one controllers use): it goes through the
// events endpoint's one transaction as over HTTP, so it has its secrets,
// and its worker runs and reads them.
func TestEvent_CreatedInProcessIsScheduledAndRuns(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	if _, err := h.c.Create(t.Context(), testkit.Secret("default", "db", map[string]string{"password": "pw"})); err != nil {
		t.Fatal(err)
	}
	spec := script(`test "$(cat "$CAIRN_SECRETS_DIR/password")" = pw && echo "ran $CAIRN_EVENT"`)
	spec.Secrets = []string{"db"}
	h.project("inproc", spec)
	ev, err := client.For[*api.Event](h.d.Client()).Create(t.Context(), &api.Event{
		ObjectMeta: api.ObjectMeta{Name: "inproc-1", Namespace: "default"},
		Spec:       api.EventSpec{Project: "inproc", Source: "test", Type: "run"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Spec.Worker.Command) == 0 {
		t.Fatalf("the in-process create answered %+v: the worker was not copied from the project's template", ev.Spec.Worker)
	}
	var done *api.Event
	testkit.Eventually(t, wait, "the worker to end", func() bool {
		done = h.get(ev.Name)
		return done.Status.Worker.Phase.Terminal()
	})
	if w := done.Status.Worker; w.Phase != api.PhaseSucceeded || w.ExitCode == nil || *w.ExitCode != 0 {
		t.Fatalf("worker status %+v, want SUCCEEDED with exit 0", w)
	}
	if logs := h.logs(ev.Name, ""); !strings.Contains(logs, "ran "+ev.Name) {
		t.Fatalf("logs = %q", logs)
	}
}
