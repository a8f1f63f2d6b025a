package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/server/servertest"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApply_CreateThenConfigureThenUnchanged(t *testing.T) {
	srv := servertest.Start(t)
	dir := t.TempDir()
	v1 := write(t, dir, "v1.yaml", "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: db\n  labels: {app: web}\nstringData:\n  password: one\n")
	v2 := write(t, dir, "v2.yaml", "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: db\n  labels: {app: web, tier: db}\nstringData:\n  password: two\n")

	steps := []struct {
		file, want string
	}{
		{v1, "secret/db created\n"},
		{v2, "secret/db configured\n"},
		{v2, "secret/db unchanged\n"},
	}
	for i, st := range steps {
		r := clitest.Run(t, srv.Config(), "apply", "-f", st.file)
		if r.Error != nil || r.Out != st.want {
			t.Fatalf("step %d: out %q, err %v, stderr %q; want %q", i, r.Out, r.Error, r.Err, st.want)
		}
	}
	got, err := srv.Registry.Get(identity.With(context.Background(), identity.System()), "Secret", "default", "db")
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["tier"] != "db" || !strings.Contains(string(got.Field("data")), "dHdv") { // base64("two")
		t.Errorf("stored secret not updated: labels %v", got.Labels)
	}
}

func TestApply_KeepsStatusFinalizersAndForeignAnnotations(t *testing.T) {
	srv := servertest.Start(t)
	ctx := identity.With(context.Background(), identity.System()) // for the registry
	f := write(t, t.TempDir(), "ns.yaml", "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata:\n  name: team\n  annotations: {mine: a}\n")
	if r := clitest.Run(t, srv.Config(), "apply", "-f", f); r.Error != nil {
		t.Fatalf("apply: %v", r.Error)
	}
	if _, err := srv.Registry.Patch(ctx, "Namespace", "", "team",
		[]byte(`{"metadata":{"finalizers":["test/hold"],"annotations":{"controller":"x"}}}`), false); err != nil {
		t.Fatal(err)
	}
	f = write(t, t.TempDir(), "ns.yaml", "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata:\n  name: team\n  annotations: {mine: b}\n")
	r := clitest.Run(t, srv.Config(), "apply", "-f", f)
	if r.Error != nil || r.Out != "namespace/team configured\n" {
		t.Fatalf("apply: %q %v", r.Out, r.Error)
	}
	got, err := srv.Registry.Get(ctx, "Namespace", "", "team")
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations["mine"] != "b" || got.Annotations["controller"] != "x" || !got.HasFinalizer("test/hold") {
		t.Errorf("apply lost what others manage: annotations %v finalizers %v", got.Annotations, got.Finalizers)
	}
	// (A get adds status.usage, counted when read: only the stored phase
	// is apply's to keep.)
	if !strings.HasPrefix(string(got.Field("status")), `{"phase":"Active",`) {
		t.Errorf("status = %s", got.Field("status"))
	}
}

func TestApply_MultiDocumentFileDirectoryAndStdin(t *testing.T) {
	srv := servertest.Start(t)
	dir := t.TempDir()
	write(t, dir, "1-ns.yaml", "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: team}\n")
	write(t, dir, "2-secrets.yaml", "---\napiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: a, namespace: team}\n---\napiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: b}\n")
	write(t, dir, "3-more.json", `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"c","namespace":"team"}}`)

	r := clitest.Run(t, srv.Config(), "apply", "-f", dir, "-n", "team")
	want := "namespace/team created\nsecret/a created\nsecret/b created\nsecret/c created\n"
	if r.Error != nil || r.Out != want {
		t.Fatalf("apply dir: out %q err %v", r.Out, r.Error)
	}
	if _, err := srv.Registry.Get(identity.With(context.Background(), identity.System()), "Secret", "team", "b"); err != nil {
		t.Errorf("secret without a namespace did not go to -n: %v", err)
	}

	r = clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args:  []string{"apply", "-f", "-"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: s1}\n---\napiVersion: cairn.dev/v1alpha1\nkind: secrets\nmetadata: {name: s2}\n",
	}, nil)
	if r.Error != nil || r.Out != "secret/s1 created\nsecret/s2 created\n" {
		t.Fatalf("apply stdin: out %q err %v", r.Out, r.Error)
	}
}

