package delete

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/client"
)

// dryRunClient is the value of a bare --dry-run: show what the deletion
// would take, from the garbage collector's graph, and delete nothing.
const dryRunClient = "client"

// readDependents asks the server what deleting t would take
// (GET .../dependents). Errors: the server's (NotFound, Forbidden, 503
// while no garbage collector leads).
func readDependents(ctx context.Context, c client.Interface, t target) (*api.Dependents, error) {
	raw, err := c.Action(ctx, client.ActionRequest{Method: "GET", Kind: t.kind.Kind, Namespace: t.ns, Name: t.name, Action: api.ActionDependents})
	if err != nil {
		return nil, err
	}
	var d api.Dependents
	if err := json.Unmarshal(raw, &d); err != nil || d.Kind != api.KindDependents {
		return nil, fmt.Errorf("the server's answer is not a Dependents: %.80q", raw)
	}
	return &d, nil
}

// writePreview prints what deleting an object would take: the tree of
// objects, the counts per kind, the protected objects that would block
// it, and the dependents it would only detach. It returns w's error.
func writePreview(w io.Writer, d *api.Dependents) error {
	var b strings.Builder
	root := printer.ObjectName(d.Root.Kind, d.Root.Name)
	objects := "objects"
	if d.Total == 1 {
		objects = "object"
	}
	fmt.Fprintf(&b, "Deleting %s would take %d %s (dry run: nothing was deleted):\n", root, d.Total, objects)
	b.WriteString(nodeLabel(d.Root) + "\n")
	writeTree(&b, d.Root.Dependents, "")
	kinds := make([]string, 0, len(d.Counts))
	for k := range d.Counts {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var counts []string
	for _, k := range kinds {
		counts = append(counts, fmt.Sprintf("%s %d", k, d.Counts[k]))
	}
	if len(counts) > 0 {
		fmt.Fprintf(&b, "By kind: %s\n", strings.Join(counts, ", "))
	}
	if len(d.Blockers) > 0 {
		fmt.Fprintf(&b, "Blocked by %d protected object(s) (annotation %s: \"true\"): the deletion stops there, and what owns them\n"+
			"stays deleting, until the annotation is removed:\n", len(d.Blockers), api.AnnotationDeletionProtection)
		for _, r := range d.Blockers {
			fmt.Fprintf(&b, "  %s\n", refName(r))
		}
	}
	if len(d.Detached) > 0 {
		b.WriteString("Detached, not deleted (they keep another live owner):\n")
		for _, r := range d.Detached {
			fmt.Fprintf(&b, "  %s\n", refName(r))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTree draws nodes below a line with the given prefix.
func writeTree(b *strings.Builder, nodes []api.DependentNode, prefix string) {
	for i, n := range nodes {
		branch, next := "├── ", "│   "
		if i == len(nodes)-1 {
			branch, next = "└── ", "    "
		}
		b.WriteString(prefix + branch + nodeLabel(n) + "\n")
		writeTree(b, n.Dependents, prefix+next)
	}
}

// nodeLabel names a node of the tree, with what holds it.
func nodeLabel(n api.DependentNode) string {
	s := refName(n.ObjectReference)
	switch {
	case n.Protected:
		s += "  [protected: blocks the deletion]"
	case n.Deleting:
		s += "  [deleting already]"
	}
	return s
}

// refName is "kind/name", with the namespace when there is one to tell
// apart ("kind/name -n ns" is how the other commands take it).
func refName(r api.ObjectReference) string {
	s := printer.ObjectName(r.Kind, r.Name)
	if r.Namespace != "" {
		s += " (" + printer.Escape(r.Namespace) + ")"
	}
	return s
}
