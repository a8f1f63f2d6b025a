package apply_test

import (
	"context"
	"encoding/json"
	"path/filepath"
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

// TestApply_ShopExampleConvergesToSucceeded applies examples/shop.yaml to a
// whole server with every controller: the database's container deploy
// item runs, its export reaches the app, which runs after it; the tree is
// Succeeded, `get --tree` shows it, and deleting the root removes it all.
func TestApply_ShopExampleConvergesToSucceeded(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	run := func(args ...string) clitest.Result {
		t.Helper()
		r := clitest.Run(t, d.ClientConfig(), args...)
		if r.Error != nil {
			t.Fatalf("cairn %s: %v %s", strings.Join(args, " "), r.Error, r.Err)
		}
		return r
	}
	run("apply", "-f", filepath.Join("..", "..", "examples", "shop.yaml"))
	ctx := context.Background()
	insts := client.For[*api.Installation](c)
	testkit.EventuallyNil(t, 90*time.Second, "installation shop Succeeded", func() error {
		in, err := insts.Get(ctx, "shop", "shop")
		if err != nil {
			return err
		}
		if in.Status.Phase != api.InstallationSucceeded {
			r := clitest.Run(t, d.ClientConfig(), "get", "installation", "shop", "-n", "shop", "--tree")
			return errString("phase " + string(in.Status.Phase) + "\n" + r.Out)
		}
		return nil
	})
	app, err := client.For[*api.Execution](c).Get(ctx, "shop", "shop-app")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(app.Spec.DeployItems[0].Config), "app connecting to 127.0.0.1:5432") {
		t.Fatalf("the app did not get the database's connection: %s", app.Spec.DeployItems[0].Config)
	}
	out := run("get", "installations", "-n", "shop").Out
	for _, n := range []string{"shop ", "shop-app ", "shop-database "} {
		if !strings.Contains(out, n) {
			t.Errorf("get installations does not list %s:\n%s", n, out)
		}
	}
	if strings.Count(out, "Succeeded") != 3 {
		t.Errorf("get installations:\n%s", out)
	}
	tree := run("get", "installation", "shop", "-n", "shop", "--tree").Out
	for _, want := range []string{"installation/shop  Succeeded", "installation/shop-database  Succeeded", "execution/shop-app  Succeeded",
		"deployitem/shop-database-db  Succeeded  container"} {
		if !strings.Contains(tree, want) {
			t.Errorf("tree does not show %q:\n%s", want, tree)
		}
	}
	raw, _ := client.For[*api.Installation](c).Get(ctx, "shop", "shop-database")
	if strings.Contains(statusOf(raw), "change-me") {
		t.Fatalf("the password is in a status")
	}
	// The database's item got the password (its command checks it) while
	// its spec holds only the reference.
	dbItem := run("get", "deployitem", "shop-database-db", "-n", "shop", "-o", "yaml").Out
	if strings.Contains(dbItem, "change-me") || !strings.Contains(dbItem, "((cairn.dev/secret:db-password/password@") {
		t.Fatalf("deploy item shop-database-db: want the Secret's reference, not its value:\n%s", dbItem)
	}
	run("delete", "installation", "shop", "-n", "shop")
	testkit.EventuallyNil(t, 90*time.Second, "the tree gone", func() error {
		l, err := c.List(ctx, api.KindInstallation, "shop", api.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(l.Items); n > 0 {
			return errString("installations left")
		}
		l, err = c.List(ctx, api.KindDeployItem, "shop", api.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(l.Items); n > 0 {
			return errString("deploy items left")
		}
		return nil
	})
}

type errString string

func (e errString) Error() string { return string(e) }

func statusOf(in *api.Installation) string {
	if in == nil {
		return ""
	}
	b, _ := json.Marshal(in.Status)
	return string(b)
}