func TestApply_ParseErrorNamesFileAndLineAndAppliesNothing(t *testing.T) {
	srv := servertest.Start(t)
	f := write(t, t.TempDir(), "broken.yaml",
		"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: first}\n---\napiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: second\n   bad: indent\n")
	r := clitest.Run(t, srv.Config(), "apply", "-f", f)
	if r.Error == nil {
		t.Fatalf("apply succeeded: %q", r.Out)
	}
	if want := f + ":9: "; !strings.Contains(r.Err, want) {
		t.Errorf("stderr %q does not contain %q", r.Err, want)
	}
	if _, err := srv.Registry.Get(identity.With(context.Background(), identity.System()), "Secret", "default", "first"); err == nil {
		t.Errorf("an object was applied from a file that does not parse")
	}
}

func TestApply_ServerErrorsNameTheObject(t *testing.T) {
	srv := servertest.Start(t)
	tests := []struct {
		name string
		body string
		want []string
	}{
		{
			name: "unknown kind lists served kinds",
			body: "apiVersion: cairn.dev/v1alpha1\nkind: Gadget\nmetadata: {name: g}\n",
			want: []string{"f.yaml:1: unknown kind \"Gadget\"", "Namespace (ns)", "Secret"},
		},
		{
			name: "invalid object prints each field error",
			body: "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: db}\ndata:\n  \"bad key!\": eA==\n  \"also bad\": eA==\n",
			want: []string{"f.yaml:4: secret/db: Secret \"db\" is invalid:\n  * data[also bad]: ", "\n  * data[bad key!]: "},
		},
		{
			name: "missing namespace",
			body: "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: s, namespace: nowhere}\n",
			want: []string{"f.yaml:1: secret/s:", "nowhere"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := write(t, t.TempDir(), "f.yaml", tt.body)
			r := clitest.Run(t, srv.Config(), "apply", "-f", f)
			if r.Error == nil {
				t.Fatalf("apply succeeded: %q", r.Out)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Err, w) {
					t.Errorf("stderr %q does not contain %q", r.Err, w)
				}
			}
		})
	}
}

func TestApply_ExamplesStayValid(t *testing.T) {
	srv := servertest.Start(t)
	examples := filepath.Join("..", "..", "examples")
	steps := []struct {
		file string
		want string
	}{
		{"namespace.yaml", "namespace/demo created\n"},
		{"secret.yaml", "secret/db-credentials created\n"},
		{"demo.yaml", "namespace/demo unchanged\nsecret/registry-pull created\nsecret/webhook created\n"},
		{"lease.yaml", "lease/report-generator created\n"},
		{"team.yaml", "namespace/team-a created\nsecret/api-key created\n"},
		{"shop.yaml", "namespace/shop created\nsecret/db-password created\nblueprint/database created\nblueprint/app created\ninstallation/shop created\n"},
		{"", "namespace/demo unchanged\nsecret/registry-pull unchanged\nsecret/webhook unchanged\nlease/report-generator unchanged\nnamespace/demo unchanged\nsecret/db-credentials unchanged\n" +
			"namespace/shop unchanged\nsecret/db-password unchanged\nblueprint/database unchanged\nblueprint/app unchanged\ninstallation/shop unchanged\n" +
			"namespace/team-a unchanged\nsecret/api-key unchanged\n"},
	}
	for _, st := range steps {
		r := clitest.Run(t, srv.Config(), "apply", "-f", filepath.Join(examples, st.file))
		if r.Error != nil || r.Out != st.want {
			t.Errorf("apply -f examples/%s: out %q, err %v", st.file, r.Out, r.Error)
		}
	}
}
