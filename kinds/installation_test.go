package kinds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

// create decodes a YAML object and creates it.
func createYAML(ctx context.Context, c client.Interface, doc string) error {
	var obj api.Object
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return err
	}
	_, err := c.Create(ctx, &obj)
	return err
}

func TestInstallationBlueprintDataObject_AdmissionRejectsBadInputNamingTheField(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	inst := func(spec string) string {
		return "apiVersion: cairn.dev/v1alpha1\nkind: Installation\nmetadata: {name: i, namespace: default}\nspec:\n" + spec
	}
	bp := func(spec string) string {
		return "apiVersion: cairn.dev/v1alpha1\nkind: Blueprint\nmetadata: {name: b, namespace: default}\nspec:\n" + spec
	}
	for _, tc := range []struct {
		name, doc string
		want      []string // what the 422 names; nil when valid
	}{
		{"valid installation", inst("  blueprint: {ref: b}\n  imports: {data: [{name: a, value: 1}, {name: b, dataRef: x}, {name: c, secretRef: {name: s}}]}\n"), nil},
		{"valid blueprint", bp("  imports: [{name: a, schema: {type: string}}]\n  deployExecutions: [{name: e, type: GoTemplate, template: 'deployItems: []'}]\n"), nil},
		{"no blueprint", inst("  imports: {}\n"), []string{"spec.blueprint"}},
		{"both inline and ref", inst("  blueprint: {ref: b, inline: {}}\n"), []string{"spec.blueprint", "only one"}},
		{"import with two sources", inst("  blueprint: {ref: b}\n  imports: {data: [{name: a, value: 1, dataRef: x}]}\n"),
			[]string{"spec.imports.data[0]", "exactly one"}},
		{"import with no source", inst("  blueprint: {ref: b}\n  imports: {data: [{name: a}]}\n"),
			[]string{"spec.imports.data[0]", "exactly one"}},
		{"duplicate import", inst("  blueprint: {ref: b}\n  imports: {data: [{name: a, value: 1}, {name: a, value: 2}]}\n"),
			[]string{"spec.imports.data[1].name", "Duplicate"}},
		{"duplicate export", inst("  blueprint: {ref: b}\n  exports: {data: [{name: a, dataRef: xa}, {name: a, dataRef: xb}]}\n"),
			[]string{"spec.exports.data[1].name"}},
		{"valid target import and export", strings.Replace(inst("  blueprint: {ref: b}\n  imports: {targets: [{name: c, target: prod}]}\n  exports: {targets: [{name: t, target: made}]}\n"), "{name: i,", "{name: targets,", 1), nil},
		{"exported target twice", inst("  blueprint: {ref: b}\n  exports: {targets: [{name: a, target: x}, {name: b, target: x}]}\n"),
			[]string{"spec.exports.targets[1].target", "Duplicate"}},
		{"target not a name", inst("  blueprint: {ref: b}\n  exports: {targets: [{name: a, target: Not_A_Name}]}\n"),
			[]string{"spec.exports.targets[0].target"}},
		{"negative maxRetries", inst("  blueprint: {ref: b}\n  automaticReconcile: {failedReconcile: {maxRetries: -1}}\n"),
			[]string{"spec.automaticReconcile.failedReconcile.maxRetries"}},
		{"inline template does not parse", inst("  blueprint:\n    inline:\n      deployExecutions:\n      - name: items\n        template: |\n          deployItems:\n          - {{ .imports.x\n"),
			[]string{"spec.blueprint.inline.deployExecutions[0].template", `execution \"items\"`, "items:2"}},
		{"inline subinstallation import", inst("  blueprint:\n    inline:\n      subinstallations:\n      - name: db\n        blueprint: {ref: b}\n        imports: {data: [{name: a}]}\n"),
			[]string{"spec.blueprint.inline.subinstallations[0].imports.data[0]"}},
		{"blueprint duplicate import", bp("  imports: [{name: a}, {name: a}]\n"), []string{"spec.imports[1].name", "Duplicate"}},
		{"blueprint duplicate export", bp("  exports: [{name: a}, {name: a}]\n"), []string{"spec.exports[1].name"}},
		{"blueprint invalid schema", bp("  imports: [{name: a, schema: {type: 3}}]\n"), []string{"spec.imports[0].schema", "invalid schema"}},
		{"blueprint export template", bp("  exportExecutions: [{name: out, template: '{{ end }}'}]\n"),
			[]string{"spec.exportExecutions[0].template", `execution \"out\"`, "out:1"}},
		{"template reads the environment", bp("  deployExecutions: [{name: e, template: '{{ env \"HOME\" }}'}]\n"),
			[]string{"spec.deployExecutions[0].template", `function \"env\" not defined`}},
		{"template expands the environment", bp("  deployExecutions: [{name: e, template: '{{ expandenv \"$HOME\" }}'}]\n"),
			[]string{"spec.deployExecutions[0].template", `function \"expandenv\" not defined`}},
		{"template resolves a host", bp("  exportExecutions: [{name: e, template: '{{ getHostByName \"localhost\" }}'}]\n"),
			[]string{"spec.exportExecutions[0].template", `function \"getHostByName\" not defined`}},
		{"template reads the clock", inst("  blueprint:\n    inline:\n      deployExecutions:\n      - name: items\n        template: '{{ now }}'\n"),
			[]string{"spec.blueprint.inline.deployExecutions[0].template", `function \"now\" not defined`}},
		{"template draws random values", bp("  deployExecutions: [{name: e, template: '{{ randAlpha 5 }}'}]\n"),
			[]string{"spec.deployExecutions[0].template", `function \"randAlpha\" not defined`}},
		{"blueprint duplicate execution", bp("  deployExecutions: [{name: e, template: ''}, {name: e, template: ''}]\n"),
			[]string{"spec.deployExecutions[1].name"}},
		{"blueprint unknown template type", bp("  deployExecutions: [{name: e, type: Spiff, template: ''}]\n"),
			[]string{"spec.deployExecutions[0].template", "Spiff"}},
		{"valid dataobject", "apiVersion: cairn.dev/v1alpha1\nkind: DataObject\nmetadata: {name: d, namespace: default}\ndata: {a: 1}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := createYAML(ctx, c, tc.doc)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				for _, k := range []string{api.KindInstallation, api.KindBlueprint, api.KindDataObject} {
					_, _, _ = c.Delete(ctx, k, "default", map[string]string{api.KindInstallation: "i", api.KindBlueprint: "b", api.KindDataObject: "d"}[k], api.DeleteOptions{})
				}
				return
			}
			if !errors.Is(err, api.ErrInvalid) {
				t.Fatalf("create = %v, want Invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), strings.ReplaceAll(w, `\"`, `"`)) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
