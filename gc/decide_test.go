package gc

import (
	"reflect"
	"testing"

	"cairn.dev/cairn/api"
)

var ns = nd(NamespaceKind, "ns")

func TestPlanCascade(t *testing.T) {
	const other = "cairn.dev/installation"
	tests := []struct {
		name  string
		nodes []Node
		uid   string
		want  Cascade
	}{
		{
			name:  "no dependents: finalizer goes",
			nodes: []Node{ns, del(thing("a"))},
			uid:   "a", want: Cascade{RemoveFinalizer: true},
		},
		{
			name:  "sole owner: dependent deleted",
			nodes: []Node{ns, del(thing("a")), thing("b", "a")},
			uid:   "a", want: Cascade{Delete: []Victim{{UID: "b", Leaf: true}}},
		},
		{
			name: "dependent holding a finalizer is no leaf",
			nodes: []Node{ns, del(thing("a")), {Kind: "Thing", Namespace: "ns", Name: "b", UID: "b",
				Finalizers: []string{other}, Owners: thing("b", "a").Owners}},
			uid: "a", want: Cascade{Delete: []Victim{{UID: "b"}}},
		},
		{
			name:  "second live owner: dependent detached",
			nodes: []Node{ns, del(thing("a")), thing("c"), thing("b", "a", "c")},
			uid:   "a", want: Cascade{Detach: []string{"b"}},
		},
		{
			name:  "second owner deleting: dependent deleted",
			nodes: []Node{ns, del(thing("a")), del(thing("c")), thing("b", "a", "c")},
			uid:   "a", want: Cascade{Delete: []Victim{{UID: "b", Leaf: true}}},
		},
		{
			name:  "second owner unknown: deleted once confirmed gone",
			nodes: []Node{ns, del(thing("a")), thing("b", "a", "ghost")},
			uid:   "a",
			want: Cascade{Delete: []Victim{{UID: "b", Leaf: true,
				Confirm: []api.OwnerReference{{Kind: "Thing", Name: "ghost", UID: "ghost"}}}}},
		},
		{
			name:  "controller reference, owner holds its own finalizer: skipped",
			nodes: []Node{ns, del(thing("a"), other), ctl(thing("b", "a"), "a")},
			uid:   "a", want: Cascade{Skip: []string{"b"}},
		},
		{
			name:  "controller reference, owner holds only cascade-deletion: deleted",
			nodes: []Node{ns, del(thing("a")), ctl(thing("b", "a"), "a")},
			uid:   "a", want: Cascade{Delete: []Victim{{UID: "b", Leaf: true}}},
		},
		{
			name:  "plain reference, owner holds its own finalizer: deleted",
			nodes: []Node{ns, del(thing("a"), other), thing("b", "a")},
			uid:   "a", want: Cascade{Delete: []Victim{{UID: "b", Leaf: true}}},
		},
		{
			name:  "controller reference to another owner does not skip",
			nodes: []Node{ns, del(thing("a"), other), del(thing("c")), ctl(thing("b", "a", "c"), "c")},
			uid:   "a", want: Cascade{Delete: []Victim{{UID: "b", Leaf: true}}},
		},
		{
			name:  "deleting dependent: waited for",
			nodes: []Node{ns, del(thing("a")), del(thing("b", "a"))},
			uid:   "a", want: Cascade{Wait: []string{"b"}},
		},
		{
			name:  "diamond: each side deleted, bottom waits for both",
			nodes: []Node{ns, del(thing("top")), thing("l", "top"), thing("r", "top"), thing("bottom", "l", "r")},
			uid:   "top", want: Cascade{Delete: []Victim{{UID: "l"}, {UID: "r"}}},
		},
		{
			name:  "diamond: first side goes, bottom keeps the live side",
			nodes: []Node{ns, del(thing("l")), thing("r"), thing("bottom", "l", "r")},
			uid:   "l", want: Cascade{Detach: []string{"bottom"}},
		},
		{
			name:  "two-cycle, other member live: deleted",
			nodes: []Node{ns, del(thing("a", "b")), thing("b", "a")},
			uid:   "a", want: Cascade{Delete: []Victim{{UID: "b"}}},
		},
		{
			name:  "two-cycle, all deleting: finalizer goes",
			nodes: []Node{ns, del(thing("a", "b")), del(thing("b", "a"))},
			uid:   "a", want: Cascade{InCycle: []string{"b"}, RemoveFinalizer: true},
		},
		{
			name:  "self-owner: finalizer goes",
			nodes: []Node{ns, del(thing("a", "a"))},
			uid:   "a", want: Cascade{InCycle: []string{"a"}, RemoveFinalizer: true},
		},
		{
			name:  "cycle member also owning a deleting outsider: waits for it",
			nodes: []Node{ns, del(thing("a", "b")), del(thing("b", "a")), del(thing("x", "a"))},
			uid:   "a", want: Cascade{Wait: []string{"x"}, InCycle: []string{"b"}},
		},
		{
			name:  "three-cycle with a live member: no shortcut",
			nodes: []Node{ns, del(thing("a", "c")), del(thing("b", "a")), thing("c", "b")},
			uid:   "a", want: Cascade{Wait: []string{"b"}},
		},
		{
			name: "namespace: everything goes but what a finalizing controller manages",
			nodes: []Node{del(ns), thing("root"), thing("child", "root"),
				ctl(thing("led", "root"), "root"), del(thing("going")),
				ctl(thing("managed", "owner"), "owner"), {Kind: "Thing", Namespace: "ns", Name: "owner", UID: "owner", Finalizers: []string{other}}},
			uid: "ns",
			want: Cascade{
				Delete: []Victim{{UID: "child", Leaf: true}, {UID: "led", Leaf: true}, {UID: "owner"}, {UID: "root"}},
				Skip:   []string{"managed"}, Wait: []string{"going"},
			},
		},
		{
			name: "namespace: controller cycle with finalizers is deleted",
			nodes: []Node{del(ns),
				{Kind: "Thing", Namespace: "ns", Name: "a", UID: "a", Finalizers: []string{other},
					Owners: []api.OwnerReference{{Kind: "Thing", Name: "b", UID: "b", Controller: true}}},
				{Kind: "Thing", Namespace: "ns", Name: "b", UID: "b", Finalizers: []string{other},
					Owners: []api.OwnerReference{{Kind: "Thing", Name: "a", UID: "a", Controller: true}}}},
			uid:  "ns",
			want: Cascade{Delete: []Victim{{UID: "a"}, {UID: "b"}}},
		},
		{
			name:  "namespace: objects elsewhere are not its dependents",
			nodes: []Node{del(ns), {Kind: "Thing", Namespace: "elsewhere", Name: "x", UID: "x"}},
			uid:   "ns", want: Cascade{RemoveFinalizer: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanCascade(graphOf(tt.nodes...), tt.uid)
			tt.want.Finalizer = api.FinalizerCascadeDeletion
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("PlanCascade =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

func TestOrphaned(t *testing.T) {
	replaced := thing("a")
	replaced.UID = "a-2" // "a" recreated: references to uid "a" are stale
	tests := []struct {
		name    string
		nodes   []Node
		uid     string
		want    bool
		confirm []api.OwnerReference
	}{
		{name: "no owners", nodes: []Node{ns, thing("b")}, uid: "b"},
		{name: "live owner", nodes: []Node{ns, thing("a"), thing("b", "a")}, uid: "b"},
		{name: "deleting owner", nodes: []Node{ns, del(thing("a")), thing("b", "a")}, uid: "b"},
		{
			name: "owner gone", nodes: []Node{ns, thing("b", "a")}, uid: "b", want: true,
			confirm: []api.OwnerReference{{Kind: "Thing", Name: "a", UID: "a"}},
		},
		{
			name: "owner name taken by another uid", nodes: []Node{ns, replaced, thing("b", "a")}, uid: "b", want: true,
			confirm: []api.OwnerReference{{Kind: "Thing", Name: "a", UID: "a"}},
		},
		{name: "one owner gone, one live", nodes: []Node{ns, thing("c"), thing("b", "a", "c")}, uid: "b"},
		{name: "deleting object is no orphan", nodes: []Node{ns, del(thing("b", "a"))}, uid: "b"},
		{
			name: "namespace gone", nodes: []Node{thing("b")}, uid: "b", want: true,
			confirm: []api.OwnerReference{{Kind: NamespaceKind, Name: "ns"}},
		},
		{
			name: "namespace gone, owner gone too", nodes: []Node{thing("b", "a")}, uid: "b", want: true,
			confirm: []api.OwnerReference{{Kind: NamespaceKind, Name: "ns"}},
		},
		{
			name: "namespace gone, controller owner with its own finalizer goes first",
			nodes: []Node{{Kind: "Thing", Namespace: "ns", Name: "a", UID: "a", Finalizers: []string{"cairn.dev/x"}},
				ctl(thing("b", "a"), "a")},
			uid: "b",
		},
		{
			name:  "namespace gone, plain live owner: orphan all the same",
			nodes: []Node{thing("a"), thing("b", "a")}, uid: "b", want: true,
			confirm: []api.OwnerReference{{Kind: NamespaceKind, Name: "ns"}},
		},
		{name: "cluster-scoped without owners", nodes: []Node{nd(NamespaceKind, "other")}, uid: "other"},
		{name: "unknown uid", nodes: []Node{ns}, uid: "nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, confirm := Orphaned(graphOf(tt.nodes...), tt.uid)
			if got != tt.want || !reflect.DeepEqual(confirm, tt.confirm) {
				t.Fatalf("Orphaned = %v %v, want %v %v", got, confirm, tt.want, tt.confirm)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	reported := thing("a", "b")
	reported.CycleReport = "Thing/a,Thing/b"
	tests := []struct {
		name  string
		nodes []Node
		uid   string
		want  Decision
	}{
		{name: "live object with live owner: nothing", nodes: []Node{ns, thing("a"), thing("b", "a")}, uid: "b"},
		{
			name: "orphan", nodes: []Node{ns, thing("b", "a")}, uid: "b",
			want: Decision{Orphan: true, Confirm: []api.OwnerReference{{Kind: "Thing", Name: "a", UID: "a"}}},
		},
		{
			name: "deleting with cascade-deletion: cascade", nodes: []Node{ns, del(thing("a"))}, uid: "a",
			want: Decision{Cascade: &Cascade{Finalizer: api.FinalizerCascadeDeletion, RemoveFinalizer: true}},
		},
		{
			name: "deleting with the orphan finalizer: release", nodes: []Node{ns, orphaning(thing("a")), thing("b", "a")}, uid: "a",
			want: Decision{Cascade: &Cascade{Finalizer: api.FinalizerOrphan, Detach: []string{"b"}}},
		},
		{
			name: "deleting without cascade-deletion: left to its finalizers",
			nodes: []Node{ns, {Kind: "Thing", Namespace: "ns", Name: "a", UID: "a", Deleting: true,
				Finalizers: []string{"cairn.dev/other"}}},
			uid: "a",
		},
		{
			name: "unreported cycle member: report", nodes: []Node{ns, thing("a", "b"), thing("b", "a")}, uid: "a",
			want: Decision{Cycle: []string{"a", "b"}, Report: "Thing/a,Thing/b"},
		},
		{name: "reported cycle member: written once", nodes: []Node{ns, reported, thing("b", "a")}, uid: "a"},
		{name: "unknown uid", nodes: []Node{ns}, uid: "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(graphOf(tt.nodes...), tt.uid); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decide =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}

// orphaning marks a node deleting with the orphan finalizer and extra
// finalizers.
func orphaning(n Node, extra ...string) Node {
	n.Deleting = true
	n.Finalizers = append([]string{api.FinalizerOrphan}, extra...)
	return n
}

func TestPlanOrphan(t *testing.T) {
	const other = "cairn.dev/installation"
	tests := []struct {
		name  string
		nodes []Node
		uid   string
		want  Cascade
	}{
		{
			name:  "no dependents: finalizer goes",
			nodes: []Node{ns, orphaning(thing("a"))},
			uid:   "a", want: Cascade{RemoveFinalizer: true},
		},
		{
			name:  "sole owner: dependent released, not deleted",
			nodes: []Node{ns, orphaning(thing("a")), thing("b", "a")},
			uid:   "a", want: Cascade{Detach: []string{"b"}},
		},
		{
			name:  "deleting and controlled dependents are released too",
			nodes: []Node{ns, orphaning(thing("a"), other), del(thing("b", "a")), ctl(thing("c", "a"), "a")},
			uid:   "a", want: Cascade{Detach: []string{"b", "c"}},
		},
		{
			name:  "dependent with another owner keeps it",
			nodes: []Node{ns, orphaning(thing("a")), thing("c"), thing("b", "a", "c")},
			uid:   "a", want: Cascade{Detach: []string{"b"}},
		},
		{name: "unknown uid: nothing", nodes: []Node{ns}, uid: "x", want: Cascade{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanOrphan(graphOf(tt.nodes...), tt.uid)
			if tt.uid != "x" {
				tt.want.Finalizer = api.FinalizerOrphan
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("PlanOrphan =\n  %+v\nwant\n  %+v", got, tt.want)
			}
		})
	}
}
