package gc

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Options configures a Collector. The zero value is usable.
type Options struct {
	// Workers is the number of objects handled concurrently; default 8
	// (the work is mostly waiting for writes to commit).
	Workers int
	// ConfirmRetry is how long an object waits before it is handled again
	// when the graph believed an owner gone that the API still has (the
	// graph lags behind); default 1s. It is also the first delay before a
	// deletion the API refused (Forbidden) is tried again; the delay
	// doubles with each refusal of the same object, up to 5 minutes.
	ConfirmRetry time.Duration
}

// parallelDeletes bounds the deletions one cascade issues at once.
const parallelDeletes = 16

// Collector is the garbage collector: one controller whose keys are object
// uids, fed by an informer per kind that keeps the dependency graph
// current. It acts only through the client: Delete (with a uid
// precondition) for dependents and orphans, Update (with the
// resourceVersion compare-and-swap, re-read and retried on Conflict by
// conflict.Modify) to drop an owner reference, remove cascade-deletion or
// report a cycle.
//
// A write that fails in a way a retry can fix (a Conflict on an object
// that is still there, a transport error) fails the reconcile, which the
// controller retries with backoff; a deletion the API refuses (Forbidden)
// is logged once and retried with a growing delay. Nothing is dropped
// silently but a victim that is gone or was replaced.
//
// The collector splits in two (see Watch and Lead): keeping the graph
// current is its warm part, which every process runs, leading or not;
// acting on it is its term part, run while the process leads. A new
// leader's collector acts on a graph that is current already.
type Collector struct {
	c    client.Interface
	opts Options
	log  *slog.Logger
	m    *metrics
	// w is the client of the reconciles: c, or the term's client, set by
	// Lead before its workers start and read only by them.
	w client.Interface

	mu    sync.Mutex
	graph *Graph
	// requested holds uids whose deletion this collector issued and whose
	// deleting state the graph has not seen yet, so that an owner handled
	// again meanwhile does not delete them twice.
	requested map[string]struct{}
	// refused counts, by uid, the deletions the API refused (Forbidden),
	// until the object is deleted or leaves the graph; see refuse.
	refused map[string]int
	// factory holds the shared informers, for cached reads.
	factory *informer.Factory
	// namespaced lists the namespaced kinds, set before the graph is synced.
	namespaced []string

	// qmu guards ctrl, the controller of the current term (nil between
	// terms), and pending, the keys the handlers found while no term ran.
	qmu     sync.Mutex
	ctrl    *controller.Controller
	pending map[string]struct{}

	started  atomic.Bool
	synced   atomic.Bool
	syncedCh chan struct{} // closed once synced
}

// newCollector builds a collector that reads through c and the informers
// of f, logs to log and registers its own metrics (cairn_gc_graph_nodes,
// cairn_gc_actions_total{action}) on reg. It does nothing until Watch.
func newCollector(c client.Interface, opts Options, f *informer.Factory, log *slog.Logger, reg prometheus.Registerer) *Collector {
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.ConfirmRetry <= 0 {
		opts.ConfirmRetry = time.Second
	}
	log = log.With("controller", "gc")
	return &Collector{
		c: c, opts: opts, log: log, m: newMetrics(reg, log),
		graph: NewGraph(), requested: map[string]struct{}{}, refused: map[string]int{},
		factory: f, w: c, pending: map[string]struct{}{}, syncedCh: make(chan struct{}),
	}
}

// Watch keeps the dependency graph current until ctx is done, acting on
// nothing: the collector's warm part, which a process runs whether or not
// it leads, so that its term part acts at once when it is elected. It
// discovers the kinds (retrying while the API does not answer), registers
// the graph's handlers on every kind's informer and marks the graph
// synced once every list is in. It blocks; it returns nil when ctx is
// done. A Collector watches once: a second call returns an error at once.
func (c *Collector) Watch(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return fmt.Errorf("gc: Watch called twice")
	}
	wait := 100 * time.Millisecond
	var kinds []api.KindInfo
	for {
		var err error
		if kinds, err = c.c.Kinds(ctx); err == nil {
			break
		}
		c.log.Warn("cannot discover the kinds; retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
			wait = min(2*wait, 10*time.Second)
		}
	}
	c.awaitSync(ctx, c.register(kinds))
	<-ctx.Done()
	return nil
}

