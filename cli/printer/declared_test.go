package printer_test

import (
	"context"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
)

// Vault is a test kind declaring sensitive fields other than a Secret's.
type Vault struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Credentials    map[string]string `json:"credentials,omitempty"`
	Token          string            `json:"token,omitempty"`
}

func vaultKind() registry.Kind {
	return registry.Define(registry.Spec[*Vault]{
		Kind: "Vault", Namespaced: true, Sensitive: []string{"credentials", "token"},
		Columns: []api.Column{
			{Name: "KEYS", Path: ".credentials", Format: "count"},
			{Name: "TOKEN", Path: ".token"},
		},
	})
}

// TestGet_RedactsWhatTheKindDeclaresThroughDiscovery: `cairn get` learns
// a kind's sensitive fields from discovery; tables and listings hide
// them, the YAML of one object asked for by name keeps them.
func TestGet_RedactsWhatTheKindDeclaresThroughDiscovery(t *testing.T) {
	srv := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), vaultKind())...))
	r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args:  []string{"apply", "-f", "-"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Vault\nmetadata: {name: v}\ncredentials: {apiKey: s3cr3t-key}\ntoken: tok-123456\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	values := []string{"s3cr3t-key", "tok-123456"}
	tests := []struct {
		name string
		args []string
		want []string
		leak bool // the output carries the values by design
	}{
		{"table", []string{"get", "vaults"}, []string{"v      1      <hidden>"}, false},
		{"list as YAML", []string{"get", "vaults", "-o", "yaml"},
			[]string{"apiKey: '<redacted: 10 bytes>'", "token: '<redacted: 10 bytes>'"}, false},
		{"list as JSON", []string{"get", "vaults", "-o", "json"},
			[]string{`"apiKey": "<redacted: 10 bytes>"`, `"token": "<redacted: 10 bytes>"`}, false},
		{"one object by name as YAML", []string{"get", "vault", "v", "-o", "yaml"},
			[]string{"apiKey: s3cr3t-key", "token: tok-123456"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clitest.Run(t, srv.Config(), tt.args...)
			if r.Error != nil {
				t.Fatalf("%v: %v %s", tt.args, r.Error, r.Err)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Out, w) {
					t.Errorf("%v lacks %q:\n%s", tt.args, w, r.Out)
				}
			}
			if tt.leak {
				return
			}
			for _, v := range values {
				if strings.Contains(r.Out, v) {
					t.Errorf("%v printed the sensitive value %q:\n%s", tt.args, v, r.Out)
				}
			}
		})
	}
}
