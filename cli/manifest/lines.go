package manifest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"cairn.dev/cairn/api"
)

// position is where an object's text lies: its YAML node (JSON read as
// YAML) and the file line of the node's line 1.
type position struct {
	node *yaml.Node
	base int
}

// parseNode reads text as one YAML value whose first line is file line
// base; a text that does not parse gives a position without a node (its
// fields then have no line).
func parseNode(text []byte, base int) position {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) == 0 {
		return position{base: base}
	}
	return position{node: doc.Content[0], base: base}
}

// item is the position of the i-th element of the sequence p holds (or of
// the items of the `kind: List` mapping it holds).
func (p position) item(i int) position {
	n := p.node
	if n != nil && n.Kind == yaml.MappingNode {
		n = mapValue(n, "items")
	}
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return position{base: p.base}
	}
	return position{node: n.Content[i], base: p.base}
}

// LineOf returns the file line of the field at path ("spec.ttl",
// "spec.targets[0].kind"), or of its closest enclosing field found, or 0
// when the object's text has no such field or was not YAML or JSON.
func (o Object) LineOf(path string) int {
	n := o.pos.node
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, idx, _ := strings.Cut(part, "[")
		if n == nil || n.Kind != yaml.MappingNode {
			break
		}
		key, val := mapEntry(n, name)
		if key == nil {
			break
		}
		line, n = key.Line, val
		for ; idx != "" && n != nil; _, idx, _ = strings.Cut(idx, "[") {
			num, _, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(num)
			if err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				n = nil
				break
			}
			n = n.Content[i]
			line = n.Line
		}
	}
	if line == 0 {
		return 0
	}
	return o.pos.base + line - 1
}

// WhereError returns "source:line" for a message about err: the line of
// the first field an API error names (an *api.Status with causes) when
// the manifest has it, else the line the object's document starts at.
func (o Object) WhereError(err error) string {
	var st *api.Status
	if errors.As(err, &st) && st.Details != nil {
		for _, c := range st.Details.Causes {
			if l := o.LineOf(c.Field); l > 0 {
				return fmt.Sprintf("%s:%d", o.Source, l)
			}
		}
	}
	return o.Where()
}

// mapEntry returns the key and value nodes of key in mapping n.
func mapEntry(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// mapValue returns the value of key in mapping n, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	_, v := mapEntry(n, key)
	return v
}
