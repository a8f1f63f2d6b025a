package gc

import (
	"slices"
	"testing"

	"cairn.dev/cairn/api"
)

func TestGraph_EditsKeepEdgesInStep(t *testing.T) {
	type step func(g *Graph)
	put := func(n Node) step { return func(g *Graph) { g.Put(n) } }
	rm := func(uid string) step { return func(g *Graph) { g.Remove(uid) } }
	tests := []struct {
		name       string
		steps      []step
		dependents map[string][]string
		owners     map[string][]string
	}{
		{
			name:       "owner edge",
			steps:      []step{put(thing("a")), put(thing("b", "a"))},
			dependents: map[string][]string{"a": {"b"}, "b": nil},
			owners:     map[string][]string{"b": {"a"}, "a": nil},
		},
		{
			name:       "dependent before its owner",
			steps:      []step{put(thing("b", "a")), put(thing("a"))},
			dependents: map[string][]string{"a": {"b"}},
			owners:     map[string][]string{"b": {"a"}},
		},
		{
			name:       "owner unknown: edge kept, owner not listed",
			steps:      []step{put(thing("b", "a"))},
			dependents: map[string][]string{"a": {"b"}},
			owners:     map[string][]string{"b": nil},
		},
		{
			name:       "update moves the edge",
			steps:      []step{put(thing("a")), put(thing("c")), put(thing("b", "a")), put(thing("b", "c"))},
			dependents: map[string][]string{"a": nil, "c": {"b"}},
			owners:     map[string][]string{"b": {"c"}},
		},
		{
			name:       "update drops one of two owners",
			steps:      []step{put(thing("a")), put(thing("c")), put(thing("b", "a", "c")), put(thing("b", "a"))},
			dependents: map[string][]string{"a": {"b"}, "c": nil},
			owners:     map[string][]string{"b": {"a"}},
		},
		{
			name:       "removed dependent leaves its owners",
			steps:      []step{put(thing("a")), put(thing("b", "a")), rm("b")},
			dependents: map[string][]string{"a": nil},
			owners:     map[string][]string{"b": nil},
		},
		{
			name:       "removed owner keeps the dependent's edge for orphan finding",
			steps:      []step{put(thing("a")), put(thing("b", "a")), rm("a")},
			dependents: map[string][]string{"a": {"b"}},
			owners:     map[string][]string{"b": nil},
		},
		{
			name:       "namespace owns its objects, whatever the order",
			steps:      []step{put(thing("b")), put(nd(NamespaceKind, "ns")), put(thing("c", "b"))},
			dependents: map[string][]string{"ns": {"b", "c"}, "b": {"c"}},
			owners:     map[string][]string{"b": {"ns"}, "c": {"b", "ns"}, "ns": nil},
		},
		{
			name:       "namespace removed: objects lose the implicit owner",
			steps:      []step{put(nd(NamespaceKind, "ns")), put(thing("b")), rm("ns")},
			dependents: map[string][]string{"ns": nil},
			owners:     map[string][]string{"b": nil},
		},
		{
			name:       "duplicate references count once",
			steps:      []step{put(thing("a")), put(thing("b", "a", "a"))},
			dependents: map[string][]string{"a": {"b"}},
			owners:     map[string][]string{"b": {"a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGraph()
			for _, s := range tt.steps {
				s(g)
			}
			for uid, want := range tt.dependents {
				if got := g.Dependents(uid); !slices.Equal(got, want) {
					t.Errorf("Dependents(%s) = %v, want %v", uid, got, want)
				}
			}
			for uid, want := range tt.owners {
				if got := g.Owners(uid); !slices.Equal(got, want) {
					t.Errorf("Owners(%s) = %v, want %v", uid, got, want)
				}
			}
		})
	}
}

func TestGraph_PutReturnsPreviousAndCopies(t *testing.T) {
	g := NewGraph()
	n := thing("b", "a")
	if _, existed := g.Put(n); existed {
		t.Fatal("first Put reported a previous node")
	}
	n.Owners[0].UID = "mutated"
	got, _ := g.Node("b")
	if got.Owners[0].UID != "a" {
		t.Fatalf("graph shares the caller's slice: owner uid %q", got.Owners[0].UID)
	}
	prev, existed := g.Put(del(thing("b")))
	if !existed || prev.Deleting || len(prev.Owners) != 1 {
		t.Fatalf("Put returned previous %+v, existed %v", prev, existed)
	}
	if got := g.Deleting(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Deleting() = %v", got)
	}
}

func TestGraph_NameIndexFollowsReplacement(t *testing.T) {
	g := NewGraph()
	old := thing("x")
	old.UID = "uid-1"
	repl := thing("x")
	repl.UID = "uid-2"
	g.Put(old)
	g.Put(repl)       // recreated under the same name, seen first
	g.Remove("uid-1") // the old incarnation's DELETED arrives late
	if uid, ok := g.Lookup("Thing", "ns", "x"); !ok || uid != "uid-2" {
		t.Fatalf("Lookup = %q, %v; want uid-2", uid, ok)
	}
	if g.Len() != 1 {
		t.Fatalf("Len = %d", g.Len())
	}
}

func TestNodeOf_CopiesWhatTheCollectorNeeds(t *testing.T) {
	now := api.Object{}
	now.Kind, now.Namespace, now.Name, now.UID = "Thing", "ns", "a", "u"
	now.Finalizers = []string{api.FinalizerCascadeDeletion}
	now.OwnerReferences = []api.OwnerReference{{Kind: "Thing", Name: "o", UID: "o"}}
	now.Annotations = map[string]string{AnnotationCycle: "Thing/a,Thing/o"}
	n := NodeOf(&now)
	if n.Deleting || n.UID != "u" || !n.HasFinalizer(api.FinalizerCascadeDeletion) ||
		n.HasOtherFinalizer() || len(n.Owners) != 1 || n.CycleReport != "Thing/a,Thing/o" {
		t.Fatalf("NodeOf = %+v", n)
	}
}
