package tree_test

import (
	"context"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

func TestGetTree_ShowsNestedInstallationsExecutionsAndDeployItemsWithPhases(t *testing.T) {
	srv := servertest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	insts := client.For[*api.Installation](c)
	mk := func(name string, owner *api.Installation, phase api.InstallationPhase) *api.Installation {
		in := &api.Installation{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
			Spec: api.InstallationSpec{Blueprint: api.BlueprintReference{Ref: "x"}}}
		if owner != nil {
			in.Labels = map[string]string{api.LabelInstallation: owner.Name}
			in.OwnerReferences = []api.OwnerReference{api.OwnerRefTo(owner, true)}
		}
		in, err := insts.Create(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		in.Status.Phase = phase
		if phase == api.InstallationFailed {
			in.Status.LastError = &api.LastError{Reason: "NestedFailed", Message: "execution shop-app is Failed"}
		}
		if in, err = insts.UpdateStatus(ctx, in); err != nil {
			t.Fatal(err)
		}
		return in
	}
	shop := mk("shop", nil, api.InstallationProgressing)
	mk("shop-database", shop, api.InstallationSucceeded)
	app := mk("shop-app", shop, api.InstallationFailed)
	ex, err := client.For[*api.Execution](c).Create(ctx, &api.Execution{ObjectMeta: api.ObjectMeta{Name: "shop-app", Namespace: "default",
		OwnerReferences: []api.OwnerReference{api.OwnerRefTo(app, true)}},
		Spec: api.ExecutionSpec{DeployItems: []api.DeployItemTemplate{{Name: "web", Type: "container"}}}})
	if err != nil {
		t.Fatal(err)
	}
	di, err := client.For[*api.DeployItem](c).Create(ctx, &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: "shop-app-web", Namespace: "default"},
		Spec: api.DeployItemSpec{Type: "container"}})
	if err != nil {
		t.Fatal(err)
	}
	di.Status = api.DeployItemStatus{Phase: api.DeployFailed, LastError: &api.LastError{Reason: "Failed", Message: "exit status 1"}}
	if _, err := client.For[*api.DeployItem](c).UpdateStatus(ctx, di); err != nil {
		t.Fatal(err)
	}
	ex.Status = api.ExecutionStatus{Phase: api.DeployFailed, Ready: "0/1", DeployItems: []api.DeployItemRef{{Name: "web", Ref: "shop-app-web"}}}
	if _, err := client.For[*api.Execution](c).UpdateStatus(ctx, ex); err != nil {
		t.Fatal(err)
	}

	r := clitest.Run(t, srv.Config(), "get", "installation", "shop", "--tree")
	if r.Error != nil {
		t.Fatalf("%v: %s", r.Error, r.Err)
	}
	want := "installation/shop  Progressing\n" +
		"├─ installation/shop-app  Failed  (NestedFailed: execution shop-app is Failed)\n" +
		"│  └─ execution/shop-app  Failed  0/1\n" +
		"│     └─ deployitem/shop-app-web  Failed  container  (Failed: exit status 1)\n" +
		"└─ installation/shop-database  Succeeded\n"
	if r.Out != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", r.Out, want)
	}
	for _, args := range [][]string{{"get", "secrets", "x", "--tree"}, {"get", "installations", "--tree"}} {
		if r := clitest.Run(t, srv.Config(), args...); r.Error == nil || !strings.Contains(r.Error.Error(), "--tree needs installations named") {
			t.Errorf("%v: %v", args, r.Error)
		}
	}
}
