package gc

import (
	"cairn.dev/cairn/api"
)

// nd builds a node "kind/name" with uid name in namespace "ns" (kind
// Namespace: cluster-scoped), owned by the given owner uids.
func nd(kind, name string, owners ...string) Node {
	n := Node{Kind: kind, Name: name, UID: name}
	if kind != NamespaceKind {
		n.Namespace = "ns"
	}
	for _, o := range owners {
		n.Owners = append(n.Owners, api.OwnerReference{Kind: "Thing", Name: o, UID: o})
	}
	return n
}

// thing is a live object of kind Thing in namespace ns.
func thing(name string, owners ...string) Node { return nd("Thing", name, owners...) }

// del marks a node deleting with cascade-deletion and extra finalizers.
func del(n Node, extra ...string) Node {
	n.Deleting = true
	n.Finalizers = append([]string{api.FinalizerCascadeDeletion}, extra...)
	return n
}

// ctl makes n's reference to owner a controller reference.
func ctl(n Node, owner string) Node {
	for i := range n.Owners {
		if n.Owners[i].UID == owner {
			n.Owners[i].Controller = true
		}
	}
	return n
}

func graphOf(nodes ...Node) *Graph {
	g := NewGraph()
	for _, n := range nodes {
		g.Put(n)
	}
	return g
}
