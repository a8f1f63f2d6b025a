package gc

import (
	"cmp"
	"errors"
	"slices"

	"cairn.dev/cairn/api"
)

// ErrGraphNotSynced is returned by Collector.Dependents before the
// dependency graph holds every kind's first list.
var ErrGraphNotSynced = errors.New("gc: the dependency graph is still being built")

// PlanDeletion returns what deleting the object with uid would take, from
// the graph alone (nothing is read or written): the object, then every
// dependent whose explicit owners would all be gone or deleting, and so on
// down (for a Namespace: every object in it, and what they own). A
// protected object is reported as a blocker and not walked below: the
// deletion stops there. A dependent that keeps a live owner outside the
// deletion is reported as detached. It returns false for an unknown uid.
//
// A dependent of several owners that all go is taken once, listed under
// the owner whose walk took it; in a Namespace's tree objects are listed
// under their owners.
func PlanDeletion(g *Graph, uid string) (api.Dependents, bool) {
	root, ok := g.nodes[uid]
	if !ok {
		return api.Dependents{}, false
	}
	taken := map[string]string{uid: ""} // uid → the owner it is listed under
	order := []string{uid}
	isNamespace := root.Kind == NamespaceKind && root.Namespace == ""
	// walk takes, breadth first from order[from:], every dependent that
	// goes with what is taken. A dependent met before another of its
	// owners is taken is met again from that owner.
	walk := func(from int) {
		for i := from; i < len(order); i++ {
			x := g.nodes[order[i]]
			if x.Protected {
				continue // the cascade stops at a protected object
			}
			for _, du := range g.Dependents(x.UID) {
				d := g.nodes[du]
				if _, done := taken[du]; done || (isNamespace && x == root && ownedInGraph(g, d)) || !goesWith(g, root, d, taken) {
					continue
				}
				taken[du], order = x.UID, append(order, du)
			}
		}
	}
	walk(0)
	if isNamespace {
		// What is in the namespace goes, reached through its owners or
		// not (an owner protected, a cycle).
		from := len(order)
		for _, du := range g.Dependents(uid) {
			if _, done := taken[du]; !done {
				taken[du], order = uid, append(order, du)
			}
		}
		walk(from)
	}
	d := api.Dependents{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindDependents}, Counts: map[string]int{}}
	children := map[string][]string{}
	detached := map[string]bool{}
	for _, u := range order {
		n := g.nodes[u]
		if p := taken[u]; u != uid {
			children[p] = append(children[p], u)
		}
		if n.Protected {
			d.Blockers = append(d.Blockers, refOf(n))
			continue
		}
		d.Counts[n.Kind]++
		d.Total++
		for _, du := range g.Dependents(u) {
			if _, ok := taken[du]; !ok && !detached[du] {
				detached[du] = true
				d.Detached = append(d.Detached, refOf(g.nodes[du]))
			}
		}
	}
	sortRefs(d.Blockers)
	sortRefs(d.Detached)
	d.Root = subtree(g, uid, children)
	return d, true
}

// goesWith reports whether dependent d goes when the objects in taken do:
// it lives in the namespace being deleted, or none of its explicit owners
// stays live outside taken.
func goesWith(g *Graph, root *Node, d *Node, taken map[string]string) bool {
	if root.Kind == NamespaceKind && root.Namespace == "" && d.Namespace == root.Name {
		return true
	}
	for _, o := range d.Owners {
		if _, ok := taken[o.UID]; !ok && stateOf(g, o.UID) == ownerLive {
			return false
		}
	}
	return true
}

// ownedInGraph reports whether one of d's explicit owners is in the graph.
func ownedInGraph(g *Graph, d *Node) bool {
	return slices.ContainsFunc(d.Owners, func(o api.OwnerReference) bool { _, ok := g.nodes[o.UID]; return ok })
}

// subtree builds the tree node of uid from the children lists, its
// dependents ordered by kind and name.
func subtree(g *Graph, uid string, children map[string][]string) api.DependentNode {
	n := g.nodes[uid]
	out := api.DependentNode{ObjectReference: refOf(n), UID: n.UID, Protected: n.Protected, Deleting: n.Deleting}
	for _, c := range children[uid] {
		out.Dependents = append(out.Dependents, subtree(g, c, children))
	}
	slices.SortFunc(out.Dependents, func(a, b api.DependentNode) int { return compareRefs(a.ObjectReference, b.ObjectReference) })
	return out
}

func refOf(n *Node) api.ObjectReference {
	return api.ObjectReference{Kind: n.Kind, Namespace: n.Namespace, Name: n.Name}
}

func sortRefs(refs []api.ObjectReference) { slices.SortFunc(refs, compareRefs) }

func compareRefs(a, b api.ObjectReference) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// Dependents returns what deleting the object kind ns/name would take
// (PlanDeletion), from the collector's graph as it is now. It does not
// block beyond the graph's lock. Errors: ErrGraphNotSynced before the
// graph holds every kind's first list; api.ErrNotFound (a NotFound
// Status) for an object the graph does not hold.
func (c *Collector) Dependents(kind, ns, name string) (*api.Dependents, error) {
	if !c.HasSynced() {
		return nil, ErrGraphNotSynced
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	uid, ok := c.graph.Lookup(kind, ns, name)
	if !ok {
		return nil, api.NewNotFound(kind, name)
	}
	d, ok := PlanDeletion(c.graph, uid)
	if !ok {
		return nil, api.NewNotFound(kind, name)
	}
	return &d, nil
}
