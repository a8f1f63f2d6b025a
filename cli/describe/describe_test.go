package describe_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/server/servertest"
)

func TestDescribe_SecretShowsMetadataAndKeySizesNeverValues(t *testing.T) {
	srv := servertest.Start(t)
	r := clitest.RunContext(context.Background(), t, srv.URL, srv.Token, clitest.Cmd{
		Args: []string{"apply", "-f", "-", "-n", "team"},
		Stdin: "kind: Namespace\nmetadata: {name: team}\n---\n" +
			"kind: Secret\nmetadata:\n  name: db\n  labels: {app: web, tier: db}\n  annotations: {note: hello}\n" +
			"stringData: {password: hunter2, user: admin}\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	if _, _, err := srv.Registry.Delete(identity.With(context.Background(), identity.System()), "Secret", "team", "db", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, srv.URL, srv.Token, "describe", "secret", "db", "-n", "team")
	if r.Error != nil {
		t.Fatalf("describe: %v %s", r.Error, r.Err)
	}
	for _, re := range []string{
		`(?m)^Name: +db$`,
		`(?m)^Namespace: +team$`,
		`(?m)^Kind: +Secret$`,
		`(?m)^UID: +[0-9a-f-]{36}$`,
		`(?m)^Generation: +\d+$`,
		`(?m)^Resource Version: +\d+$`,
		`(?m)^Created: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(\d+s ago\)$`,
		`(?m)^Deleting Since: +\d{4}-.*ago\)$`,
		`(?m)^Labels: +app=web\n +tier=db$`,
		`(?m)^Annotations: +note=hello$`,
		`(?m)^Finalizers: +cairn.dev/cascade-deletion$`,
		`(?m)^Owners: +<none>$`,
		`(?m)^Data: +password: 7 bytes\n +user: 5 bytes$`,
		`(?m)^Type: +Opaque$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.Out) {
			t.Errorf("describe output does not match %s:\n%s", re, r.Out)
		}
	}
	for _, v := range []string{"hunter2", "aHVudGVyMg==", "admin", "YWRtaW4="} {
		if strings.Contains(r.Out, v) {
			t.Errorf("describe printed the secret value %q", v)
		}
	}
}

func TestDescribe_SpecAndStatusAsYAML(t *testing.T) {
	srv := servertest.Start(t)
	r := clitest.Run(t, srv.URL, srv.Token, "describe", "namespace", "default")
	if r.Error != nil {
		t.Fatalf("describe: %v", r.Error)
	}
	if !strings.Contains(r.Out, "Status:\n  phase: Active\n") || strings.Contains(r.Out, "Namespace:") {
		t.Errorf("describe namespace:\n%s", r.Out)
	}
	r = clitest.Run(t, srv.URL, srv.Token, "describe", "secret", "missing")
	if r.Error == nil || !strings.Contains(r.Err, `"missing" not found`) {
		t.Errorf("describe of a missing object: %v %q", r.Error, r.Err)
	}
}
