package docgen

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestClean_JoinsParagraphsAndSetsMarkersApart(t *testing.T) {
	tests := []struct {
		name, in, want string
		markers        []string
	}{
		{"one line", "Name is the name.\n", "Name is the name.", nil},
		{"lines of a paragraph", "Name is\nthe name.\n", "Name is the name.", nil},
		{"paragraphs", "First.\n\nSecond\nline.\n", "First.\n\nSecond line.", nil},
		{"markers", "Items are keyed.\n+listType=map\n+listMapKey=name\n", "Items are keyed.", []string{"listType=map", "listMapKey=name"}},
		{"only markers", "+listType=set\n", "", []string{"listType=set"}},
		{"indented lines", "A list:\n  - one\n  - two\n", "A list: - one - two", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, markers := Clean(tt.in)
			if got != tt.want || !slices.Equal(markers, tt.markers) {
				t.Errorf("Clean(%q) = %q, %q; want %q, %q", tt.in, got, markers, tt.want, tt.markers)
			}
		})
	}
}

func TestExtract_ReadsTypesFieldsMarkersAndEnums(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// Phase is a phase.
type Phase string

// The phases.
const (
	PhaseA Phase = "A"
	PhaseB Phase = "B"
	other        = "not a phase"
)

// Thing is a thing.
type Thing struct {
	// Items are keyed.
	// +listType=map
	// +listMapKey=id
	Items []Item ` + "`json:\"items\"`" + `
	Phase Phase // Phase is where it is.
	Bare  int
}

type (
	// Item is one item.
	Item struct{ ID string }
)
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\n// Ignored is in a test.\ntype Ignored int\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Extract(dir)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"type", d.Types["Thing"], "Thing is a thing."},
		{"type in a group", d.Types["Item"], "Item is one item."},
		{"field", d.Fields["Thing.Items"], "Items are keyed."},
		{"line comment", d.Fields["Thing.Phase"], "Phase is where it is."},
		{"undocumented", d.Fields["Thing.Bare"], ""},
		{"test files", d.Types["Ignored"], ""},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	if got := d.Markers["Thing.Items"]; !slices.Equal(got, []string{"listType=map", "listMapKey=id"}) {
		t.Errorf("markers %q", got)
	}
	if got := d.Enums["Phase"]; !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("enum %q", got)
	}
	if _, err := Render(d, "p", "docs", "a test"); err != nil {
		t.Errorf("Render: %v", err)
	}
	if _, err := Extract(t.TempDir()); err == nil {
		t.Error("a directory without Go files was read")
	}
}