// register notes the namespaced kinds and registers the graph's handlers
// on the informer of every kind; it returns the informers.
func (c *Collector) register(kinds []api.KindInfo) []*informer.Informer {
	for _, k := range kinds {
		if k.Namespaced {
			c.namespaced = append(c.namespaced, k.Kind)
		}
	}
	infs := make([]*informer.Informer, 0, len(kinds))
	for _, k := range kinds {
		inf := c.factory.For(k.Kind)
		inf.AddEventHandler(informer.Handler{
			OnAdd:    c.observe,
			OnUpdate: func(_, obj *api.Object) { c.observe(obj) },
			OnDelete: c.forget,
		})
		infs = append(infs, inf)
	}
	return infs
}

// awaitSync marks the graph synced once every one of infs has delivered
// its first list, or returns when ctx ends first.
func (c *Collector) awaitSync(ctx context.Context, infs []*informer.Informer) {
	for _, inf := range infs {
		if !inf.WaitForSync(ctx) {
			return
		}
	}
	c.synced.Store(true)
	close(c.syncedCh)
	c.log.Info("dependency graph built", "kinds", len(infs), "objects", c.graphLen())
}

// lead adds to term t the collector's acting part: the controller "gc",
// keyed by uid, whose workers handle deleting and orphaned objects through
// t's client while Watch keeps the graph current; terms must not overlap.
// Its workers wait for the graph to be synced (no decision is taken on
// half a graph), then start on the work left over: what the graph's
// handlers found while no term ran, and every deleting or orphaned object
// of the graph (a cascade a previous leader did not finish), which a
// sweep enqueues beside them. It never blocks.
func (c *Collector) lead(t *manager.Term) error {
	return manager.NewBuilder(t, "gc").
		Workers(c.opts.Workers).
		WaitFor(c.waitSynced).
		Starting(func(ctx context.Context, ctrl *controller.Controller) error {
			c.take(ctx, t.Client, ctrl)
			return nil
		}).
		Also(func(_ context.Context, ctrl *controller.Controller) { c.sweep(ctrl) }).
		Complete(controller.ReconcilerFunc(c.reconcile))
}

// waitSynced blocks until the graph is synced (true) or ctx is done.
func (c *Collector) waitSynced(ctx context.Context) bool {
	select {
	case <-c.syncedCh:
		return true
	case <-ctx.Done():
		return false
	}
}

// take makes ctrl, acting through cl, the controller of the term that
// ctx spans, and hands it the keys found while no term ran; once ctx is
// done, keys found go to the next term's pending set.
func (c *Collector) take(ctx context.Context, cl client.Interface, ctrl *controller.Controller) {
	c.w = cl
	c.qmu.Lock()
	c.ctrl = ctrl
	pending := c.pending
	c.pending = map[string]struct{}{}
	c.qmu.Unlock()
	context.AfterFunc(ctx, func() {
		c.qmu.Lock()
		if c.ctrl == ctrl {
			c.ctrl = nil
		}
		c.qmu.Unlock()
	})
	for k := range pending {
		ctrl.Enqueue(k)
	}
}

// HasSynced reports whether the graph holds every kind's first list (a
// leading collector acts on it). It never blocks.
func (c *Collector) HasSynced() bool { return c.synced.Load() }

func (c *Collector) graphLen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.graph.Len()
}

