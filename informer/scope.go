package informer

import "sync"

// scope owns the handlers registered through one view of a Factory (see
// Factory.Scope), to remove them all when the view shuts down.
type scope struct {
	mu     sync.Mutex
	closed bool
	cores  map[*core]struct{}
}

func newScope() *scope { return &scope{cores: map[*core]struct{}{}} }

// register adds h to informer c on behalf of the scope, unless the scope
// is closed. It blocks as core.addHandler does.
func (sc *scope) register(c *core, h Handler) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	sc.cores[c] = struct{}{}
	c.addHandler(registered{Handler: h, scope: sc})
}

// close removes every handler registered through the scope and refuses
// later ones. It blocks until none of them runs; it is idempotent.
func (sc *scope) close() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	sc.closed = true
	for c := range sc.cores {
		c.removeScope(sc)
	}
	sc.cores = nil
}
