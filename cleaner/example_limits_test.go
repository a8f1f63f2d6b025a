package cleaner_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/internal/testkit"
)

// TestExample_PreviewLimitsKeepTenPreviewsAndScheduleTheInactivityTeardown
// applies examples/preview/limits.yaml with the CLI, then creates eleven
// labelled previews: the oldest goes; and the dry-run inactivity Cleaner
// of preview-42 is scheduled (monotonic search over lastChangeTime) for 72
// hours after the preview's last change.
func TestExample_PreviewLimitsKeepTenPreviewsAndScheduleTheInactivityTeardown(t *testing.T) {
	e := newEnv(t)
	e.start(nil)
	r := clitest.Run(t, e.ts.Config(), "apply", "-f", filepath.Join("..", "examples", "preview", "limits.yaml"))
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	const pns = "previews"
	var created []*api.Object
	for i := 32; i <= 42; i++ {
		inst := testkit.Object(api.KindInstallation, pns, fmt.Sprintf("preview-%d", i),
			testkit.Labels("preview.cairn.dev/environment", "true"),
			testkit.Spec(`{"blueprint":{"inline":{}}}`))
		o, err := e.c.Create(context.Background(), inst)
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, o)
	}
	gone := func(name string) bool {
		o, err := e.c.Get(context.Background(), api.KindInstallation, pns, name)
		return err != nil || o.Deleting()
	}
	testkit.Eventually(t, wait, "the oldest preview deleted", func() bool { return gone("preview-32") })
	for _, o := range created[1:] {
		if gone(o.Name) {
			t.Errorf("%s deleted: only the oldest beyond 10 goes", o.Name)
		}
	}
	testkit.EventuallyNil(t, wait, "the inactivity teardown scheduled", func() error {
		c, err := e.cleaners().Get(context.Background(), pns, "preview-42-inactive")
		if err != nil {
			return err
		}
		next := c.Status.NextScheduledEvaluation
		due := created[10].CreationTimestamp.Add(72 * time.Hour)
		if next == nil || next.Before(due) || next.Sub(due) > 3*time.Second {
			return fmt.Errorf("next evaluation %v (phase %s, lastError %+v), want just after %s", next, c.Status.Phase, c.Status.LastError, due)
		}
		return nil
	})
	if strings.Contains(r.Out, "error") {
		t.Fatalf("apply said: %s", r.Out)
	}
}
