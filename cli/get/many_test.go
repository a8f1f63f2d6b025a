package get_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

func TestGet_SeveralKindsPrintOneTableEach(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	tests := []struct {
		name string
		args []string
		want string // after normalize
	}{
		{
			name: "comma-separated kinds, in the order asked",
			args: []string{"get", "namespaces,secrets"},
			want: "NAME STATUS AGE\ndefault Active AGE\nteam Active AGE\n\nNAME TYPE DATA AGE\napi token 1 AGE\ndb Opaque 2 AGE\n",
		},
		{
			name: "a kind with nothing to show is left out",
			args: []string{"get", "cleaners,secret", "-l", "app=web"},
			want: "NAME TYPE DATA AGE\ndb Opaque 2 AGE\n",
		},
		{
			name: "KIND/NAME arguments of several kinds",
			args: []string{"get", "secret/db", "ns/team", "secret/api"},
			want: "NAME TYPE DATA AGE\ndb Opaque 2 AGE\napi token 1 AGE\n\nNAME STATUS AGE\nteam Active AGE\n",
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
			if got := normalize(r.Out); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}

	r := clitest.Run(t, srv.Config(), "get", "secrets,ns", "-o", "yaml")
	if r.Error != nil || strings.Count(r.Out, "kind: List\n") != 2 || !strings.Contains(r.Out, "\n---\n") {
		t.Errorf("YAML of two kinds: two List documents with a separator, got %v\n%s", r.Error, r.Out)
	}
	if strings.Contains(r.Out, "aHVudGVyMg==") {
		t.Error("a listing of several kinds shows a secret value")
	}
	r = clitest.Run(t, srv.Config(), "get", "cleaners,executions")
	if r.Error != nil || r.Out != "" || r.Err != "No resources found.\n" {
		t.Errorf("nothing of either kind: out %q err %q %v", r.Out, r.Err, r.Error)
	}
}

func TestGet_SeveralKindsRefuseWhatNeedsOne(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	tests := []struct {
		name string
		args []string
		want string
		out  string
	}{
		{"names after several kinds", []string{"get", "secrets,ns", "db"}, "names need a single kind", ""},
		{"mixed forms", []string{"get", "secret/db", "api"}, "either KIND NAME... or KIND/NAME...", ""},
		{"empty kind", []string{"get", "secrets,"}, "has an empty kind", ""},
		{"not KIND/NAME", []string{"get", "secret/"}, `"secret/" is not KIND/NAME`, ""},
		{"watch", []string{"get", "secrets,ns", "-w"}, "-w follows one kind", ""},
		{"unknown kind among them", []string{"get", "secrets,gadgets"}, `unknown kind "gadgets"`, "db"},
		{"missing name reported after the others", []string{"get", "secret/db", "ns/nope"}, `"nope" not found`, "db "},
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
}
