package gc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/trace"
)

// maxExplained bounds how many dependents one trace names in each group;
// the rest are counted.
const maxExplained = 10

// holdNote says, for a deleting object that is waited for, what holds it:
// its finalizers, and for a dependent that keeps a live owner, that owner.
type holdNote struct {
	node   Node
	owners []string // live owners besides the deleting one, "Kind name"
}

// group is one kind of remaining dependent: how many, and the notes of the
// first maxExplained of them.
type group struct {
	n     int
	notes []holdNote
}

// explanation is what a reconcile records in its trace, gathered from the
// graph under the collector's lock: counts of every group, notes of a
// bounded number, so a cascade of thousands costs no more than of ten.
type explanation struct {
	waits  group // deleting dependents still present
	skips  group // dependents left to their controller
	detach group // dependents that keep another live owner
	cycle  int   // deleting dependents on an all-deleting cycle with it
	total  int   // dependents of a deleting object
}

// explain gathers the trace notes of a cascade. The caller holds c.mu.
func (c *Collector) explain(uid string, cs *Cascade) explanation {
	var e explanation
	note := func(du string) holdNote {
		n, _ := c.graph.Node(du)
		h := holdNote{node: n}
		for _, o := range n.Owners {
			if o.UID == uid {
				continue
			}
			if on, ok := c.graph.Node(o.UID); ok && !on.Deleting {
				h.owners = append(h.owners, on.Kind+" "+on.Name)
			}
		}
		return h
	}
	collect := func(uids []string) group {
		g := group{n: len(uids)}
		for _, du := range uids[:min(len(uids), maxExplained)] {
			g.notes = append(g.notes, note(du))
		}
		return g
	}
	e.waits, e.skips, e.detach = collect(cs.Wait), collect(cs.Skip), collect(cs.Detach)
	e.cycle = len(cs.InCycle)
	e.total = len(cs.Delete) + len(cs.Detach) + len(cs.Skip) + len(cs.Wait) + len(cs.InCycle)
	return e
}

// traceCascade records the cascade of a deleting object: what is left and
// what holds each remaining dependent.
func traceCascade(ctx context.Context, self Node, w work) {
	e := w.explain
	what := "dependents"
	switch {
	case self.Kind == NamespaceKind && self.Namespace == "" && e.total == 1:
		what = "object in the namespace"
	case self.Kind == NamespaceKind && self.Namespace == "":
		what = "objects in the namespace"
	case e.total == 1:
		what = "dependent"
	}
	if e.total == 0 {
		trace.Check(ctx, "deleting, and no %s are left", what)
		return
	}
	requested := e.total - len(w.victims) - e.waits.n - e.skips.n - e.detach.n - e.cycle
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{len(w.victims), "to delete"}, {requested, "deletion requested"}, {e.waits.n, "already deleting"},
		{e.skips.n, "left to their controller"}, {e.detach.n, "to detach"}, {e.cycle, "on a deleting ownership cycle"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	trace.Check(ctx, "deleting: %d %s left (%s)", e.total, what, strings.Join(parts, ", "))
	for i, v := range w.victims {
		if i == maxExplained {
			trace.Action(ctx, "… and %d more deleted", len(w.victims)-maxExplained)
			break
		}
		trace.Action(ctx, "delete %s", v.Node)
	}
	for _, h := range e.detach.notes {
		trace.Action(ctx, "detach %s: it keeps its live owner %s", h.node, strings.Join(h.owners, ", "))
	}
	if more := e.detach.n - len(e.detach.notes); more > 0 {
		trace.Action(ctx, "… and %d more detached", more)
	}
	for _, h := range e.skips.notes {
		ref := h.node.controllerRef()
		trace.Exit(ctx, "waits for %s: its controller owner %s %s deletes it in its own order", h.node, ref.Kind, ref.Name)
	}
	if more := e.skips.n - len(e.skips.notes); more > 0 {
		trace.Exit(ctx, "… and %d more left to their controllers", more)
	}
	for _, h := range e.waits.notes {
		trace.Exit(ctx, "waits for %s: it is deleting; %s", h.node, holds(h.node))
	}
	if more := e.waits.n - len(e.waits.notes); more > 0 {
		trace.Exit(ctx, "… and %d more already deleting", more)
	}
}

// holds says what keeps a deleting object from going away.
func holds(n Node) string {
	var others []string
	for _, f := range n.Finalizers {
		if !collectorFinalizer(f) {
			others = append(others, f)
		}
	}
	switch {
	case len(others) > 0 && n.HasFinalizer(api.FinalizerOrphan):
		return fmt.Sprintf("its dependents are released first, and finalizer %s (not the collector's) holds it until the controller that set it removes it",
			strings.Join(others, ", "))
	case n.HasFinalizer(api.FinalizerOrphan):
		return "its dependents are released first"
	case len(others) > 0 && n.HasFinalizer(api.FinalizerCascadeDeletion):
		return fmt.Sprintf("its own dependents go first, and finalizer %s (not the collector's) holds it until the controller that set it removes it",
			strings.Join(others, ", "))
	case len(others) > 0:
		return fmt.Sprintf("finalizer %s holds it until the controller that set it removes it", strings.Join(others, ", "))
	default:
		return "its own dependents go first"
	}
}

// controllerRef returns the node's controller owner reference (zero when
// it has none).
func (n Node) controllerRef() api.OwnerReference {
	if i := slices.IndexFunc(n.Owners, func(o api.OwnerReference) bool { return o.Controller }); i >= 0 {
		return n.Owners[i]
	}
	return api.OwnerReference{}
}
