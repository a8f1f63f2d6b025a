package usage

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"cairn.dev/cairn/store"
)

// Options configures a Tracker.
type Options struct {
	// Prefix is the prefix of every object key. A namespaced object's key
	// is Prefix + plural + "/" + namespace + "/" + name; keys with no
	// namespace segment (cluster-scoped kinds) are not counted.
	Prefix string
	// NamespacePrefix is the prefix of the Namespace objects' keys
	// (NamespacePrefix + name), inside Prefix.
	NamespacePrefix string
	// Defaults are the limits of a namespace that leaves one Unset; Unset
	// here is no limit.
	Defaults Limits
	// ParseLimits returns the limits a stored Namespace declares (Unset for
	// a limit it leaves to the default). A value it cannot parse is logged
	// and taken as declaring none.
	ParseLimits func(value []byte) (Limits, error)
	// PageBytes is about how many bytes of values one page of Start's list
	// may hold, once the largest value is known; default DefaultPageBytes.
	PageBytes int64
	// Logger receives warnings (the watch ended and is restarted or
	// rebuilt); default: discard them.
	Logger *slog.Logger
}

// DefaultPageBytes is Options.PageBytes' default.
const DefaultPageBytes = 8 << 20

// Tracker counts each namespace's usage (see the package doc). It is safe
// for concurrent use.
type Tracker struct {
	store *store.Store
	opts  Options

	mu sync.Mutex
	st *state // nil until Start has listed the store

	startMu sync.Mutex // serializes Start and Close
	started bool
	closed  bool
	ctx     context.Context // ends the watch
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// New returns a Tracker over s that counts nothing until Start.
func New(s *store.Store, opts Options) *Tracker {
	if opts.PageBytes <= 0 {
		opts.PageBytes = DefaultPageBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Tracker{store: s, opts: opts, ctx: ctx, cancel: cancel}
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("usage: the tracker is closed")

// Start lists every object (a page at a time, at one revision, with ctx)
// and then follows the store with a watch until Close. It blocks until the
// list is done; calling it again does nothing. It returns the store's
// error when the list fails (the tracker then still counts nothing), and
// ErrClosed after Close.
func (t *Tracker) Start(ctx context.Context) error {
	t.startMu.Lock()
	defer t.startMu.Unlock()
	switch {
	case t.closed:
		return ErrClosed
	case t.started:
		return nil
	}
	st, err := t.build(ctx)
	if err != nil {
		return err
	}
	t.install(st)
	t.started = true
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.follow(t.ctx)
	}()
	return nil
}

// Close stops the watch and waits for it. The tracker keeps counting this
// server's own commits and answering from what it knows. It is idempotent.
func (t *Tracker) Close() {
	t.startMu.Lock()
	t.closed = true
	t.cancel()
	t.startMu.Unlock()
	t.wg.Wait()
}

// install makes st, freshly listed, the tracker's state, keeping the
// reservations of the writes in flight.
func (t *Tracker) install(st *state) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st != nil {
		for name, u := range t.st.ns {
			if u.heldObjects != 0 || u.heldBytes != 0 {
				n := st.of(name)
				n.heldObjects, n.heldBytes = u.heldObjects, u.heldBytes
			}
		}
	}
	t.st = st
}

// classify sets c's namespace; false for a key that is not counted.
func (t *Tracker) classify(c *Change) bool {
	if name, ok := strings.CutPrefix(c.Key, t.opts.NamespacePrefix); ok {
		c.ns, c.namespace = name, true
		return name != "" && !strings.Contains(name, "/")
	}
	rest, ok := strings.CutPrefix(c.Key, t.opts.Prefix)
	if !ok {
		return false
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return false
	}
	rest = rest[i+1:]
	j := strings.IndexByte(rest, '/')
	if j <= 0 {
		return false // a cluster-scoped kind
	}
	c.ns = rest[:j]
	return true
}

// effective are the limits in force for namespace u (nil: unknown).
func (t *Tracker) effective(u *nsState) Limits {
	l := t.opts.Defaults
	if u != nil && u.declared.Objects != Unset {
		l.Objects = u.declared.Objects
	}
	if u != nil && u.declared.Bytes != Unset {
		l.Bytes = u.declared.Bytes
	}
	return l
}

// Usage reports what namespace ns holds, as far as the tracker knows, and
// its limits in force. It does not block on the store.
func (t *Tracker) Usage(ns string) Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st == nil {
		return Report{Limits: t.opts.Defaults}
	}
	u := t.st.ns[ns]
	r := Report{Limits: t.effective(u), Revision: t.st.rev}
	if u != nil {
		r.Objects, r.Bytes = u.objects, u.bytes
	}
	return r
}

