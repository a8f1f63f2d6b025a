package registry

import "context"

// LockObject takes this process's lock on the unconditional writes of an
// object, as such a write holds it, and returns its release (tests only).
func LockObject(ctx context.Context, r *Registry, kind, ns, name string) (func(), error) {
	k, err := r.Lookup(kind)
	if err != nil {
		return nil, err
	}
	_, unlock, err := r.locks.lock(ctx, []string{r.key(k, ns, name)})
	return unlock, err
}

// LocksInUse is the number of objects whose lock is held or waited for.
func LocksInUse(r *Registry) int {
	r.locks.mu.Lock()
	defer r.locks.mu.Unlock()
	return len(r.locks.locks)
}
