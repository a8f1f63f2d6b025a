// Package blueprint renders blueprints: it checks an installation's
// imports against the JSON schemas its blueprint declares, and renders the
// blueprint's deploy executions (into deploy items) and export executions
// (into exports) with Go text/template and sprig's hermetic functions
// (funcs): nothing a template calls reads the environment, a file, the
// network or the clock, or draws random values.
//
// Everything here is a pure function over plain data: no I/O, no clock.
// Errors say what failed and where (the import and the schema path, the
// execution and the template line); they never carry the value of an
// import marked secret.
package blueprint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
)

// Errors of the package, checked with errors.Is.
var (
	// ErrTemplate: a template does not parse, fails to execute, or renders
	// something that is not the YAML it must be.
	ErrTemplate = errors.New("blueprint: template")
	// ErrSchema: a declared JSON schema is not a valid schema.
	ErrSchema = errors.New("blueprint: invalid schema")
	// ErrImport: an import is missing or fails its schema.
	ErrImport = errors.New("blueprint: import")
)

// Data is what templates see: {"imports": {...}, "deployItems": {name:
// {"exports": ...}}, "subinstallations": {name: {"exports": ...}}}.
type Data struct {
	// Imports are the installation's import values by name.
	Imports map[string]any
	// DeployItems are the exports of the execution's deploy items, by
	// deploy item name (export executions only).
	DeployItems map[string]any
	// Subinstallations are the exports of the nested installations, by
	// template name (export executions only).
	Subinstallations map[string]any
	// Secrets names the imports whose values are Secret references
	// (api.SecretReference): a template must place them as they are
	// (see placed).
	Secrets []string
}

func (d Data) template() map[string]any {
	wrap := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = map[string]any{"exports": v}
		}
		return out
	}
	imports := d.Imports
	if imports == nil {
		imports = map[string]any{}
	}
	return map[string]any{
		"imports":          imports,
		"deployItems":      wrap(d.DeployItems),
		"subinstallations": wrap(d.Subinstallations),
	}
}

// funcs is the function set of every template: sprig's hermetic set,
// without env, expandenv, getHostByName, the clock (now, date, ...) and
// random values (randAlpha, uuidv4, ...). A template naming one of those
// fails to parse ("function \"env\" not defined"), so admission refuses it.
// Built once: the map is only read.
var funcs = sprig.HermeticTxtFuncMap()

// Parse parses one template executor, for admission. The error names the
// execution and, for a syntax error, the line ("template: items:3: ...").
func Parse(e api.TemplateExecutor) (*template.Template, error) {
	if e.Type != "" && e.Type != api.TemplateGo {
		return nil, fmt.Errorf("%w: execution %q: type %q is not %q", ErrTemplate, e.Name, e.Type, api.TemplateGo)
	}
	t, err := template.New(e.Name).Funcs(funcs).Option("missingkey=zero").Parse(e.Template)
	if err != nil {
		return nil, fmt.Errorf("%w: execution %q: %w", ErrTemplate, e.Name, err)
	}
	return t, nil
}

func execute(kind string, e api.TemplateExecutor, d Data, into any) error {
	t, err := Parse(e)
	if err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, d.template()); err != nil {
		return fmt.Errorf("%s: %w: execution %q: %w", kind, ErrTemplate, e.Name, err)
	}
	if err := placed(t, d, out.String()); err != nil {
		return fmt.Errorf("%s: %w: execution %q %w", kind, ErrTemplate, e.Name, err)
	}
	if err := yaml.UnmarshalStrict(out.Bytes(), into); err != nil {
		return fmt.Errorf("%s: %w: execution %q renders bad YAML: %w", kind, ErrTemplate, e.Name, err)
	}
	return nil
}