// Reservation holds what a write in flight adds to its namespaces, until
// Commit or Cancel. A nil Reservation (before Start) holds nothing.
type Reservation struct {
	t       *Tracker
	changes []Change
	holds   []hold
}

type hold struct {
	ns             string
	objects, bytes int64
}

// growth is what a write adds to one namespace.
type growth struct {
	ns string
	// objects and bytes are the write's net growth; checkObjects and
	// checkBytes that of its changes that are not Exempt.
	objects, bytes, checkObjects, checkBytes int64
}

// Reserve checks the changes one commit makes (in any number of
// namespaces, counted together per namespace) against the limits, and
// reserves what they add until the commit's Reservation is committed or
// cancelled. It refuses, with an *ExceededError, changes whose non-exempt
// part grows a namespace that its usage, plus what writes in flight
// reserve, would then take over a limit; deletions and writes that shrink
// always pass. It does not block on the store. Before Start it checks
// nothing and returns a nil Reservation.
func (t *Tracker) Reserve(changes []Change) (*Reservation, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st == nil {
		return nil, nil
	}
	st := t.st
	res := &Reservation{t: t, changes: changes[:0]}
	var grows []growth
	for _, c := range changes {
		if !t.classify(&c) {
			continue
		}
		res.changes = append(res.changes, c)
		if c.namespace {
			continue
		}
		var dObjects, dBytes int64
		if old := st.size(c.Key); old >= 0 {
			dObjects, dBytes = -1, -old
		}
		if !c.Deleted {
			dObjects, dBytes = dObjects+1, dBytes+c.Size
		}
		i := 0
		for i < len(grows) && grows[i].ns != c.ns {
			i++
		}
		if i == len(grows) {
			grows = append(grows, growth{ns: c.ns})
		}
		g := &grows[i]
		g.objects, g.bytes = g.objects+dObjects, g.bytes+dBytes
		if !c.Exempt {
			g.checkObjects, g.checkBytes = g.checkObjects+dObjects, g.checkBytes+dBytes
		}
	}
	for _, g := range grows {
		if err := t.check(g); err != nil {
			return nil, err
		}
	}
	for _, g := range grows {
		h := hold{ns: g.ns, objects: max(g.objects, 0), bytes: max(g.bytes, 0)}
		if h.objects == 0 && h.bytes == 0 {
			continue
		}
		u := st.of(g.ns)
		u.heldObjects += h.objects
		u.heldBytes += h.bytes
		res.holds = append(res.holds, h)
	}
	return res, nil
}

// check refuses g when it would take its namespace over a limit. Call with
// mu held.
func (t *Tracker) check(g growth) error {
	u := t.st.ns[g.ns]
	lim := t.effective(u)
	var objects, bytes int64
	if u != nil {
		objects, bytes = u.objects+u.heldObjects, u.bytes+u.heldBytes
	}
	over := func(resource string, limit, used, adds int64, declared bool) error {
		if adds <= 0 || limit == Unset || used+adds <= limit {
			return nil
		}
		return &ExceededError{Namespace: g.ns, Resource: resource, Limit: limit, Default: !declared, Usage: used, Adds: adds}
	}
	if err := over("objects", lim.Objects, objects, g.checkObjects, u != nil && u.declared.Objects != Unset); err != nil {
		return err
	}
	return over("bytes", lim.Bytes, bytes, g.checkBytes, u != nil && u.declared.Bytes != Unset)
}

// Commit records that the write committed at revision rev: its changes are
// counted at once (unless the watch already has) and its reservation is
// released. It does not block on the store.
func (r *Reservation) Commit(rev int64) {
	if r == nil {
		return
	}
	t := r.t
	t.mu.Lock()
	defer t.mu.Unlock()
	r.release()
	if rev <= t.st.rev {
		return // the watch has counted it
	}
	for i := range r.changes {
		t.st.apply(&r.changes[i], rev, false)
	}
}

// Cancel releases the reservation of a write that failed, or whose outcome
// is unknown (the watch counts it if it was applied). It does not block on
// the store.
func (r *Reservation) Cancel() {
	if r == nil {
		return
	}
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	r.release()
}

// release returns r's holds. Call with mu held.
func (r *Reservation) release() {
	st := r.t.st
	for _, h := range r.holds {
		u := st.of(h.ns)
		u.heldObjects -= h.objects
		u.heldBytes -= h.bytes
		st.forget(h.ns)
	}
	r.holds = nil
}
