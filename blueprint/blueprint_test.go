package blueprint_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/blueprint"
)

func exec(name, tpl string) api.TemplateExecutor {
	return api.TemplateExecutor{Name: name, Type: api.TemplateGo, Template: tpl}
}

func TestRenderDeployItems_RendersItemsFromImportsWithSprig(t *testing.T) {
	spec := &api.BlueprintSpec{DeployExecutions: []api.TemplateExecutor{
		exec("first", "deployItems:\n- name: a\n  type: mock\n  config: {phase: Succeeded, export: {host: {{ .imports.db.host | upper | quote }}}}\n"),
		exec("second", "deployItems:\n- name: b\n  type: mock\n  dependsOn: [a]\n  timeout: 30s\n"),
	}}
	items, err := blueprint.RenderDeployItems(spec, blueprint.Data{Imports: map[string]any{"db": map[string]any{"host": "h1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Name != "a" || items[1].Name != "b" || items[1].DependsOn[0] != "a" || items[1].Timeout == nil {
		t.Fatalf("items = %+v", items)
	}
	if !strings.Contains(string(items[0].Config), `"host":"H1"`) {
		t.Fatalf("config = %s", items[0].Config)
	}
}

func TestRenderDeployItems_ErrorsNameTheExecutionAndLine(t *testing.T) {
	cases := []struct {
		name string
		tpl  string
		want []string
	}{
		{"parse error names the line", "deployItems:\n- name: a\n  type: {{ .imports.x \n", []string{`execution "items"`, "items:3"}},
		{"execution error", "{{ fail \"boom\" }}", []string{`execution "items"`, "boom"}},
		{"not YAML of deploy items", "deployItems: 3", []string{`execution "items"`, "bad YAML"}},
		{"unknown field", "deployItems:\n- name: a\n  type: mock\n  colour: red\n", []string{`execution "items"`, "colour"}},
		{"item without type", "deployItems:\n- name: a\n", []string{"without name or type"}},
		{"duplicate item", "deployItems:\n- {name: a, type: mock}\n- {name: a, type: mock}\n", []string{`deploy item "a"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := &api.BlueprintSpec{DeployExecutions: []api.TemplateExecutor{exec("items", c.tpl)}}
			_, err := blueprint.RenderDeployItems(spec, blueprint.Data{})
			if !errors.Is(err, blueprint.ErrTemplate) {
				t.Fatalf("err = %v, want ErrTemplate", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestRenderExports_ReadsDeployItemAndSubinstallationExports(t *testing.T) {
	spec := &api.BlueprintSpec{ExportExecutions: []api.TemplateExecutor{
		exec("a", "exports:\n  connection: {{ .deployItems.db.exports | toJson }}\n"),
		exec("b", "exports:\n  url: {{ printf \"%s:%v\" .subinstallations.web.exports.host .imports.port | quote }}\n"),
	}}
	got, err := blueprint.RenderExports(spec, blueprint.Data{
		Imports:          map[string]any{"port": json.Number("80")},
		DeployItems:      map[string]any{"db": map[string]any{"host": "127.0.0.1"}},
		Subinstallations: map[string]any{"web": map[string]any{"host": "w"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got["connection"]) != `{"host":"127.0.0.1"}` || string(got["url"]) != `"w:80"` {
		t.Fatalf("exports = %s / %s", got["connection"], got["url"])
	}
}

func TestParse_RejectsAnUnknownTemplateType(t *testing.T) {
	_, err := blueprint.Parse(api.TemplateExecutor{Name: "x", Type: "Spiff", Template: ""})
	if !errors.Is(err, blueprint.ErrTemplate) || !strings.Contains(err.Error(), "Spiff") {
		t.Fatalf("err = %v", err)
	}
}

func TestCompileSchema_RejectsAnInvalidSchema(t *testing.T) {
	for _, s := range []string{`{"type": 3}`, `{"minLength": "x"}`, `not json`} {
		if _, err := blueprint.CompileSchema(json.RawMessage(s)); !errors.Is(err, blueprint.ErrSchema) {
			t.Errorf("schema %s: err = %v, want ErrSchema", s, err)
		}
	}
	if _, err := blueprint.CompileSchema(json.RawMessage(`{"type":"object","required":["host"]}`)); err != nil {
		t.Fatal(err)
	}
}

func TestValidateImports(t *testing.T) {
	defs := []api.ParameterDefinition{
		{Name: "db", Schema: json.RawMessage(`{"type":"object","required":["host","port"],"properties":{"port":{"type":"integer"}}}`)},
		{Name: "password", Schema: json.RawMessage(`{"type":"string","minLength":8}`)},
		{Name: "extra", Optional: true},
	}
	good := map[string]blueprint.ImportValue{
		"db":       {Value: json.RawMessage(`{"host":"h","port":1}`)},
		"password": {Value: json.RawMessage(`"long-enough"`), Secret: true},
	}
	cases := []struct {
		name    string
		change  func(m map[string]blueprint.ImportValue)
		want    []string
		notWant string
	}{
		{"all good", func(map[string]blueprint.ImportValue) {}, nil, ""},
		{"missing import", func(m map[string]blueprint.ImportValue) { delete(m, "db") }, []string{`"db"`, "not set"}, ""},
		{"missing property", func(m map[string]blueprint.ImportValue) {
			m["db"] = blueprint.ImportValue{Value: json.RawMessage(`{"host":"h"}`)}
		}, []string{`"db"`, "schema path /required", "port"}, ""},
		{"wrong type names both paths", func(m map[string]blueprint.ImportValue) {
			m["db"] = blueprint.ImportValue{Value: json.RawMessage(`{"host":"h","port":"x"}`)}
		}, []string{`"db"`, "/properties/port/type", "value path /port"}, ""},
		{"secret value is never quoted", func(m map[string]blueprint.ImportValue) {
			m["password"] = blueprint.ImportValue{Value: json.RawMessage(`"hunter2"`), Secret: true}
		}, []string{`"password"`, "/minLength", "not shown"}, "hunter2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]blueprint.ImportValue{}
			for k, v := range good {
				m[k] = v
			}
			c.change(m)
			err := blueprint.ValidateImports(defs, m)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, blueprint.ErrImport) {
				t.Fatalf("err = %v, want ErrImport", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q does not say %q", err, w)
				}
			}
			if c.notWant != "" && strings.Contains(err.Error(), c.notWant) {
				t.Errorf("err %q leaks %q", err, c.notWant)
			}
		})
	}
}