// RenderDeployItems renders every deploy execution of spec with d and
// returns their deploy items, in order. Each must render YAML
// `deployItems: [...]`; item names must be unique across executions.
// Errors: ErrTemplate, naming the execution (and the line, when the
// template engine knows it).
func RenderDeployItems(spec *api.BlueprintSpec, d Data) ([]api.DeployItemTemplate, error) {
	var items []api.DeployItemTemplate
	seen := map[string]string{}
	for _, e := range spec.DeployExecutions {
		var out struct {
			DeployItems []api.DeployItemTemplate `json:"deployItems"`
		}
		if err := execute("deployExecutions", e, d, &out); err != nil {
			return nil, err
		}
		for _, it := range out.DeployItems {
			if it.Name == "" || it.Type == "" {
				return nil, fmt.Errorf("deployExecutions: %w: execution %q renders a deploy item without name or type", ErrTemplate, e.Name)
			}
			if prev, ok := seen[it.Name]; ok {
				return nil, fmt.Errorf("deployExecutions: %w: execution %q renders deploy item %q, already rendered by %q", ErrTemplate, e.Name, it.Name, prev)
			}
			seen[it.Name] = e.Name
			items = append(items, it)
		}
	}
	return items, nil
}

// RenderExports renders every export execution of spec with d and merges
// their `exports: {...}` maps (a later execution wins on a repeated key).
// Errors: ErrTemplate, naming the execution.
func RenderExports(spec *api.BlueprintSpec, d Data) (map[string]json.RawMessage, error) {
	exports := map[string]json.RawMessage{}
	for _, e := range spec.ExportExecutions {
		var out struct {
			Exports map[string]json.RawMessage `json:"exports"`
		}
		if err := execute("exportExecutions", e, d, &out); err != nil {
			return nil, err
		}
		for k, v := range out.Exports {
			exports[k] = v
		}
	}
	return exports, nil
}

// CompileSchema compiles a JSON schema given as JSON. Errors: ErrSchema,
// saying why.
func CompileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSchema, err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSchema, strings.ReplaceAll(err.Error(), "file:///", ""))
	}
	return s, nil
}

// ImportValue is one resolved import handed to ValidateImports.
type ImportValue struct {
	// Value is the import's JSON value.
	Value json.RawMessage
	// Secret marks a value read from a Secret: errors then name the
	// schema path only, never a message that could quote the value.
	Secret bool
}

// ValidateImports checks values against the blueprint's import
// declarations: every import that is not optional is present, and every
// data import with a schema satisfies it. Errors: ErrImport naming the
// import and the schema path (and the instance path when inside the
// value); ErrSchema when a declared schema does not compile.
func ValidateImports(defs []api.ParameterDefinition, values map[string]ImportValue) error {
	for _, def := range defs {
		v, ok := values[def.Name]
		if !ok {
			if def.Optional {
				continue
			}
			return fmt.Errorf("%w %q: not set (the blueprint requires it)", ErrImport, def.Name)
		}
		if def.Type == api.ParameterTarget || len(def.Schema) == 0 {
			continue
		}
		s, err := CompileSchema(def.Schema)
		if err != nil {
			return fmt.Errorf("import %q: %w", def.Name, err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Value))
		if err != nil {
			return fmt.Errorf("%w %q: not JSON", ErrImport, def.Name)
		}
		if err := s.Validate(inst); err != nil {
			return schemaError(def.Name, v.Secret, err)
		}
	}
	return nil
}

// schemaError turns a validation failure into one error naming the import,
// the schema path and the instance path of its first leaf.
func schemaError(name string, secret bool, err error) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w %q: %w", ErrImport, name, err)
	}
	out := ve.BasicOutput()
	for _, u := range out.Errors {
		if u.Error == nil || strings.HasSuffix(u.KeywordLocation, "/$ref") {
			continue
		}
		where := "schema path " + orRoot(u.KeywordLocation)
		if u.InstanceLocation != "" {
			where += ", value path " + u.InstanceLocation
		}
		if secret {
			return fmt.Errorf("%w %q fails its schema at %s (the value is secret and not shown)", ErrImport, name, where)
		}
		return fmt.Errorf("%w %q fails its schema at %s: %s", ErrImport, name, where, u.Error.String())
	}
	return fmt.Errorf("%w %q fails its schema", ErrImport, name)
}

func orRoot(p string) string {
	if p == "" {
		return "/"
	}
	return p
}
