package get_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// seed creates a namespace "team" and three secrets with labels.
func seed(t *testing.T, srv *servertest.Server) {
	t.Helper()
	r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args: []string{"apply", "-f", "-"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: team}\n---\n" +
			"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: db, labels: {app: web}}\nstringData: {password: hunter2, user: admin}\n---\n" +
			"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: api, labels: {app: api}}\ntype: token\nstringData: {token: s3cr3t}\n---\n" +
			"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: other, namespace: team, labels: {app: web}}\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("seed: %v %s", r.Error, r.Err)
	}
}

// ages replaces AGE values, which depend on timing, with "AGE".
var ages = regexp.MustCompile(`\b\d+(s|m|h|d)\b`)

// normalize replaces ages and collapses the padding between columns (the
// printer's tests check alignment).
func normalize(s string) string {
	return regexp.MustCompile(` +`).ReplaceAllString(ages.ReplaceAllString(s, "AGE"), " ")
}

func TestGet_Outputs(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	tests := []struct {
		name string
		args []string
		want string // exact, after ages are replaced
	}{
		{
			name: "table in the namespace, any case and plural",
			args: []string{"get", "SECRETS"},
			want: "NAME   TYPE     DATA   AGE\napi    token    1      AGE\ndb     Opaque   2      AGE\n",
		},
		{
			name: "all namespaces puts NAMESPACE first",
			args: []string{"get", "secret", "-A"},
			want: "NAMESPACE   NAME    TYPE     DATA   AGE\ndefault     api     token    1      AGE\ndefault     db      Opaque   2      AGE\nteam        other   Opaque   0      AGE\n",
		},
		{
			name: "label selector",
			args: []string{"get", "secrets", "-A", "-l", "app=web", "--show-labels"},
			want: "NAMESPACE   NAME    TYPE     DATA   AGE   LABELS\ndefault     db      Opaque   2      AGE   app=web\nteam        other   Opaque   0      AGE   app=web\n",
		},
		{
			name: "wide",
			args: []string{"get", "secrets", "db", "-o", "wide"},
			want: "NAME   TYPE     DATA   AGE\ndb     Opaque   2      AGE\n",
		},
		{
			name: "short name of a cluster-scoped kind",
			args: []string{"get", "ns", "team", "default"},
			want: "NAME      STATUS   AGE\nteam      Active   AGE\ndefault   Active   AGE\n",
		},
		{
			name: "names",
			args: []string{"get", "secret", "-o", "name"},
			want: "secret/api\nsecret/db\n",
		},
		{
			name: "comma-separated kinds: one table each, in the order asked",
			args: []string{"get", "namespaces,secrets"},
			want: "NAME STATUS AGE\nnamespace/default Active AGE\nnamespace/team Active AGE\n\nNAME TYPE DATA AGE\nsecret/api token 1 AGE\nsecret/db Opaque 2 AGE\n",
		},
		{
			name: "a kind with nothing to show is left out",
			args: []string{"get", "cleaners,secret", "-l", "app=web"},
			want: "NAME TYPE DATA AGE\nsecret/db Opaque 2 AGE\n",
		},
		{
			name: "KIND/NAME arguments of several kinds",
			args: []string{"get", "secret/db", "ns/team", "secret/api"},
			want: "NAME TYPE DATA AGE\nsecret/db Opaque 2 AGE\nsecret/api token 1 AGE\n\nNAME STATUS AGE\nnamespace/team Active AGE\n",
		},
		{
			name: "KIND/NAME of one kind is get KIND NAME",
			args: []string{"get", "secret/db", "-o", "name"},
			want: "secret/db\n",
		},
		{
			name: "names of several kinds",
			args: []string{"get", "ns,secrets", "-o", "name"},
			want: "namespace/default\nnamespace/team\nsecret/api\nsecret/db\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clitest.Run(t, srv.Config(), tt.args...)
			if r.Error != nil {
				t.Fatalf("error %v, stderr %q", r.Error, r.Err)
			}
			if got, want := normalize(r.Out), normalize(tt.want); got != want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			for _, v := range []string{"hunter2", "aHVudGVyMg==", "s3cr3t"} {
				if strings.Contains(r.Out, v) {
					t.Errorf("secret value %q printed", v)
				}
			}
		})
	}
}