// sweep enqueues into ctrl every deleting or orphaned object: the work left over by a
// previous collector, and anything the handlers could not judge before
// every list was in.
//
// It holds the lock for a chunk of objects at a time, so that reconciles
// and handlers are not kept waiting through the whole graph.
func (c *Collector) sweep(ctrl *controller.Controller) {
	const chunk = 1000
	c.mu.Lock()
	uids := make([]string, 0, len(c.graph.nodes))
	for uid := range c.graph.nodes {
		uids = append(uids, uid)
	}
	c.mu.Unlock()
	for len(uids) > 0 {
		part := uids[:min(chunk, len(uids))]
		uids = uids[len(part):]
		var keys []string
		c.mu.Lock()
		for _, uid := range part {
			n, ok := c.graph.nodes[uid]
			if !ok {
				continue
			}
			if orphan, _ := Orphaned(c.graph, uid); n.Deleting || orphan {
				keys = append(keys, uid)
			}
		}
		c.mu.Unlock()
		for _, k := range keys {
			ctrl.Enqueue(k)
		}
	}
}

// observe takes an ADDED or MODIFIED object into the graph and enqueues
// what it may unblock: the object itself when deleting or orphaned, every
// deleting owner it has or had (a dependent changed), and the members of a
// cycle its new owner references close.
func (c *Collector) observe(obj *api.Object) {
	n := NodeOf(obj)
	if n.UID == "" {
		return
	}
	c.mu.Lock()
	prev, existed := c.graph.Put(n)
	if n.Deleting {
		delete(c.requested, n.UID)
	}
	keys := c.deletingOwners(prev)
	keys = append(keys, c.deletingOwners(n)...)
	if orphan, _ := Orphaned(c.graph, n.UID); n.Deleting || orphan {
		keys = append(keys, n.UID)
	}
	if !existed || !sameOwners(prev.Owners, n.Owners) {
		keys = append(keys, FindCycle(c.graph, n.UID, nil)...)
	}
	nodes := c.graph.Len()
	c.mu.Unlock()
	c.m.setNodes(nodes)
	c.enqueue(keys)
}

// forget removes a DELETED object from the graph and enqueues its owners
// (its Namespace among them) and its dependents, which may now be orphans.
func (c *Collector) forget(obj *api.Object) {
	c.mu.Lock()
	n, ok := c.graph.Node(obj.UID)
	if !ok {
		c.mu.Unlock()
		return
	}
	keys := c.graph.Owners(n.UID)
	keys = append(keys, c.graph.Dependents(n.UID)...)
	c.graph.Remove(n.UID)
	delete(c.requested, n.UID)
	delete(c.refused, n.UID)
	nodes := c.graph.Len()
	c.mu.Unlock()
	c.qmu.Lock()
	delete(c.pending, n.UID) // gone: nothing left to do about it
	c.qmu.Unlock()
	c.m.setNodes(nodes)
	c.enqueue(keys)
}

// deletingOwners returns the uids of n's known owners that are deleting.
// The caller holds c.mu.
func (c *Collector) deletingOwners(n Node) []string {
	var out []string
	for _, o := range n.Owners {
		if on, ok := c.graph.nodes[o.UID]; ok && on.Deleting {
			out = append(out, o.UID)
		}
	}
	if ns, ok := c.graph.NamespaceOf(n); ok && ns.Deleting {
		out = append(out, ns.UID)
	}
	return out
}

// refNames names owner references for a trace: "Kind name, ...".
func refNames(refs []api.OwnerReference) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Kind + " " + r.Name
	}
	return strings.Join(names, ", ")
}

