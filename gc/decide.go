package gc

import (
	"slices"

	"cairn.dev/cairn/api"
)

// AnnotationCycle is written once on every object found on an ownership
// cycle. Its value lists the members of the cycle ("Kind/name", sorted,
// comma-separated).
const AnnotationCycle = "cairn.dev/gc-cycle"

// Decision is what the collector should do about one object, decided from
// the graph alone. The zero Decision means nothing to do.
type Decision struct {
	// Orphan: the object is live and every owner it had is gone; delete it
	// once Confirm holds.
	Orphan bool
	// Confirm lists the owners the graph believes gone. The graph may lag
	// behind the store (an owner's ADDED event travels on another watch than
	// its dependent's), so the collector reads each before deleting the
	// orphan, and drops the deletion when one exists with that uid (or, for
	// a reference with no uid, by that name).
	Confirm []api.OwnerReference
	// Cascade is set for a deleting object that holds cascade-deletion
	// (PlanCascade) or the orphan finalizer (PlanOrphan).
	Cascade *Cascade
	// Cycle lists the members of the ownership cycle through the object
	// when it has not yet been reported on it; Report is the annotation
	// value to write.
	Cycle  []string
	Report string
}

// Cascade is the work of a deleting object's cascade-deletion (or orphan)
// finalizer: what to do with each of its dependents, and whether it may go.
type Cascade struct {
	// Finalizer is the collector's finalizer this work is for, the one
	// RemoveFinalizer removes: cascade-deletion or orphan.
	Finalizer string
	// Delete lists dependents to delete: none of their owners is live.
	Delete []Victim
	// Detach lists dependents that keep another live owner: only their
	// references to the deleting object are removed.
	Detach []string
	// Skip lists dependents whose controller reference points at an owner
	// that still holds a finalizer of its own: that controller deletes them,
	// in its own order. They still hold the finalizer back.
	Skip []string
	// Wait lists dependents already deleting; their disappearance re-queues
	// the object.
	Wait []string
	// InCycle lists deleting dependents that lie on an ownership cycle with
	// the object whose every member is deleting. They are not waited for
	// (see RemoveFinalizer).
	InCycle []string
	// RemoveFinalizer: no dependent is left but cycle members, so
	// Finalizer can be removed.
	//
	// The cycle rule: members of a cycle each wait for the others to
	// disappear, so a plain cascade never ends. Once every member of the
	// cycle is deleting (the cascade itself gets them there: each member's
	// owner on the cycle deletes it) nothing outside the cycle is served by
	// the wait any more, so a member whose only remaining dependents are
	// deleting members of such a cycle drops cascade-deletion. Members with
	// other dependents still wait for those, so ownership order holds for
	// everything off the cycle; on the cycle itself there is no order to
	// keep.
	RemoveFinalizer bool
}

// Victim is a dependent to delete.
type Victim struct {
	UID string
	// Leaf: it holds no finalizer and has no dependents, so nothing would
	// wait for its deletion; the collector may remove it in one step.
	Leaf bool
	// Confirm lists its other owners the graph believes gone; the collector
	// confirms them as for Decision.Confirm and, if one is in fact live,
	// detaches instead (after re-queueing, once the graph has caught up).
	Confirm []api.OwnerReference
}

// ownerState classifies an owner reference against the graph.
type ownerState uint8

const (
	ownerGone ownerState = iota // no object with that uid: deleted or replaced
	ownerDeleting
	ownerLive
)

func stateOf(g *Graph, uid string) ownerState {
	n, ok := g.nodes[uid]
	switch {
	case !ok:
		return ownerGone
	case n.Deleting:
		return ownerDeleting
	default:
		return ownerLive
	}
}

func deleting(n Node) bool { return n.Deleting }

// Decide returns what to do about the object with uid: for a deleting
// object holding cascade-deletion, its cascade; for a live one, whether it
// is an orphan; for any object on an ownership cycle not reported yet, the
// cycle to report. An unknown uid gets the zero Decision.
func Decide(g *Graph, uid string) Decision {
	n, ok := g.nodes[uid]
	if !ok {
		return Decision{}
	}
	var d Decision
	if n.CycleReport == "" {
		if members := CycleMembers(g, uid, nil); members != nil {
			d.Cycle, d.Report = members, CycleReport(g, members)
		}
	}
	switch {
	case n.Deleting && n.HasFinalizer(api.FinalizerCascadeDeletion):
		c := PlanCascade(g, uid)
		d.Cascade = &c
	case n.Deleting && n.HasFinalizer(api.FinalizerOrphan):
		c := PlanOrphan(g, uid)
		d.Cascade = &c
	case !n.Deleting:
		d.Orphan, d.Confirm = Orphaned(g, uid)
	}
	return d
}