func TestGet_YAMLAndJSON(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)

	r := clitest.Run(t, srv.Config(), "get", "secret", "db", "-o", "yaml")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, w := range []string{"apiVersion: cairn.dev/v1alpha1\n", "kind: Secret\n", "  name: db\n", "password: aHVudGVyMg==\n"} {
		if !strings.Contains(r.Out, w) {
			t.Errorf("get -o yaml of one secret lacks %q:\n%s", w, r.Out)
		}
	}

	r = clitest.Run(t, srv.Config(), "get", "secrets", "-o", "json")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var list struct {
		Kind  string
		Items []api.Object
	}
	if err := json.Unmarshal([]byte(r.Out), &list); err != nil {
		t.Fatalf("get -o json is not JSON: %v\n%s", err, r.Out)
	}
	if list.Kind != "List" || len(list.Items) != 2 || list.Items[1].Name != "db" {
		t.Errorf("list = %+v", list)
	}
	if strings.Contains(r.Out, "aHVudGVyMg==") || !strings.Contains(r.Out, `"password": "<redacted: 7 bytes>"`) {
		t.Errorf("a listing shows secret values:\n%s", r.Out)
	}
}

func TestGet_Errors(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	tests := []struct {
		name string
		args []string
		want string
		out  string
	}{
		{"unknown kind", []string{"get", "gadgets"}, `unknown kind "gadgets": the server serves `, ""},
		{"unknown kind lists namespaces", []string{"get", "gadgets"}, `Namespace (ns), `, ""},
		{"unknown kind lists secrets", []string{"get", "gadgets"}, `, Secret`, ""},
		{"missing object after found ones", []string{"get", "secret", "db", "nope"}, `"nope" not found`, "db "},
		{"bad output", []string{"get", "secrets", "-o", "xml"}, `unknown output format "xml"`, ""},
		{"bad selector", []string{"get", "secrets", "-l", "a in (b"}, "Error: ", ""},
		{"names after several kinds", []string{"get", "secrets,ns", "db"}, "names need a single kind", ""},
		{"mixed forms", []string{"get", "secret/db", "api"}, "either KIND NAME... or KIND/NAME...", ""},
		{"empty kind", []string{"get", "secrets,"}, "has an empty kind", ""},
		{"not KIND/NAME", []string{"get", "secret/"}, `"secret/" is not KIND/NAME`, ""},
		{"watch of several kinds", []string{"get", "secrets,ns", "-w"}, "-w follows one kind", ""},
		{"unknown kind among several", []string{"get", "secrets,gadgets"}, `unknown kind "gadgets"`, "db"},
		{"missing name of several kinds, after the others", []string{"get", "secret/db", "ns/nope"}, `"nope" not found`, "secret/db "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clitest.Run(t, srv.Config(), tt.args...)
			if r.Error == nil || !strings.Contains(r.Err, tt.want) {
				t.Errorf("error %v, stderr %q; want it to contain %q", r.Error, r.Err, tt.want)
			}
			if !strings.Contains(r.Out, tt.out) {
				t.Errorf("stdout %q lacks %q", r.Out, tt.out)
			}
		})
	}
	r := clitest.Run(t, srv.Config(), "get", "secrets", "-n", "team", "-l", "app=none")
	if r.Error != nil || r.Out != "" || r.Err != "No secrets found in the namespace team.\n" {
		t.Errorf("empty list: out %q err %q %v", r.Out, r.Err, r.Error)
	}
}

func TestGet_WatchPrintsAChange(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out clitest.Buffer
	done := make(chan clitest.Result, 1)
	go func() {
		done <- clitest.RunContext(ctx, t, srv.Config(), clitest.Cmd{Args: []string{"get", "secrets", "-w"}}, &out)
	}()
	waitFor(t, &out, "db     Opaque   2")
	if _, err := srv.Registry.Patch(identity.With(context.Background(), identity.System()), "Secret", "default", "db",
		[]byte(`{"data":{"extra":"eA=="}}`), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "db     Opaque   3")
	// A cut connection is resumed from the last version seen.
	srv.CloseWatches()
	if _, err := srv.Registry.Patch(identity.With(context.Background(), identity.System()), "Secret", "default", "db",
		[]byte(`{"data":{"more":"eA=="}}`), false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "db     Opaque   4")
	cancel()
	select {
	case r := <-done:
		if r.Error != nil {
			t.Errorf("get -w ended with %v", r.Error)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("get -w did not end when its context was cancelled")
	}
	if n := strings.Count(out.String(), "NAME"); n != 1 {
		t.Errorf("header printed %d times:\n%s", n, out.String())
	}
}

// waitFor polls out until it contains s, failing the test after 10s.
func waitFor(t *testing.T, out *clitest.Buffer, s string) {
	t.Helper()
	testkit.EventuallyNil(t, 10*time.Second, fmt.Sprintf("output containing %q", s), func() error {
		if got := out.String(); !strings.Contains(got, s) {
			return fmt.Errorf("output so far:\n%s", got)
		}
		return nil
	})
}
