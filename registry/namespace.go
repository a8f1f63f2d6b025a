package registry

import (
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// terminatingPrefix holds one marker key per Namespace marked for deletion.
// The marker is written in the same transaction that marks the Namespace
// and removed in the one that removes it, so a create can check "the
// namespace exists and is not being deleted" with compares alone, without
// reading the namespace first.
const terminatingPrefix = "/cairn/meta/terminating-namespaces/"

func terminatingKey(ns string) string { return terminatingPrefix + ns }

func isNamespace(k *Kind) bool { return k.Kind == api.KindNamespace }

// namespaceGuards are the conditions under which an object may be created
// in ns: the namespace exists and is not being deleted (none for ns "").
// When they fail, explainNamespace says why.
func (r *Registry) namespaceGuards(ns string) []store.Cond {
	if ns == "" {
		return nil
	}
	return []store.Cond{store.Present(r.namespaceKey(ns)), store.Absent(terminatingKey(ns))}
}

// namespaceKey is the key of the Namespace ns.
func (r *Registry) namespaceKey(ns string) string {
	return r.key(r.kinds[api.KindNamespace], "", ns)
}

// explainNamespace tells why namespace guards failed: NotFound when ns does
// not exist, Forbidden when it is being deleted, nil when neither holds any
// more (the caller lost a race and retries).
func (r *Registry) explainNamespace(ctx context.Context, k *Kind, ns string) error {
	if !k.Namespaced {
		return nil
	}
	cur, err := r.read(ctx, r.kinds[api.KindNamespace], "", ns)
	if errors.Is(err, store.ErrNotFound) {
		return api.NewNotFound("Namespace", ns)
	}
	if err != nil {
		return err
	}
	if cur.obj.Deleting() {
		return api.NewForbidden(k.Kind, "", fmt.Sprintf("namespace %q is being deleted", ns))
	}
	return nil
}

// markOps are the writes that accompany marking an object for deletion.
func markOps(k *Kind, obj *api.Object) []store.Op {
	if !isNamespace(k) {
		return nil
	}
	return []store.Op{store.Put(terminatingKey(obj.Name), nil)}
}

// removeOps are the writes that accompany removing an object from the
// store, with the conditions they need: the Namespace's terminating mark,
// and the kind's own (Spec.RemoveWrites). It blocks as the kind's hook
// does and returns its error.
func (r *Registry) removeOps(ctx context.Context, k *Kind, obj *api.Object) ([]store.Cond, []store.Op, error) {
	var conds []store.Cond
	var ops []store.Op
	if isNamespace(k) {
		ops = append(ops, store.Del(terminatingKey(obj.Name)))
	}
	if k.removeWrites != nil {
		c, o, err := k.removeWrites(ctx, obj)
		if err != nil {
			return nil, nil, fmt.Errorf("registry: the writes that remove %s %q: %w", k.Kind, obj.Name, err)
		}
		conds, ops = append(conds, c...), append(ops, o...)
	}
	return conds, ops, nil
}
