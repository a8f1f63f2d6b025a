package describe_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
)

// Vault is a test kind declaring sensitive fields other than a Secret's: a
// map of plain strings and a single string.
type Vault struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Credentials    map[string]string `json:"credentials,omitempty"`
	Token          string            `json:"token,omitempty"`
	Spec           map[string]string `json:"spec,omitempty"`
}

func vaultKind() registry.Kind {
	return registry.Define(registry.Spec[*Vault]{
		Kind: "Vault", Namespaced: true, Sensitive: []string{"credentials", "token"},
	})
}

func TestDescribe_SecretShowsMetadataAndKeySizesNeverValues(t *testing.T) {
	srv := servertest.Start(t)
	r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args: []string{"apply", "-f", "-", "-n", "team"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: team}\n---\n" +
			"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: db\n  labels: {app: web, tier: db}\n  annotations: {note: hello}\n" +
			"stringData: {password: hunter2, user: admin}\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	if _, _, err := srv.Registry.Delete(identity.With(context.Background(), identity.System()), api.KindSecret, "team", "db", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, srv.Config(), "describe", "secret", "db", "-n", "team")
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
	r := clitest.Run(t, srv.Config(), "describe", "namespace", "default")
	if r.Error != nil {
		t.Fatalf("describe: %v", r.Error)
	}
	if !strings.Contains(r.Out, "Status:\n  phase: Active\n") || strings.Contains(r.Out, "Namespace:") {
		t.Errorf("describe namespace:\n%s", r.Out)
	}
	r = clitest.Run(t, srv.Config(), "describe", "secret", "missing")
	if r.Error == nil || !strings.Contains(r.Err, `"missing" not found`) {
		t.Errorf("describe of a missing object: %v %q", r.Error, r.Err)
	}
}

// TestDescribe_HidesTheFieldsTheKindDeclaresSensitive: the sensitive
// fields come from the kind's declaration through discovery, not from a
// list of kinds in the CLI.
func TestDescribe_HidesTheFieldsTheKindDeclaresSensitive(t *testing.T) {
	srv := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), vaultKind())...))
	r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args: []string{"apply", "-f", "-"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Vault\nmetadata: {name: v}\n" +
			"credentials: {apiKey: s3cr3t-key, pin: pin-0042}\ntoken: tok-123456\nspec: {visible: shown-value}\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	r = clitest.Run(t, srv.Config(), "describe", "vault", "v")
	if r.Error != nil {
		t.Fatalf("describe: %v %s", r.Error, r.Err)
	}
	for _, re := range []string{
		`(?m)^Kind: +Vault$`,
		`(?m)^Credentials: +apiKey: 10 bytes\n +pin: 8 bytes$`,
		`(?m)^Token: +10 bytes$`,
		`(?m)^Spec:\n  visible: shown-value$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.Out) {
			t.Errorf("describe output does not match %s:\n%s", re, r.Out)
		}
	}
	for _, v := range []string{"s3cr3t-key", "pin-0042", "tok-123456"} {
		if strings.Contains(r.Out, v) {
			t.Errorf("describe printed the sensitive value %q:\n%s", v, r.Out)
		}
	}
}
