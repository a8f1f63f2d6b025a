package gc

import (
	"slices"
	"strings"
)

// Cycles are found over the explicit owner references only: a Namespace
// owns its objects but is never owned by them, so it is on no cycle.

// colour is a node's state in a three-colour depth-first search.
type colour uint8

const (
	white colour = iota // not visited
	grey                // on the current path
	black               // finished: every path from it explored
)

// FindCycle runs a three-colour depth-first search from start along owner
// references (to known nodes accepted by within; nil accepts all) and
// returns the members of the first cycle it meets, in path order starting
// at the node the cycle closes on, or nil when none is reachable. Only an
// edge back to a grey node (one on the current path) closes a cycle; an
// edge to a black node is a second path to finished ground, so diamonds are
// not cycles. It does not recurse: chains of any depth are fine. It runs in
// O(nodes + edges) reachable from start.
func FindCycle(g *Graph, start string, within func(Node) bool) []string {
	if _, ok := g.nodes[start]; !ok {
		return nil
	}
	col := map[string]colour{}
	type frame struct {
		uid  string
		next int // index of the next owner reference to follow
	}
	stack := []frame{{uid: start}}
	col[start] = grey
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		n := g.nodes[top.uid]
		if top.next >= len(n.Owners) {
			col[top.uid] = black
			stack = stack[:len(stack)-1]
			continue
		}
		o := n.Owners[top.next].UID
		top.next++
		on, ok := g.nodes[o]
		if !ok || (within != nil && !within(*on)) {
			continue
		}
		switch col[o] {
		case grey:
			i := slices.IndexFunc(stack, func(f frame) bool { return f.uid == o })
			cycle := make([]string, 0, len(stack)-i)
			for _, f := range stack[i:] {
				cycle = append(cycle, f.uid)
			}
			return cycle
		case white:
			col[o] = grey
			stack = append(stack, frame{uid: o})
		}
	}
	return nil
}

// CycleMembers returns, sorted, every node on an ownership cycle through
// uid (its strongly connected component over owner references, restricted
// to nodes accepted by within; nil accepts all), or nil when uid is on no
// cycle. It first collects uid's ancestors (owners, their owners, ...),
// which are few in practice, then walks dependents only inside that set, so
// an owner of many dependents costs no more than its ancestry.
func CycleMembers(g *Graph, uid string, within func(Node) bool) []string {
	n, ok := g.nodes[uid]
	if !ok || (within != nil && !within(*n)) {
		return nil
	}
	accept := func(u string) bool {
		m, ok := g.nodes[u]
		return ok && (within == nil || within(*m))
	}
	// Ancestors: reachable from uid along owner references.
	anc := map[string]bool{}
	todo := []string{uid}
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, o := range g.nodes[cur].Owners {
			if !anc[o.UID] && accept(o.UID) {
				anc[o.UID] = true
				todo = append(todo, o.UID)
			}
		}
	}
	if !anc[uid] {
		return nil
	}
	// Descendants of uid among its ancestors: the component.
	in := map[string]bool{uid: true}
	todo = []string{uid}
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for d := range g.dependents[cur] {
			if anc[d] && !in[d] {
				in[d] = true
				todo = append(todo, d)
			}
		}
	}
	out := make([]string, 0, len(in))
	for u := range in {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// CycleReport formats the members of a cycle for the cycle annotation and
// logs: "Kind/name" of each member, sorted, comma-separated.
func CycleReport(g *Graph, members []string) string {
	names := make([]string, 0, len(members))
	for _, uid := range members {
		if n, ok := g.nodes[uid]; ok {
			names = append(names, n.Kind+"/"+n.Name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}
