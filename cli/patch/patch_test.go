package patch_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

var sys = identity.With(context.Background(), identity.System())

func get(t *testing.T, srv *servertest.Server, name string) *api.Object {
	t.Helper()
	o, err := srv.Registry.Get(sys, api.KindSecret, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// run runs the command args and checks that it prints out, or, when
// wantErr is set, that it fails saying so.
func run(t *testing.T, srv *servertest.Server, args []string, out, wantErr string) {
	t.Helper()
	r := clitest.Run(t, srv.Config(), args...)
	switch {
	case wantErr == "" && (r.Error != nil || r.Out != out):
		t.Fatalf("%v: %q %v %q, want %q", args, r.Out, r.Error, r.Err, out)
	case wantErr != "" && (r.Error == nil || !strings.Contains(r.Err, wantErr)):
		t.Fatalf("%v: %q %v %q, want an error saying %q", args, r.Out, r.Error, r.Err, wantErr)
	}
}

func TestLabelAndAnnotate_SetChangeAndRemoveKeysAsKubectlDoes(t *testing.T) {
	srv := servertest.Start(t)
	if _, err := srv.Registry.Create(sys, testkit.Secret("default", "db", nil, testkit.Labels("tier", "data"))); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args       []string
		out, err   string // err: what the error says, when the command fails
		labels     map[string]string
		annotation string // the owner annotation after the step
	}{
		{args: []string{"label", "secret", "db", "stage=review"}, out: "secret/db labeled\n",
			labels: map[string]string{"tier": "data", "stage": "review"}},
		// A key with another value needs --overwrite; nothing changes.
		{args: []string{"label", "secret", "db", "stage=done"}, err: `the label stage is already "review": add --overwrite to change it`,
			labels: map[string]string{"tier": "data", "stage": "review"}},
		{args: []string{"label", "secret", "db", "stage=done", "--overwrite"}, out: "secret/db labeled\n",
			labels: map[string]string{"tier": "data", "stage": "done"}},
		{args: []string{"label", "secret", "db", "stage=done"}, out: "secret/db labeled (no change)\n",
			labels: map[string]string{"tier": "data", "stage": "done"}},
		{args: []string{"label", "secrets", "db", "stage-", "absent-"}, out: "secret/db unlabeled\n",
			labels: map[string]string{"tier": "data"}},
		{args: []string{"annotate", "secret", "db", "owner=team data"}, out: "secret/db annotated\n",
			labels: map[string]string{"tier": "data"}, annotation: "team data"},
		// Bad input: nothing changes, and the message says what to write.
		{args: []string{"label", "secret", "db", "stage"}, err: `"stage": write KEY=VALUE to set a key, or KEY- to remove it`,
			labels: map[string]string{"tier": "data"}, annotation: "team data"},
		{args: []string{"label", "secret", "db", "a=1", "a-"}, err: "the key a is both set and removed",
			labels: map[string]string{"tier": "data"}, annotation: "team data"},
		{args: []string{"label", "secret", "db", "bad key=1"}, err: "metadata.labels",
			labels: map[string]string{"tier": "data"}, annotation: "team data"},
		{args: []string{"label", "secret", "nope", "a=1"}, err: "not found",
			labels: map[string]string{"tier": "data"}, annotation: "team data"},
	}
	for _, s := range steps {
		run(t, srv, s.args, s.out, s.err)
		o := get(t, srv, "db")
		if !maps.Equal(o.Labels, s.labels) || o.Annotations["owner"] != s.annotation {
			t.Fatalf("%v: labels %v, owner %q; want %v, %q", s.args, o.Labels, o.Annotations["owner"], s.labels, s.annotation)
		}
	}
}

func TestPatch_MergesJSONOrYAMLAndRefusesWhatItCannotMake(t *testing.T) {
	srv := servertest.Start(t)
	if _, err := srv.Registry.Create(sys, testkit.Secret("default", "db", map[string]string{"user": "app"})); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args     []string
		out, err string
		tier     string // the tier label after the step
	}{
		{args: []string{"patch", "secret", "db", "-p", `{"metadata":{"labels":{"tier":"data"}}}`}, out: "secret/db patched\n", tier: "data"},
		{args: []string{"patch", "secret", "db", "-p", "metadata: {labels: {tier: cold}}"}, out: "secret/db patched\n", tier: "cold"},
		{args: []string{"patch", "secret", "db", "-p", "metadata: {labels: {tier: cold}}"}, out: "secret/db patched (no change)\n", tier: "cold"},
		{args: []string{"patch", "secret", "db", "-p", `{"metadata":{"labels":{"tier":null}}}`}, out: "secret/db patched\n"},
		{args: []string{"patch", "secret", "db", "-p", `[{"op":"add"}]`}, err: "-p must be an object"},
		{args: []string{"patch", "secret", "db", "--type", "json", "-p", `{}`}, err: "for json or strategic patches use kubectl"},
		{args: []string{"patch", "secret", "db"}, err: "give the patch with -p"},
		{args: []string{"patch", "secret", "db", "--subresource", "scale", "-p", `{}`}, err: "the only subresource that can be patched is status"},
		{args: []string{"patch", "secret", "db", "-p", `{"metadata":{"labels":{"tier":5}}}`}, err: "metadata"},
	}
	for _, s := range steps {
		run(t, srv, s.args, s.out, s.err)
		if got := get(t, srv, "db").Labels["tier"]; got != s.tier && s.err == "" {
			t.Fatalf("%v: tier %q, want %q", s.args, got, s.tier)
		}
	}
	if v := string(get(t, srv, "db").Field("data")); !strings.Contains(v, "user") {
		t.Fatalf("the patches lost the secret's data: %s", v)
	}
}

func TestPatch_NamingAStaleResourceVersionConflicts(t *testing.T) {
	srv := servertest.Start(t)
	o, err := srv.Registry.Create(sys, testkit.Secret("default", "db", nil))
	if err != nil {
		t.Fatal(err)
	}
	// The label command patches on the version it read: a merge patch
	// naming an older resourceVersion is refused.
	stale := `{"metadata":{"labels":{"a":"1"},"resourceVersion":"` + o.ResourceVersion + `"}}`
	if _, err := srv.Registry.Patch(sys, api.KindSecret, "default", "db", []byte(`{"metadata":{"labels":{"b":"2"}}}`), false); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, srv.Config(), "patch", "secret", "db", "-p", stale)
	if r.Error == nil || !strings.Contains(r.Err, "the object has been modified") {
		t.Fatalf("a patch on a stale version: %q %v %q, want a conflict", r.Out, r.Error, r.Err)
	}
	if got := get(t, srv, "db").Labels; got["a"] != "" || got["b"] != "2" {
		t.Fatalf("labels %v after the refused patch", got)
	}
}