func sameOwners(a, b []api.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// enqueue hands keys to the current term's controller, or keeps them for
// the next term.
func (c *Collector) enqueue(keys []string) {
	if len(keys) == 0 {
		return
	}
	c.qmu.Lock()
	defer c.qmu.Unlock()
	for _, k := range keys {
		if c.ctrl != nil {
			c.ctrl.Enqueue(k)
		} else {
			c.pending[k] = struct{}{}
		}
	}
}

// target is a node's address, resolved under the lock for use after it.
type target struct {
	Node
	confirm []api.OwnerReference
	leaf    bool
}

// work is one reconcile's decision with every node it names resolved.
type work struct {
	self     Node
	leaf     bool // self holds no finalizer and owns nothing
	d        Decision
	victims  []target
	detach   []Node
	finalize bool
	explain  explanation // for the trace
}

// plan decides, under the lock, what to do about uid; with tracing it also
// gathers what the trace will say.
func (c *Collector) plan(uid string, tracing bool) (work, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.graph.Node(uid)
	if !ok {
		return work{}, false
	}
	w := work{self: n, d: Decide(c.graph, uid), leaf: IsLeaf(c.graph, uid)}
	if cs := w.d.Cascade; cs != nil {
		for _, v := range cs.Delete {
			if _, done := c.requested[v.UID]; done {
				continue
			}
			vn, _ := c.graph.Node(v.UID)
			w.victims = append(w.victims, target{Node: vn, confirm: v.Confirm, leaf: v.Leaf})
		}
		for _, du := range cs.Detach {
			dn, _ := c.graph.Node(du)
			w.detach = append(w.detach, dn)
		}
		w.finalize = cs.RemoveFinalizer
		if tracing {
			w.explain = c.explain(uid, cs)
		}
		if len(cs.InCycle) > 0 && cs.RemoveFinalizer {
			c.log.Info("cycle member leaves its deleting cycle", "object", n.String(),
				"cycle", CycleReport(c.graph, append([]string{uid}, cs.InCycle...)))
		}
	}
	return w, true
}

// reconcile handles the object with uid (the controller's key): it is
// level-based, deciding from the graph as it is now and re-reading the
// objects it writes.
func (c *Collector) reconcile(ctx context.Context, uid string) (controller.Result, error) {
	w, ok := c.plan(uid, trace.From(ctx) != nil)
	if !ok {
		return controller.Result{}, nil
	}
	trace.Object(ctx, w.self.Kind, w.self.Namespace, w.self.Name)
	trace.UID(ctx, uid)
	if w.d.Cycle != nil {
		trace.Action(ctx, "report the ownership cycle %s", w.d.Report)
		if err := c.reportCycle(ctx, w.self, w.d.Report); err != nil {
			return controller.Result{}, err
		}
	}
	var res controller.Result
	if w.d.Orphan {
		trace.Check(ctx, "every owner is gone: %s", refNames(w.d.Confirm))
		present, err := c.anyPresent(ctx, w.self.Namespace, w.d.Confirm)
		if err != nil {
			return res, err
		}
		if present {
			trace.Exit(ctx, "an owner still exists (the graph lags behind the API): check again in %s", c.opts.ConfirmRetry)
			res.RequeueAfter = c.opts.ConfirmRetry
		} else {
			trace.Action(ctx, "delete it as an orphan")
			after, err := c.delete(ctx, w.self, w.leaf, "orphan")
			if err != nil {
				return res, err
			}
			res.RequeueAfter = after
		}
	}
	if w.d.Cascade == nil {
		if !w.d.Orphan && w.self.Deleting {
			trace.Exit(ctx, "deleting, and the collector is done with it: %s", holds(w.self))
		}
		return res, nil
	}
	traceCascade(ctx, w.self, w)
	after, err := c.deleteAll(ctx, w.victims)
	if err != nil {
		return res, err
	}
	res.RequeueAfter = sooner(res.RequeueAfter, after)
	for _, d := range w.detach {
		if err := c.detach(ctx, d, w.self.UID); err != nil {
			return res, err
		}
	}
	if w.finalize {
		if w.self.Kind == NamespaceKind && w.self.Namespace == "" {
			empty, err := c.namespaceEmpty(ctx, w.self.Name)
			if err != nil {
				return res, err
			}
			if !empty {
				// The graph has not seen everything in it yet.
				trace.Exit(ctx, "the API still lists objects in the namespace: check again in %s", c.opts.ConfirmRetry)
				res.RequeueAfter = c.opts.ConfirmRetry
				return res, nil
			}
		}
		f := w.d.Cascade.Finalizer
		trace.Action(ctx, "remove %s: nothing is left to wait for", f)
		if err := c.removeFinalizer(ctx, w.self, f); err != nil {
			return res, err
		}
		if n := w.self; n.HasOtherFinalizer() {
			n.Finalizers = slices.DeleteFunc(slices.Clone(n.Finalizers), collectorFinalizer)
			trace.Exit(ctx, "it stays: %s", holds(n))
		}
	}
	return res, nil
}