// Orphaned reports whether the live object with uid lost every owner: it
// has owner references and none names a known object (a uid that does not
// match the object now holding that name counts as gone), or it lives in a
// namespace that is gone. It also returns the owners to confirm gone (a
// Namespace reference has no uid: confirm by name). Deleting objects,
// objects without owners and objects with any deleting or live owner are
// not orphans: a deleting owner's cascade takes care of them.
//
// A namespace that is gone is treated like a deleting one (see
// PlanCascade): its objects are orphans, except those whose controller
// owner still exists and holds a finalizer of its own; that owner, an
// orphan itself, goes first and its controller deletes them in order.
func Orphaned(g *Graph, uid string) (bool, []api.OwnerReference) {
	n, ok := g.nodes[uid]
	if !ok || n.Deleting {
		return false, nil
	}
	if n.Namespace != "" {
		if _, ok := g.NamespaceOf(*n); !ok {
			if controlledElsewhere(g, n) {
				return false, nil
			}
			return true, []api.OwnerReference{{Kind: NamespaceKind, Name: n.Namespace}}
		}
	}
	if len(n.Owners) == 0 {
		return false, nil
	}
	for _, o := range n.Owners {
		if stateOf(g, o.UID) != ownerGone {
			return false, nil
		}
	}
	return true, slices.Clone(n.Owners)
}

// PlanCascade decides the cascade of the deleting object with uid (which
// should hold cascade-deletion), dependent by dependent:
//
//   - a deleting dependent is waited for, unless it is on an all-deleting
//     cycle with the object (see Cascade.RemoveFinalizer);
//   - a live dependent whose reference to the object says controller while
//     the object holds another finalizer is skipped;
//   - a live dependent with another live owner is detached;
//   - any other live dependent is deleted.
//
// The graph may lag behind the store for a moment, each kind arriving on
// its own watch: a dependent not seen yet when its owner is finalized is
// collected as an orphan right after (the same end, in another order).
// For a Namespace the collector confirms emptiness with the API before
// removing the finalizer, since a namespace recreated under the same name
// would otherwise adopt what was left.
//
// For a Namespace every live object in it goes: it is deleted unless its
// controller owner still exists, holds a finalizer of its own and is not on
// a cycle with it (then that owner, itself in the namespace and deleted by
// this cascade, deletes it in its controller's order).
func PlanCascade(g *Graph, uid string) Cascade {
	x, ok := g.nodes[uid]
	if !ok {
		return Cascade{}
	}
	isNamespace := x.Kind == NamespaceKind && x.Namespace == ""
	c := Cascade{Finalizer: api.FinalizerCascadeDeletion}
	var cycle []string // all-deleting cycle through x, computed on demand
	cycleDone := false
	for _, du := range g.Dependents(uid) {
		d := g.nodes[du]
		if d.Deleting {
			if !cycleDone {
				cycle, cycleDone = CycleMembers(g, uid, deleting), true
			}
			if slices.Contains(cycle, du) {
				c.InCycle = append(c.InCycle, du)
			} else {
				c.Wait = append(c.Wait, du)
			}
			continue
		}
		if isNamespace && d.Namespace == x.Name {
			if controlledElsewhere(g, d) {
				c.Skip = append(c.Skip, du)
			} else {
				c.Delete = append(c.Delete, Victim{UID: du, Leaf: IsLeaf(g, du)})
			}
			continue
		}
		controller, live := false, false
		var gone []api.OwnerReference
		for _, o := range d.Owners {
			if o.UID == uid {
				controller = controller || o.Controller
				continue
			}
			switch stateOf(g, o.UID) {
			case ownerLive:
				live = true
			case ownerGone:
				gone = append(gone, o)
			}
		}
		switch {
		case controller && x.HasOtherFinalizer():
			c.Skip = append(c.Skip, du)
		case live:
			c.Detach = append(c.Detach, du)
		default:
			c.Delete = append(c.Delete, Victim{UID: du, Confirm: gone, Leaf: IsLeaf(g, du)})
		}
	}
	c.RemoveFinalizer = len(c.Delete)+len(c.Detach)+len(c.Skip)+len(c.Wait) == 0
	return c
}

// PlanOrphan decides the work of the deleting object with uid deleted
// with the Orphan propagation policy (it holds the orphan finalizer):
// every dependent, live or deleting, is detached, keeping its other owners;
// once none refers to the object any more, the finalizer can go. A
// dependent left with no owner at all is not an orphan (Orphaned): it
// stays.
func PlanOrphan(g *Graph, uid string) Cascade {
	if _, ok := g.nodes[uid]; !ok {
		return Cascade{}
	}
	c := Cascade{Finalizer: api.FinalizerOrphan, Detach: slices.Clone(g.Dependents(uid))}
	c.RemoveFinalizer = len(c.Detach) == 0
	return c
}

// IsLeaf reports whether the object with uid holds no finalizer and owns
// nothing the graph knows of (for a Namespace: nothing is in it).
func IsLeaf(g *Graph, uid string) bool {
	n, ok := g.nodes[uid]
	if !ok || len(n.Finalizers) > 0 || len(g.dependents[uid]) > 0 {
		return false
	}
	if n.Kind == NamespaceKind && n.Namespace == "" && len(g.members[n.Name]) > 0 {
		return false
	}
	return true
}

// controlledElsewhere reports whether d's controller owner exists, holds a
// finalizer besides cascade-deletion and is not on an ownership cycle with d.
func controlledElsewhere(g *Graph, d *Node) bool {
	for _, o := range d.Owners {
		if !o.Controller {
			continue
		}
		owner, ok := g.nodes[o.UID]
		if !ok || !owner.HasOtherFinalizer() {
			return false
		}
		return !slices.Contains(CycleMembers(g, d.UID, nil), o.UID)
	}
	return false
}
