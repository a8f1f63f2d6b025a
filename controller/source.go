package controller

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/informer"
)

// KeyFunc maps an object seen by an informer to the keys to reconcile; an
// empty result skips the object.
type KeyFunc func(obj *api.Object) []string

// ObjectKey reconciles the object itself: its key is api.Key(namespace,
// name). It is the default KeyFunc.
func ObjectKey(obj *api.Object) []string {
	return []string{api.Key(obj.Namespace, obj.Name)}
}

// ControllerOwnerKey reconciles the owner of kind that controls the object
// (its ownerReference with controller: true), for controllers that watch
// what they create: a change of a DeployItem reconciles its Execution.
// Objects without such an owner are skipped.
func ControllerOwnerKey(kind string) KeyFunc {
	return func(obj *api.Object) []string {
		if ref := obj.ControllerRef(); ref != nil && ref.Kind == kind {
			return []string{api.Key(obj.Namespace, ref.Name)}
		}
		return nil
	}
}

// EnqueueFromInformer registers on inf the Handler that enqueues into c
// the keys key returns (see Handler). Register before running the
// informer, or the handler first receives every cached object as an
// addition.
func EnqueueFromInformer(inf *informer.Informer, c *Controller, key KeyFunc) {
	inf.AddEventHandler(Handler(c, key))
}

// Handler returns an informer handler that enqueues into c the keys key
// returns for every added, updated (including resyncs) and deleted
// object; for an update, the keys of both the old and the new state. A
// nil key means ObjectKey. Its functions never block.
func Handler(c *Controller, key KeyFunc) informer.Handler {
	if key == nil {
		key = ObjectKey
	}
	enqueue := func(obj *api.Object) {
		for _, k := range key(obj) {
			c.Enqueue(k)
		}
	}
	return informer.Handler{
		OnAdd: enqueue,
		OnUpdate: func(old, new *api.Object) {
			if old != new {
				enqueue(old)
			}
			enqueue(new)
		},
		OnDelete: enqueue,
	}
}
