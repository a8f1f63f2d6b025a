package gc

import (
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

// prot marks a node protected from deletion.
func prot(n Node) Node {
	n.Protected = true
	return n
}

// shape renders a tree as name(child,child); protected names end in "!".
func shape(n api.DependentNode) string {
	s := n.Name
	if n.Protected {
		s += "!"
	}
	if len(n.Dependents) == 0 {
		return s
	}
	var parts []string
	for _, c := range n.Dependents {
		parts = append(parts, shape(c))
	}
	return s + "(" + strings.Join(parts, ",") + ")"
}

func names(refs []api.ObjectReference) string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return strings.Join(out, ",")
}

func TestPlanDeletion(t *testing.T) {
	tests := []struct {
		name     string
		nodes    []Node
		uid      string
		tree     string
		counts   map[string]int
		blockers string
		detached string
	}{
		{name: "alone", nodes: []Node{ns, thing("a")}, uid: "a", tree: "a", counts: map[string]int{"Thing": 1}},
		{
			name:  "a tree of owners",
			nodes: []Node{ns, thing("a"), thing("b", "a"), thing("c", "a"), nd("Leaf", "d", "b"), nd("Leaf", "e", "d")},
			uid:   "a", tree: "a(b(d(e)),c)", counts: map[string]int{"Thing": 3, "Leaf": 2},
		},
		{
			name:  "a dependent with another live owner is detached, not taken",
			nodes: []Node{ns, thing("a"), thing("x"), thing("b", "a", "x"), thing("c", "b")},
			uid:   "a", tree: "a", counts: map[string]int{"Thing": 1}, detached: "b",
		},
		{
			name:  "a diamond: a dependent of two owners that both go is taken once",
			nodes: []Node{ns, thing("a"), thing("b", "a"), thing("c", "a"), thing("d", "c", "b")},
			uid:   "a", tree: "a(b(d),c)", counts: map[string]int{"Thing": 4},
		},
		{
			name:  "a dependent met before its other owner is taken is taken from that owner",
			nodes: []Node{ns, thing("a"), thing("z", "a"), thing("m", "z"), thing("b", "a", "m")},
			uid:   "a", tree: "a(z(m(b)))", counts: map[string]int{"Thing": 4},
		},
		{
			name:  "a protected dependent blocks, and what it owns is not listed",
			nodes: []Node{ns, thing("a"), prot(thing("b", "a")), thing("c", "b"), thing("d", "a")},
			uid:   "a", tree: "a(b!,d)", counts: map[string]int{"Thing": 2}, blockers: "b",
		},
		{
			name:  "a deleting second owner does not keep a dependent",
			nodes: []Node{ns, thing("a"), del(thing("x")), thing("b", "a", "x")},
			uid:   "a", tree: "a(b)", counts: map[string]int{"Thing": 2},
		},
		{
			name:  "a namespace takes everything in it, owners or not",
			nodes: []Node{ns, thing("a"), thing("b", "a"), nd("Leaf", "c"), prot(nd("Leaf", "p")), thing("q", "p")},
			uid:   "ns", tree: "ns(c,p!,a(b),q)", counts: map[string]int{NamespaceKind: 1, "Thing": 3, "Leaf": 1}, blockers: "p",
		},
		{
			name:  "a protected object itself",
			nodes: []Node{ns, prot(thing("a")), thing("b", "a")},
			uid:   "a", tree: "a!", counts: map[string]int{}, blockers: "a",
		},
		{
			name:  "a cycle ends",
			nodes: []Node{ns, thing("a", "c"), thing("b", "a"), thing("c", "b")},
			uid:   "a", tree: "a(b(c))", counts: map[string]int{"Thing": 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := PlanDeletion(graphOf(tc.nodes...), tc.uid)
			if !ok {
				t.Fatal("unknown uid")
			}
			total := 0
			for _, n := range tc.counts {
				total += n
			}
			if got := shape(d.Root); got != tc.tree {
				t.Errorf("tree %s, want %s", got, tc.tree)
			}
			if fmt.Sprint(d.Counts) != fmt.Sprint(tc.counts) || d.Total != total {
				t.Errorf("counts %v (total %d), want %v (%d)", d.Counts, d.Total, tc.counts, total)
			}
			if got := names(d.Blockers); got != tc.blockers {
				t.Errorf("blockers %q, want %q", got, tc.blockers)
			}
			if got := names(d.Detached); got != tc.detached {
				t.Errorf("detached %q, want %q", got, tc.detached)
			}
		})
	}
	if _, ok := PlanDeletion(graphOf(ns), "nope"); ok {
		t.Error("an unknown uid has a plan")
	}
}
