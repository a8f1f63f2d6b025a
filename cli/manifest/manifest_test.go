package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParse_ObjectsWithStartingLines(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // "Kind/name@line"
	}{
		{
			name:  "single document",
			input: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata:\n  name: demo\n",
			want:  []string{"Namespace/demo@1"},
		},
		{
			name: "multi-document with comments and empty documents",
			input: "# leading comment\n---\n\napiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata:\n  name: a\n" +
				"---  # second\n---\nkind: Secret\nmetadata:\n  name: b\n  namespace: a\nstringData:\n  k: v\n---\n",
			want: []string{"Namespace/a@4", "Secret/b@10"},
		},
		{
			name:  "kind List expands items",
			input: "kind: List\nitems:\n- kind: Namespace\n  metadata: {name: x}\n- kind: Namespace\n  metadata: {name: yy}\n",
			want:  []string{"Namespace/x@1", "Namespace/yy@1"},
		},
		{
			name:  "JSON stream",
			input: "{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"j1\"}}\n\n{\n \"kind\": \"Namespace\",\n \"metadata\": {\"name\": \"j2\"}}\n",
			want:  []string{"Namespace/j1@1", "Namespace/j2@3"},
		},
		{
			name:  "JSON array",
			input: "[{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"a1\"}}]",
			want:  []string{"Namespace/a1@1"},
		},
		{
			name:  "generateName stands in for a name",
			input: "kind: Secret\nmetadata:\n  generateName: s-\n",
			want:  []string{"Secret/@1"},
		},
		{
			name:  "CRLF line endings",
			input: "kind: Namespace\r\nmetadata:\r\n  name: w\r\n---\r\nkind: Namespace\r\nmetadata:\r\n  name: v\r\n",
			want:  []string{"Namespace/w@1", "Namespace/v@5"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse("f.yaml", []byte(tt.input))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, o := range objs {
				if o.Source != "f.yaml" {
					t.Errorf("source = %q", o.Source)
				}
				got = append(got, o.Kind+"/"+o.Name+"@"+strconv.Itoa(o.Line))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParse_ErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // each must appear in the error
	}{
		{
			name:  "bad indentation in the second document",
			input: "kind: Namespace\nmetadata:\n  name: a\n---\nkind: Namespace\nmetadata:\n  name: b\n   x: y\n",
			want:  []string{"bad.yaml:8: "},
		},
		{
			name:  "tab character",
			input: "kind: Namespace\nmetadata:\n\tname: a\n",
			want:  []string{"bad.yaml:3: found character that cannot start any token"},
		},
		{
			name:  "duplicate key",
			input: "\n\nkind: Namespace\nkind: Secret\n",
			want:  []string{"bad.yaml:4: ", "already set"},
		},
		{
			name:  "missing kind",
			input: "---\n# c\nmetadata:\n  name: a\n",
			want:  []string{"bad.yaml:3: object has no kind"},
		},
		{
			name:  "missing name",
			input: "kind: Namespace\n---\nkind: Secret\nmetadata: {}\n",
			want:  []string{"bad.yaml:1: Namespace has no metadata.name", "bad.yaml:3: Secret has no metadata.name"},
		},
		{
			name:  "scalar document",
			input: "just a string\n",
			want:  []string{"bad.yaml:1: expected an object", "found a string"},
		},
		{
			name:  "JSON syntax error",
			input: "{\"kind\": \"Namespace\",\n \"metadata\": {\"name\": \"a\"},\n oops}\n",
			want:  []string{"bad.yaml:3: invalid character"},
		},
		{
			name:  "truncated JSON",
			input: "{\"kind\": \"Namespace\",\n",
			want:  []string{"bad.yaml:1: unexpected end of JSON input"},
		},
		{
			name:  "metadata of the wrong type",
			input: "kind: Namespace\nmetadata: [1]\n",
			want:  []string{"bad.yaml:1: metadata"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse("bad.yaml", []byte(tt.input))
			if err == nil {
				t.Fatalf("Parse succeeded with %d objects, want an error", len(objs))
			}
			if objs != nil {
				t.Errorf("Parse returned objects with an error")
			}
			var me *Error
			if !errors.As(err, &me) {
				t.Errorf("error %T is not a *manifest.Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRead_DirectoryInNameOrder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yml", "kind: Namespace\nmetadata: {name: b}\n")
	write("a.yaml", "kind: Namespace\nmetadata: {name: a1}\n---\nkind: Namespace\nmetadata: {name: a2}\n")
	write("c.json", `{"kind":"Namespace","metadata":{"name":"c"}}`)
	write("notes.txt", "not a manifest")
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	objs, err := Read(dir, nil)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, filepath.Base(o.Source)+":"+o.Name)
	}
	want := "a.yaml:a1 a.yaml:a2 b.yml:b c.json:c"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

func TestRead_ReportsEveryBadFileAndReturnsNothing(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "1.yaml"), []byte("kind: Namespace\nmetadata: {name: ok}\n"), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "2.yaml"), []byte("kind: Namespace\nmetadata:\n\tname: x\n"), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "3.yaml"), []byte("metadata: {name: yy}\n"), 0o600)
	objs, err := Read(dir, nil)
	if err == nil || objs != nil {
		t.Fatalf("Read = %d objects, %v; want no objects and an error", len(objs), err)
	}
	for _, w := range []string{filepath.Join(dir, "2.yaml") + ":3:", filepath.Join(dir, "3.yaml") + ":1: object has no kind"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestRead_StdinAndMissingPaths(t *testing.T) {
	objs, err := Read(Stdin, strings.NewReader("kind: Namespace\nmetadata: {name: s}\n"))
	if err != nil || len(objs) != 1 || objs[0].Source != StdinSource || objs[0].Where() != "<stdin>:1" {
		t.Fatalf("Read(-) = %+v, %v", objs, err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "nope.yaml"), nil); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: err = %v, want one naming the file", err)
	}
	if _, err := Read(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "no *.yaml") {
		t.Errorf("empty dir: err = %v", err)
	}
}
