// Package gc is cairn's garbage collector. It keeps an in-memory dependency
// graph of every object (owner uid → dependent uids), built by list + watch
// and kept current by watch events, and drives deletions through it:
// a deleting object holding the cascade-deletion finalizer has its
// dependents deleted (or detached, when they keep another live owner) before
// the finalizer is removed; a live object whose owners are all gone is
// collected; ownership cycles are detected, reported and still deleted.
//
// The decisions are plain functions over the graph (decide.go, cycle.go);
// the Collector (collector.go) only reads, calls them and writes through
// the API.
package gc

import (
	"slices"

	"cairn.dev/cairn/api"
)

// NamespaceKind is the kind whose objects implicitly own every object in
// the namespace of the same name.
const NamespaceKind = "Namespace"

// Node is what the graph knows about one object. Nodes handed out by the
// graph share their slices with it: treat them as read-only.
type Node struct {
	Kind      string
	Namespace string
	Name      string
	UID       string
	// ResourceVersion is the version the node was built from.
	ResourceVersion string
	// Deleting is true once DELETE has marked the object.
	Deleting bool
	// Finalizers are the object's finalizers, cascade-deletion included.
	Finalizers []string
	// Owners are the object's explicit owner references. The implicit
	// ownership by the object's Namespace is not among them.
	Owners []api.OwnerReference
	// CycleReport is the value of the cycle annotation on the object, ""
	// when it has none.
	CycleReport string
	// Protected: the object carries api.AnnotationDeletionProtection
	// "true" (only previews read it: the API refuses the deletions).
	Protected bool
}

// NodeOf builds the node of an object.
func NodeOf(o *api.Object) Node {
	return Node{
		Kind: o.Kind, Namespace: o.Namespace, Name: o.Name, UID: o.UID,
		ResourceVersion: o.ResourceVersion,
		Deleting:        o.Deleting(),
		Finalizers:      slices.Clone(o.Finalizers),
		Owners:          slices.Clone(o.OwnerReferences),
		CycleReport:     o.Annotations[AnnotationCycle],
		Protected:       api.Protected(&o.ObjectMeta),
	}
}

// HasFinalizer reports whether f is among the node's finalizers.
func (n Node) HasFinalizer(f string) bool { return slices.Contains(n.Finalizers, f) }

// HasOtherFinalizer reports whether the node holds a finalizer besides
// the collector's (cascade-deletion, orphan): a controller's own.
func (n Node) HasOtherFinalizer() bool {
	return slices.ContainsFunc(n.Finalizers, func(f string) bool { return !collectorFinalizer(f) })
}

// collectorFinalizer reports whether f is one of the finalizers the
// collector removes (set by DELETE's propagation policy).
func collectorFinalizer(f string) bool {
	return f == api.FinalizerCascadeDeletion || f == api.FinalizerOrphan
}

// String names the node as "Kind ns/name" for logs and reports.
func (n Node) String() string { return n.Kind + " " + api.Key(n.Namespace, n.Name) }

// ref names an object by kind, namespace and name.
type ref struct{ kind, namespace, name string }

// Graph is the dependency graph: nodes by uid and the edges from each owner
// uid to its dependents' uids. Every namespaced object is also a dependent
// of its Namespace; that edge is kept by namespace name, so an object may
// arrive before its Namespace (and outlive it). Edges to an owner uid
// exist whether or not the owner's node is known yet.
//
// A Graph is not safe for concurrent use; every operation is O(number of
// owner references of the node touched), except Dependents, which is
// O(number of dependents). The graph never reads the store.
type Graph struct {
	nodes      map[string]*Node
	names      map[ref]string                 // live name → uid
	dependents map[string]map[string]struct{} // owner uid → dependent uids
	members    map[string]map[string]struct{} // namespace name → uids in it
}

// NewGraph returns an empty graph.
func NewGraph() *Graph {
	return &Graph{
		nodes:      map[string]*Node{},
		names:      map[ref]string{},
		dependents: map[string]map[string]struct{}{},
		members:    map[string]map[string]struct{}{},
	}
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.nodes) }

