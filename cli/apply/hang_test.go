package apply_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestApply_HangingDeletionIsExplainedAndReleasedByDeleteWithoutUninstall:
// an installation whose deploy item cannot uninstall (its delete command
// fails) does not vanish silently: it is Failed with the item and its
// error in lastError; annotating it cairn.dev/delete-without-uninstall
// lets the deletion finish.
func TestApply_HangingDeletionIsExplainedAndReleasedByDeleteWithoutUninstall(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	run := func(args ...string) clitest.Result {
		t.Helper()
		r := clitest.Run(t, d.ClientConfig(), args...)
		if r.Error != nil {
			t.Fatalf("cairn %s: %v %s", strings.Join(args, " "), r.Error, r.Err)
		}
		return r
	}
	r := clitest.RunContext(context.Background(), t, d.ClientConfig(), clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: `
apiVersion: cairn.dev/v1alpha1
kind: Namespace
metadata: {name: hang}
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: stuck, namespace: hang}
spec:
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: |
          deployItems:
          - name: cluster
            type: container
            config:
              command: [sh, -c, 'echo installed']
              deleteCommand: [sh, -c, 'echo "the target cluster is gone" >&2; exit 1']
`}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	ctx := context.Background()
	insts := client.For[*api.Installation](c)
	wait := func(what string, cond func(in *api.Installation) bool) {
		t.Helper()
		testkit.EventuallyNil(t, 90*time.Second, what, func() error {
			in, err := insts.Get(ctx, "hang", "stuck")
			if err != nil {
				return err
			}
			if !cond(in) {
				return errors.New("status " + string(in.Status.Phase) + " " + lastErrorOf(in))
			}
			return nil
		})
	}
	wait("Succeeded", func(in *api.Installation) bool { return in.Status.Phase == api.InstallationSucceeded })
	run("delete", "installation", "stuck", "-n", "hang")
	wait("the deletion Failed, naming the deploy item", func(in *api.Installation) bool {
		return in.Status.Phase == api.InstallationFailed && strings.Contains(lastErrorOf(in), "deletion failed") &&
			strings.Contains(lastErrorOf(in), "cluster")
	})
	out := run("explain", "installation/stuck", "-n", "hang").Out
	if !strings.Contains(out, api.AnnotationDeleteWithoutUninstall) {
		t.Fatalf("explain does not point at the way out:\n%s", out)
	}
	run("reconcile", "installation", "stuck", "-n", "hang") // no effect on a deletion; the annotation below is the way out
	if _, err := c.Patch(ctx, api.KindInstallation, "hang", "stuck",
		[]byte(`{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, 90*time.Second, "the installation and its deploy item gone", func() error {
		if _, err := insts.Get(ctx, "hang", "stuck"); !errors.Is(err, api.ErrNotFound) {
			return errors.New("installation still there")
		}
		l, err := c.List(ctx, api.KindDeployItem, "hang", api.ListOptions{})
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return errors.New("deploy item still there")
		}
		return nil
	})
}

func lastErrorOf(in *api.Installation) string {
	if in.Status.LastError == nil {
		return ""
	}
	return string(in.Status.LastError.Reason) + ": " + in.Status.LastError.Message
}
