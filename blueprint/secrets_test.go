package blueprint_test

import (
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/blueprint"
)

// TestRenderDeployItems_SecretImportsArePlacedNeverComputedOn: a template
// placing a Secret import's reference (as it is, quoted, inside a larger
// string, as JSON, one key of a whole-Secret import) renders it; one
// computing on it fails with ErrTemplate naming the import, and never
// renders a mangled reference.
func TestRenderDeployItems_SecretImportsArePlacedNeverComputedOn(t *testing.T) {
	pw := api.SecretReference{Name: "db", Key: "password", Version: "12"}.String()
	user := api.SecretReference{Name: "creds", Key: "user", Version: "3"}.String()
	d := blueprint.Data{Imports: map[string]any{"password": pw, "creds": map[string]any{"user": user}, "host": "db.local"},
		Secrets: []string{"password", "creds"}}
	item := func(cfg string) string { return "deployItems:\n- name: a\n  type: mock\n  config: " + cfg + "\n" }
	cases := []struct {
		name, cfg string
		want      string // in the config; "" when the render must fail
	}{
		{"placed", item(`{p: {{ .imports.password }}}`), `"p":"` + pw + `"`},
		{"quoted", item(`{p: {{ .imports.password | quote }}}`), `"p":"` + pw + `"`},
		{"in a string", item(`{url: "pg://{{ .imports.creds.user }}:{{ .imports.password }}@{{ .imports.host | upper }}"}`),
			`"url":"pg://` + user + `:` + pw + `@DB.LOCAL"`},
		{"as JSON", item(`{creds: {{ .imports.creds | toJson }}}`), `"creds":{"user":"` + user + `"}`},
		{"in a condition", item(`{set: {{ if .imports.password }}true{{ end }}}`), `"set":true`},
		{"b64enc", item(`{p: {{ .imports.password | b64enc }}}`), ""},
		{"upper", item(`{p: {{ .imports.creds.user | upper }}}`), ""},
		{"sha256sum", item(`{p: {{ .imports.password | sha256sum }}}`), ""},
		{"len", item(`{n: {{ len .imports.password }}}`), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &api.BlueprintSpec{DeployExecutions: []api.TemplateExecutor{exec("items", c.cfg)}}
			items, err := blueprint.RenderDeployItems(spec, d)
			if c.want == "" {
				if !errors.Is(err, blueprint.ErrTemplate) || !strings.Contains(err.Error(), `execution "items" computes on the secret import`) ||
					!strings.Contains(err.Error(), "place the reference as it is") {
					t.Fatalf("err = %v, want ErrTemplate saying the execution computes on a secret import", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(items[0].Config), c.want) {
				t.Fatalf("config %s, want it to hold %s", items[0].Config, c.want)
			}
		})
	}
}

func TestRenderExports_ASecretImportStaysAReference(t *testing.T) {
	pw := api.SecretReference{Name: "db", Key: "password"}.String()
	d := blueprint.Data{Imports: map[string]any{"password": pw}, Secrets: []string{"password"}}
	spec := &api.BlueprintSpec{ExportExecutions: []api.TemplateExecutor{exec("x", "exports:\n  p: {{ .imports.password | quote }}\n")}}
	got, err := blueprint.RenderExports(spec, d)
	if err != nil || string(got["p"]) != `"`+pw+`"` {
		t.Fatalf("exports %s, %v: want the reference", got, err)
	}
	spec.ExportExecutions[0].Template = "exports:\n  p: {{ .imports.password | b64enc }}\n"
	if _, err := blueprint.RenderExports(spec, d); !errors.Is(err, blueprint.ErrTemplate) || !strings.Contains(err.Error(), `secret import "password"`) {
		t.Fatalf("err = %v, want ErrTemplate naming the import", err)
	}
}

// BenchmarkRenderDeployItems measures a deploy execution's rendering with
// a plain import (as a Secret's value was rendered before references) and
// with the same import as a Secret reference (rendered once more,
// probed, to check the template places it).
func BenchmarkRenderDeployItems(b *testing.B) {
	spec := &api.BlueprintSpec{DeployExecutions: []api.TemplateExecutor{exec("items",
		"deployItems:\n- name: db\n  type: container\n  config:\n    env: {PW: {{ .imports.password | quote }}, HOST: {{ .imports.host | quote }}}\n    command: [sh, -c, 'echo {{ .imports.host }}']\n")}}
	ref := api.SecretReference{Name: "db", Key: "password", Version: "12"}.String()
	for _, c := range []struct {
		name string
		d    blueprint.Data
	}{
		{"value", blueprint.Data{Imports: map[string]any{"password": "change-me-please", "host": "db.local"}}},
		{"reference", blueprint.Data{Imports: map[string]any{"password": ref, "host": "db.local"}, Secrets: []string{"password"}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := blueprint.RenderDeployItems(spec, c.d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
