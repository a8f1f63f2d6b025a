package gc

import (
	"slices"
	"strconv"
	"testing"
)

func TestFindCycle(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		start string
		want  []string // nil: no cycle; else the members, any rotation
	}{
		{name: "chain", nodes: []Node{thing("a"), thing("b", "a"), thing("c", "b")}, start: "c"},
		{
			name:  "diamond is no cycle",
			nodes: []Node{thing("top"), thing("l", "top"), thing("r", "top"), thing("bottom", "l", "r")},
			start: "bottom",
		},
		{
			name: "double diamond is no cycle",
			nodes: []Node{thing("a"), thing("b", "a"), thing("c", "a"), thing("d", "b", "c"),
				thing("e", "d"), thing("f", "d"), thing("g", "e", "f", "a")},
			start: "g",
		},
		{name: "two-cycle", nodes: []Node{thing("a", "b"), thing("b", "a")}, start: "a", want: []string{"a", "b"}},
		{name: "self-owner", nodes: []Node{thing("a", "a")}, start: "a", want: []string{"a"}},
		{
			name:  "three-cycle reached from outside",
			nodes: []Node{thing("a", "c"), thing("b", "a"), thing("c", "b"), thing("d", "a")},
			start: "d", want: []string{"a", "b", "c"},
		},
		{
			name:  "cycle only among dependents is not reachable from the owner",
			nodes: []Node{thing("root"), thing("a", "root", "b"), thing("b", "a")},
			start: "root",
		},
		{name: "unknown owners are ignored", nodes: []Node{thing("a", "ghost")}, start: "a"},
		{name: "unknown start", nodes: []Node{thing("a")}, start: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FindCycle(graphOf(tt.nodes...), tt.start, nil)
			if tt.want == nil {
				if got != nil {
					t.Fatalf("FindCycle = %v, want none", got)
				}
				return
			}
			sorted := slices.Sorted(slices.Values(got))
			if !slices.Equal(sorted, tt.want) {
				t.Fatalf("FindCycle = %v, want members %v", got, tt.want)
			}
		})
	}
}

func TestFindCycle_DeepChainDoesNotRecurse(t *testing.T) {
	g := NewGraph()
	g.Put(thing("n0"))
	const depth = 100000
	for i := 1; i <= depth; i++ {
		g.Put(thing("n"+strconv.Itoa(i), "n"+strconv.Itoa(i-1)))
	}
	if got := FindCycle(g, "n"+strconv.Itoa(depth), nil); got != nil {
		t.Fatalf("chain reported as cycle %v", got[:3])
	}
	g.Put(thing("n0", "n"+strconv.Itoa(depth))) // close the loop
	if got := FindCycle(g, "n5", nil); len(got) != depth+1 {
		t.Fatalf("cycle of %d members, want %d", len(got), depth+1)
	}
}

func TestFindCycle_WithinRestrictsTheSearch(t *testing.T) {
	g := graphOf(del(thing("a", "b")), thing("b", "a"))
	if got := FindCycle(g, "a", deleting); got != nil {
		t.Fatalf("cycle through a live node reported among deleting ones: %v", got)
	}
	g.Put(del(thing("b", "a")))
	if got := FindCycle(g, "a", deleting); len(got) != 2 {
		t.Fatalf("FindCycle = %v, want a and b", got)
	}
}

func TestCycleMembers(t *testing.T) {
	tests := []struct {
		name  string
		nodes []Node
		uid   string
		want  []string
	}{
		{name: "diamond", nodes: []Node{thing("t"), thing("l", "t"), thing("r", "t"), thing("b", "l", "r")}, uid: "b"},
		{name: "two-cycle", nodes: []Node{thing("a", "b"), thing("b", "a")}, uid: "b", want: []string{"a", "b"}},
		{
			name: "two cycles sharing a node form one component",
			nodes: []Node{thing("a", "b", "c"), thing("b", "a"), thing("c", "a"),
				thing("x", "a")},
			uid: "c", want: []string{"a", "b", "c"},
		},
		{
			name:  "hanging off a cycle is not on it",
			nodes: []Node{thing("a", "b"), thing("b", "a"), thing("x", "a")},
			uid:   "x",
		},
		{
			name:  "owner of a cycle is not on it",
			nodes: []Node{thing("root"), thing("a", "root", "b"), thing("b", "a")},
			uid:   "root",
		},
		{name: "self-owner", nodes: []Node{thing("a", "a")}, uid: "a", want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CycleMembers(graphOf(tt.nodes...), tt.uid, nil); !slices.Equal(got, tt.want) {
				t.Fatalf("CycleMembers = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCycleReport_ListsKindAndNameSorted(t *testing.T) {
	g := graphOf(thing("b", "a"), thing("a", "b"))
	if got := CycleReport(g, []string{"b", "a"}); got != "Thing/a,Thing/b" {
		t.Fatalf("CycleReport = %q", got)
	}
}
