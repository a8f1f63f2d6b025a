package condition

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// widgetSchemas describe one kind, Widget: metadata (a definition of its
// own), spec {size: integer, tags: [string], config: any JSON}.
func widgetSchemas() *Schemas {
	free := spec.Schema{}
	free.AddExtension("x-kubernetes-preserve-unknown-fields", true)
	meta := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: map[string]spec.Schema{
		"name":              *spec.StringProperty(),
		"generation":        *spec.Int64Property(),
		"creationTimestamp": *spec.DateTimeProperty(),
		"labels":            *spec.MapProperty(spec.StringProperty()),
	}}}
	widget := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: map[string]spec.Schema{
		"metadata": *spec.RefSchema("#/definitions/Meta"),
		"spec": {SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}, Properties: map[string]spec.Schema{
			"size":   *spec.Int64Property(),
			"tags":   *spec.ArrayProperty(spec.StringProperty()),
			"config": free,
		}}},
	}}}
	return &Schemas{Defs: map[string]*spec.Schema{"Widget": &widget, "Meta": &meta}, DefName: func(k string) string { return k }}
}

func TestTypeCheck_RefusesWhatTheSchemaMakesWrongNamingOperatorAndTypes(t *testing.T) {
	vars := []TypedVar{{Name: "w", Kind: "Widget"}, {Name: "ws", Kind: "Widget", Selected: true}}
	cases := []struct {
		cond string
		want string // "" when it type-checks
	}{
		{`w.spec.size + 1 > 2 && w.spec.tags.exists(t, t.startsWith("a"))`, ""},
		{`w.metadata.labels["x"] == "y" && w.metadata.generation > 1`, ""},
		{`time - w.lastChangeTime > duration("72h")`, ""},
		{`time - timestamp(w.metadata.creationTimestamp) > duration("1h")`, ""},
		{`w.spec.config.anything.goes == 1`, ""},
		{`ws.items.all(x, x.spec.size < 10)`, ""},
		{`w.metadata.name + 1 == 2`, "found no matching overload for '_+_' applied to '(string, int)'"},
		{`w.spec.size == "big"`, "found no matching overload for '_==_' applied to '(int, string)'"},
		{`w.spec.colour == "red"`, "undefined field 'colour'"},
		{`w.lastChangeTime > "2026-01-01"`, "'_>_' applied to '(timestamp, string)'"},
		{`ws.items[0].spec.tags[0] > 1`, "'_>_' applied to '(string, int)'"},
	}
	for _, c := range cases {
		issues, err := TypeCheck(vars, []string{c.cond}, widgetSchemas())
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.want == "" && len(issues) > 0:
			t.Errorf("%s: refused: %v", c.cond, issues)
		case c.want != "" && (len(issues) == 0 || !strings.Contains(issues[0].Message, c.want)):
			t.Errorf("%s: issues %v, want %q", c.cond, issues, c.want)
		}
	}
	if _, err := TypeCheck([]TypedVar{{Name: "x", Kind: "Gadget"}}, []string{"true"}, widgetSchemas()); err == nil {
		t.Error("a kind with no schema type-checked")
	}
}

func TestEval_AFailedOverloadNamesTheOperatorAndTheTypes(t *testing.T) {
	set, issues, err := Compile([]string{"x"}, []string{`x.spec.a + 1 == 2`, `x.spec.a.startsWith(x.spec.n)`, `x.spec.n + 1 == 2`})
	if err != nil || issues != nil {
		t.Fatal(issues, err)
	}
	x := map[string]any{"spec": map[string]any{"a": "s", "n": int64(1)}}
	rs := set.Eval(context.Background(), map[string]any{"x": x}, time.Now())
	for i, want := range []string{
		"no such overload for '_+_' applied to '(string, int)' at line 1, column 10",
		"no such overload for 'startsWith' applied to '(string, int)' at line 1, column 20",
	} {
		if !errors.Is(rs[i].Err, ErrEvaluation) || !strings.Contains(rs[i].Err.Error(), want) {
			t.Errorf("condition %d: %v, want %q", i, rs[i].Err, want)
		}
	}
	if rs[2].Err != nil || !rs[2].Value {
		t.Errorf("a whole number is an int: %+v", rs[2])
	}
}
