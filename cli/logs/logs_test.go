package logs_test

import (
	"context"
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

// TestLogs_DeployItemShowsInstallAndDeleteOutput: `cairn logs
// deployitem/X` prints a container item's command output, `--delete` its
// delete command's, `-f` follows until it ends; the command's output is
// also kept through the API (a Secret owned by the item).
func TestLogs_DeployItemShowsInstallAndDeleteOutput(t *testing.T) {
	ctrls, err := controllers.Select(controllers.List(controllers.Config{}), "deployer-container")
	if err != nil {
		t.Fatal(err)
	}
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: ctrls})
	ctx := testkit.Context(t)
	cfg := `{"command": ["sh", "-c", "echo installing app; echo done >&2"], "deleteCommand": ["sh", "-c", "echo uninstalling app; exit 4"]}`
	item, err := client.For[*api.DeployItem](c).Create(ctx, &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: api.DeployItemSpec{Type: api.DeployItemTypeContainer, Config: []byte(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the item to succeed", func() bool {
		cur, err := client.For[*api.DeployItem](c).Get(ctx, "default", "app")
		return err == nil && cur.Status.Phase == api.DeploySucceeded
	})
	for _, args := range [][]string{{"logs", "deployitem/app"}, {"logs", "di/app", "-f"}} {
		if r := clitest.Run(t, d.ClientConfig(), args...); r.Error != nil || r.Out != "installing app\ndone\n" {
			t.Fatalf("cairn %s: %q %v, want the command's output", strings.Join(args, " "), r.Out, r.Error)
		}
	}
	if r := clitest.Run(t, d.ClientConfig(), "logs", "deployitem/app", "--delete"); r.Error == nil || !strings.Contains(r.Error.Error(), "its delete command has not run") {
		t.Fatalf("logs --delete before the deletion: %q %v, want a NotFound saying the delete command has not run", r.Out, r.Error)
	}
	testkit.EventuallyNil(t, 30*time.Second, "the command's output to be kept through the API", func() error {
		sec, err := client.For[*api.Secret](c).Get(ctx, "default", api.UnitLogSecretName(api.DeployItemRunID(item.UID, item.Generation, lastReconcile(t, c))))
		if err == nil && (string(sec.Data[api.UnitLogKey]) != "installing app\ndone\n" || sec.OwnerReferences[0].UID != item.UID) {
			t.Fatalf("kept output %q owned by %+v", sec.Data[api.UnitLogKey], sec.OwnerReferences)
		}
		return err
	})

	// The delete command fails: the item stays, and its output is shown.
	if _, _, err := c.Delete(ctx, api.KindDeployItem, "default", "app", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the item's uninstall to fail", func() bool {
		cur, err := client.For[*api.DeployItem](c).Get(ctx, "default", "app")
		return err == nil && cur.Status.LastError != nil && strings.Contains(cur.Status.LastError.Message, "uninstalling app")
	})
	if r := clitest.Run(t, d.ClientConfig(), "logs", "deployitem/app", "--delete", "-f"); r.Error != nil || r.Out != "uninstalling app\n" {
		t.Fatalf("logs --delete: %q %v, want the delete command's output", r.Out, r.Error)
	}
}

// lastReconcile is the item app's lastReconcileTime.
func lastReconcile(t *testing.T, c client.Interface) time.Time {
	t.Helper()
	cur, err := client.For[*api.DeployItem](c).Get(context.Background(), "default", "app")
	if err != nil {
		t.Fatal(err)
	}
	return cur.Status.LastReconcileTime
}

// TestLogs_RefusesFlagsOfTheOtherKind: --delete is a deploy item's,
// --job an event's, and only those kinds keep logs.
func TestLogs_RefusesFlagsOfTheOtherKind(t *testing.T) {
	d, _ := clitest.StartDaemon(t, daemon.Options{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "event/e", "--delete"}, "--delete is for deploy items"},
		{[]string{"logs", "deployitem/app", "--job", "build"}, "--job is for events"},
		{[]string{"logs", "installation/x"}, "logs are kept for events and deploy items"},
		{[]string{"logs", "deployitem/"}, "name the object as KIND/NAME"},
	} {
		if r := clitest.Run(t, d.ClientConfig(), tc.args...); r.Error == nil || !strings.Contains(r.Error.Error(), tc.want) {
			t.Errorf("cairn %s: %v, want an error saying %q", strings.Join(tc.args, " "), r.Error, tc.want)
		}
	}
}
