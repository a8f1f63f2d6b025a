package apply_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

func TestApply_InputErrorsPointAtTheFieldAndSuggest(t *testing.T) {
	srv := servertest.Start(t)
	dir := t.TempDir()
	tests := []struct {
		name, body string
		want       []string
	}{
		{
			name: "misspelled spec field",
			body: "apiVersion: cairn.dev/v1alpha1\nkind: Cleaner\nmetadata:\n  name: c1\nspec:\n  ttl: 1h\n  tagrets: []\n",
			want: []string{"spec.yaml:7: ", "spec.tagrets: unknown field, did you mean targets?"},
		},
		{
			name: "case variant inside a list item",
			body: "apiVersion: cairn.dev/v1alpha1\nkind: Cleaner\nmetadata:\n  name: c2\nspec:\n  ttl: 1h\n  targets:\n  - name: t\n    Delete: true\n",
			want: []string{"spec.yaml:9: ", "spec.targets[0].Delete: unknown field, did you mean delete?"},
		},
		{
			name: "no apiVersion",
			body: "kind: Secret\nmetadata:\n  name: s\nstringData:\n  k: v\n",
			want: []string{"spec.yaml:1: ", `apiVersion: required: must be "cairn.dev/v1alpha1"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := write(t, dir, "spec.yaml", tt.body)
			r := clitest.Run(t, srv.Config(), "apply", "-f", f)
			if r.Error == nil {
				t.Fatalf("apply accepted it: %q", r.Out)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Error.Error(), w) {
					t.Errorf("error %q\nwant it to contain %q", r.Error, w)
				}
			}
		})
	}
}