// Put adds a node or replaces the node with the same uid (an ADDED or
// MODIFIED event). Edges follow the new owner references: references added
// since the previous version gain an edge, dropped ones lose it. It returns
// the previous version, if any. A node without uid is ignored.
func (g *Graph) Put(n Node) (prev Node, existed bool) {
	if n.UID == "" {
		return Node{}, false
	}
	n.Finalizers = slices.Clone(n.Finalizers)
	n.Owners = slices.Clone(n.Owners)
	if old, ok := g.nodes[n.UID]; ok {
		prev, existed = *old, true
		g.unlink(old)
	}
	g.nodes[n.UID] = &n
	g.link(&n)
	return prev, existed
}

// Remove drops the node with uid and its edges to its owners (a DELETED
// event). Edges from it to its dependents stay, keyed by its uid, so the
// dependents can be found as orphans. It returns the removed node.
func (g *Graph) Remove(uid string) (Node, bool) {
	n, ok := g.nodes[uid]
	if !ok {
		return Node{}, false
	}
	g.unlink(n)
	delete(g.nodes, uid)
	return *n, true
}

func (g *Graph) link(n *Node) {
	g.names[ref{n.Kind, n.Namespace, n.Name}] = n.UID
	for _, o := range n.Owners {
		addEdge(g.dependents, o.UID, n.UID)
	}
	if n.Namespace != "" {
		addEdge(g.members, n.Namespace, n.UID)
	}
}

func (g *Graph) unlink(n *Node) {
	k := ref{n.Kind, n.Namespace, n.Name}
	if g.names[k] == n.UID {
		delete(g.names, k)
	}
	for _, o := range n.Owners {
		removeEdge(g.dependents, o.UID, n.UID)
	}
	if n.Namespace != "" {
		removeEdge(g.members, n.Namespace, n.UID)
	}
}

func addEdge(m map[string]map[string]struct{}, from, to string) {
	s, ok := m[from]
	if !ok {
		s = map[string]struct{}{}
		m[from] = s
	}
	s[to] = struct{}{}
}

func removeEdge(m map[string]map[string]struct{}, from, to string) {
	if s, ok := m[from]; ok {
		delete(s, to)
		if len(s) == 0 {
			delete(m, from)
		}
	}
}

// Node returns the node with uid.
func (g *Graph) Node(uid string) (Node, bool) {
	n, ok := g.nodes[uid]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Lookup returns the uid of the object known by kind, namespace and name.
func (g *Graph) Lookup(kind, namespace, name string) (string, bool) {
	uid, ok := g.names[ref{kind, namespace, name}]
	return uid, ok
}

// NamespaceOf returns the node of the Namespace an object lives in, if
// known. Cluster-scoped objects have none.
func (g *Graph) NamespaceOf(n Node) (Node, bool) {
	if n.Namespace == "" {
		return Node{}, false
	}
	uid, ok := g.names[ref{NamespaceKind, "", n.Namespace}]
	if !ok {
		return Node{}, false
	}
	return g.Node(uid)
}

// Dependents returns the uids of the known objects that uid owns, sorted:
// those referencing it in their owner references and, when uid is a
// Namespace, every object in that namespace.
func (g *Graph) Dependents(uid string) []string {
	var out []string
	for d := range g.dependents[uid] {
		if _, ok := g.nodes[d]; ok {
			out = append(out, d)
		}
	}
	if n, ok := g.nodes[uid]; ok && n.Kind == NamespaceKind && n.Namespace == "" {
		for d := range g.members[n.Name] {
			if _, ok := g.dependents[uid][d]; !ok {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Owners returns the uids of the known owners of uid, sorted: the objects
// its owner references name (by uid) and its Namespace. References to
// unknown uids are left out.
func (g *Graph) Owners(uid string) []string {
	n, ok := g.nodes[uid]
	if !ok {
		return nil
	}
	var out []string
	for _, o := range n.Owners {
		if _, ok := g.nodes[o.UID]; ok && !slices.Contains(out, o.UID) {
			out = append(out, o.UID)
		}
	}
	if ns, ok := g.NamespaceOf(*n); ok && !slices.Contains(out, ns.UID) {
		out = append(out, ns.UID)
	}
	slices.Sort(out)
	return out
}

// Deleting returns the uids of every deleting node, sorted: the work left
// after a restart.
func (g *Graph) Deleting() []string {
	var out []string
	for uid, n := range g.nodes {
		if n.Deleting {
			out = append(out, uid)
		}
	}
	slices.Sort(out)
	return out
}
