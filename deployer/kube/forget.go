package kube

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
)

// Forget drops the cached cluster of Target key ("namespace/name") and
// its client in Options.Clients: the Target is gone, and its credentials
// must not stay in memory. It does not block; forgetting an unknown key
// does nothing.
func (cs *Clusters) Forget(key string) {
	cs.drop(key)
	cs.opts.Clients.Drop(key)
}

// Len returns the number of cached clusters.
func (cs *Clusters) Len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
}

// ForgetDeleted makes cs forget the cluster of every Target deleted from
// now on, watching Targets through the term's shared informer (the
// handler goes with the term). A Target that names another Secret or
// another type is caught by For, which rebuilds or drops its entry.
func (cs *Clusters) ForgetDeleted(t *manager.Term) {
	t.Informers.For(api.KindTarget).AddEventHandler(informer.Handler{
		OnDelete: func(obj *api.Object) { cs.Forget(api.Key(obj.Namespace, obj.Name)) },
	})
}
