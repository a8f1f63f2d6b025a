package manifest

import "testing"

func TestLineOf_FindsFieldsInYAMLJSONAndLists(t *testing.T) {
	tests := []struct {
		name, input, path string
		item, want        int
	}{
		{"yaml second document", "kind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata:\n  name: b\nspec:\n  x: 1\n  y: 2\n", "spec.y", 1, 9},
		{"yaml list index", "kind: B\nmetadata: {name: b}\nspec:\n  items:\n  - a: 1\n  - a: 2\n    b: 3\n", "spec.items[1].b", 0, 7},
		{"missing field gives the closest holder", "kind: B\nmetadata: {name: b}\nspec:\n  x: 1\n", "spec.zz", 0, 3},
		{"unknown top", "kind: B\nmetadata: {name: b}\n", "zz", 0, 0},
		{"json stream", "{\"kind\":\"A\",\"metadata\":{\"name\":\"a\"}}\n{\n \"kind\": \"B\",\n \"metadata\": {\"name\": \"b\"},\n \"spec\": {\n  \"x\": 1}}\n", "spec.x", 1, 6},
		{"kind List item", "kind: List\nitems:\n- kind: A\n  metadata: {name: a}\n- kind: B\n  metadata: {name: b}\n  spec:\n    x: 1\n", "spec.x", 1, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Parse("f", []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if got := objs[tt.item].LineOf(tt.path); got != tt.want {
				t.Errorf("LineOf(%q) = %d, want %d", tt.path, got, tt.want)
			}
		})
	}
}
