package reconcile_test

import (
	"context"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

func TestReconcileAndAbort_SetTheOperationAnnotation(t *testing.T) {
	srv := servertest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	if _, err := client.For[*api.Installation](c).Create(ctx, &api.Installation{ObjectMeta: api.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: api.InstallationSpec{Blueprint: api.BlueprintReference{Ref: "x"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile", "installation", "shop"}, api.OperationReconcile},
		{[]string{"reconcile", "inst", "shop", "--force"}, api.OperationForceReconcile},
		{[]string{"abort", "installations", "shop"}, api.OperationAbort},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := clitest.Run(t, srv.Config(), tc.args...)
			if r.Error != nil {
				t.Fatalf("%v: %s", r.Error, r.Err)
			}
			if !strings.Contains(r.Out, "installation/shop: "+tc.want+" requested") {
				t.Fatalf("out %q", r.Out)
			}
			in, err := client.For[*api.Installation](c).Get(ctx, "default", "shop")
			if err != nil {
				t.Fatal(err)
			}
			if in.Annotations[api.AnnotationOperation] != tc.want {
				t.Fatalf("annotation %v, want %s", in.Annotations, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reconcile", "secret", "shop"}, "only installations"},
		{[]string{"abort", "installation", "nope"}, "not found"},
		{[]string{"reconcile", "installation"}, "accepts 2 arg"},
	} {
		r := clitest.Run(t, srv.Config(), tc.args...)
		if r.Error == nil || !strings.Contains(strings.ToLower(r.Error.Error()+r.Err), tc.want) {
			t.Errorf("%v: err %v %q, want %q", tc.args, r.Error, r.Err, tc.want)
		}
	}
}
