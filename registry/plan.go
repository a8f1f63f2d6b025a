package registry

import (
	"bytes"
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// A plan is one object's share of a store transaction, computed without
// writing anything: the conditions under which it may commit, its writes,
// and the object that results. planCreate, planUpdate and planDelete make
// plans with every per-object check (validation and kind hooks, owners,
// namespace, deletion marks); the single-object verbs commit one plan, a
// Txn commits many in one etcd transaction (run, in txn.go).
type plan struct {
	k   *Kind
	key string
	// self are the object's own conditions: absent (create) or unchanged
	// since read (update, delete); a Txn's extra conditions for Also.
	self []store.Cond
	// ns is the namespace that must exist and not be terminating when the
	// write commits: a create's, unless the Namespace is created in the
	// same transaction; "" for none.
	ns string
	// owners are the owners the object newly references, at the revision
	// they were checked.
	owners []ownerGuard
	ops    []store.Op
	// size is the length of the object's stored value when write is true
	// and gone is false (namespace limits count it).
	size int64
	// out is the object as it will be stored (its resourceVersion is set
	// by the commit) or, when write is false, the stored object.
	out *api.Object
	// write is false when nothing changes: the commit only confirms that
	// out, which may come from a stale read, is still current.
	write bool
	// gone is true when the commit removes the object.
	gone bool
	// grows is true when the plan adds data to the store (a create, an
	// update that makes the object larger), which a full store refuses;
	// deletion marks and shrinking updates still fit (checkSpace).
	grows bool
	// prev is the mod revision the object's write is conditioned on (0 for
	// a create) and raw the value it puts at key (nil for a removal): what
	// tells, after a commit of unknown outcome, whether it was applied
	// (outcome.go).
	prev int64
	raw  []byte
}

// ownerGuard requires an owner to be unchanged since it was checked.
type ownerGuard struct {
	key string
	rev int64
}

// pending are the objects created in one transaction, by key, with their
// uids: they may own the transaction's other objects, and the Namespaces
// among them may hold its other creates. It is nil for a single write.
type pending map[string]string

// has reports whether the object at key is created in the transaction.
func (pend pending) has(key string) bool {
	_, ok := pend[key]
	return ok
}

// conds are every condition of p alone.
func (r *Registry) conds(p *plan) []store.Cond {
	c := append(append([]store.Cond(nil), p.self...), r.namespaceGuards(p.ns)...)
	for _, o := range p.owners {
		c = append(c, store.Unchanged(o.key, o.rev))
	}
	return c
}

// result is the object p leaves once committed at revision rev.
func (p *plan) result(rev int64) *api.Object {
	if p.write && rev > 0 {
		p.out.ResourceVersion = formatRV(rev)
	}
	return p.out
}

// planCreate plans the create of obj, whose name and uid are set (it
// resets the other server-set fields of obj). It reads nothing but the
// owners obj references.
func (r *Registry) planCreate(ctx context.Context, adm *Admission, k *Kind, obj *api.Object, pend pending) (*plan, error) {
	obj.CreationTimestamp = r.opts.Now().UTC()
	obj.Generation = 1
	obj.ResourceVersion = ""
	obj.DeletionTimestamp = nil
	obj.SetField(api.FieldStatus, nil)
	errs := r.validateMeta(k, obj, nil)
	for _, f := range obj.Finalizers {
		if serverFinalizer(f) {
			errs = append(errs, field.Forbidden(metaPath.Child("finalizers"), f+" is managed by the server"))
		}
	}
	out, kindErrs, err := k.prepare(ctx, adm, obj, nil)
	if err != nil {
		return nil, err
	}
	if errs = append(errs, kindErrs...); len(errs) > 0 {
		return nil, api.NewInvalid(k.Kind, obj.Name, errs)
	}
	if !adm.applied {
		if out, err = r.recordUpdate(k, OpCreate, nil, out, adm.manager, adm.User.Name); err != nil {
			return nil, err
		}
	}
	owners, err := r.checkOwners(ctx, k, out, nil, pend)
	if err != nil {
		return nil, err
	}
	if err := r.recordCreator(ctx, adm, k, out, nil, pend); err != nil {
		return nil, err
	}
	raw, err := r.encode(k, out)
	if err != nil {
		return nil, err
	}
	if err := r.checkObjectSize(k, out, raw, 0); err != nil {
		return nil, err
	}
	key := r.key(k, out.Namespace, out.Name)
	p := &plan{k: k, key: key, self: []store.Cond{store.Absent(key)}, owners: owners,
		ops: []store.Op{store.Put(key, raw)}, size: int64(len(raw)), out: out, write: true, grows: true, raw: raw}
	if k.Namespaced && (pend == nil || !pend.has(r.namespaceKey(out.Namespace))) {
		p.ns = out.Namespace
	}
	return p, nil
}

// planUpdate plans the write of next (main resource or status, by adm.Op)
// over the stored cur. It returns errStaleRead when next is not at cur's
// version (the caller decides between a retry and a Conflict).
func (r *Registry) planUpdate(ctx context.Context, adm *Admission, k *Kind, next *api.Object, cur *stored, pend pending) (*plan, error) {
	old := cur.obj
	if err := checkUpdate(k, next, old); err != nil {
		return nil, err
	}
	obj, metaErrs := r.mergeUpdate(k, adm.Op, next, old)
	out, errs, err := k.prepare(ctx, adm, obj, old)
	if err != nil {
		return nil, err
	}
	if errs = append(metaErrs, errs...); len(errs) > 0 {
		return nil, api.NewInvalid(k.Kind, obj.Name, errs)
	}
	// Managed fields are recorded on the object as it will be stored
	// (write-only fields such as a Secret's stringData merged away).
	if !adm.applied {
		if out, err = r.recordUpdate(k, adm.Op, old, out, adm.manager, adm.User.Name); err != nil {
			return nil, err
		}
	}
	key := r.key(k, out.Namespace, out.Name)
	p := &plan{k: k, key: key, self: []store.Cond{store.Unchanged(key, cur.rev)}, out: out, write: true, prev: cur.rev}
	if adm.Op != OpUpdateStatus {
		if p.owners, err = r.checkOwners(ctx, k, out, old.OwnerReferences, pend); err != nil {
			return nil, err
		}
		if err := r.recordCreator(ctx, adm, k, out, old, pend); err != nil {
			return nil, err
		}
	}
	if adm.Op == OpUpdate && !sameDesired(out, old) {
		out.Generation = old.Generation + 1
	}
	if out.Deleting() && len(out.Finalizers) == 0 {
		if api.Protected(&out.ObjectMeta) {
			return nil, api.NewProtected(k.Kind, out.Name)
		}
		conds, ops, err := r.removeOps(ctx, k, out)
		if err != nil {
			return nil, err
		}
		p.self, p.ops, p.gone = append(p.self, conds...), append(ops, store.Del(key)), true
		return p, nil
	}
	return r.planPut(k, p, out, cur)
}

// checkUpdate refuses an update of old to next that no merge can make
// valid: a wrong kind (checkType), a new name or namespace (BadRequest),
// another uid (Conflict); errStaleRead when next is not at old's version.
// It is pure.
func checkUpdate(k *Kind, next, old *api.Object) error {
	if err := checkType(k, next); err != nil {
		return err
	}
	if next.Name != old.Name || (k.Namespaced && next.Namespace != old.Namespace) {
		return api.NewBadRequest("metadata.name and metadata.namespace cannot change")
	}
	if next.ResourceVersion != old.ResourceVersion {
		return errStaleRead
	}
	if next.UID != "" && next.UID != old.UID {
		return api.NewConflict(k.Kind, next.Name, "uid precondition failed: the object was deleted and created again")
	}
	return nil
}

// mergeUpdate is the object an update of old to next (by op) would store,
// before the kind's hooks: for a status write old with next's status; else
// next with old's server-set fields and status, and the metadata errors of
// that change. It modifies neither next nor old.
func (r *Registry) mergeUpdate(k *Kind, op Operation, next, old *api.Object) (*api.Object, field.ErrorList) {
	if op == OpUpdateStatus {
		obj := old.DeepCopy()
		obj.SetField(api.FieldStatus, next.Field(api.FieldStatus))
		return obj, nil
	}
	obj := next.DeepCopy()
	obj.UID, obj.CreationTimestamp, obj.DeletionTimestamp = old.UID, old.CreationTimestamp, old.DeletionTimestamp
	obj.Generation, obj.GenerateName = old.Generation, old.GenerateName
	obj.SetField(api.FieldStatus, old.Field(api.FieldStatus))
	return obj, append(r.validateMeta(k, obj, old), validateFinalizerChange(old, obj)...)
}

// planPut completes p, the update of the stored cur to out, with its put:
// none when out would store what cur holds (p then confirms cur's object),
// else out sealed (encrypted for an encrypted kind). Errors: out does not
// encode or seal, or it is over the object size limit (checkObjectSize).
func (r *Registry) planPut(k *Kind, p *plan, out *api.Object, cur *stored) (*plan, error) {
	old := cur.obj
	plain, err := storedJSON(k, out)
	if err != nil {
		return nil, err
	}
	was := cur.plain
	if was == nil {
		was, _ = storedJSON(k, old) // an object that does not encode differs
	}
	if bytes.Equal(plain, was) {
		p.out, p.write = old, false // nothing would change
		return p, nil
	}
	raw, err := r.seal(k, out, plain)
	if err != nil {
		return nil, err
	}
	if err := r.checkObjectSize(k, out, raw, cur.size); err != nil {
		return nil, err
	}
	p.ops, p.size, p.grows, p.raw = []store.Op{store.Put(p.key, raw)}, int64(len(raw)), grows(raw, cur.size), raw
	return p, nil
}

// planDelete plans the deletion of the stored cur: with opts.Force its
// removal; for an object already marked, nothing (the plan confirms cur);
// with direct (the store is full: a mark does not fit) the removal of an
// object without finalizers, InsufficientStorage for one with finalizers;
// else the deletion mark (deletionTimestamp, and the finalizer of the
// propagation policy: cascade-deletion for Foreground, orphan for Orphan,
// none for Background, whose object without finalizers is removed at
// once). It returns Conflict when a precondition of opts does not match
// cur.
func (r *Registry) planDelete(ctx context.Context, adm *Admission, k *Kind, cur *stored, opts api.DeleteOptions, direct bool) (*plan, error) {
	name := cur.obj.Name
	if p := opts.Preconditions; p.UID != "" && p.UID != cur.obj.UID {
		return nil, api.NewConflict(k.Kind, name, "uid precondition failed: the object has uid "+cur.obj.UID)
	}
	if p := opts.Preconditions; p.ResourceVersion != "" && p.ResourceVersion != cur.obj.ResourceVersion {
		return nil, api.NewConflict(k.Kind, name, "resourceVersion precondition failed: the object is at "+cur.obj.ResourceVersion)
	}
	if api.Protected(&cur.obj.ObjectMeta) {
		return nil, api.NewProtected(k.Kind, name)
	}
	key := r.key(k, cur.obj.Namespace, name)
	p := &plan{k: k, key: key, self: []store.Cond{store.Unchanged(key, cur.rev)}, prev: cur.rev}
	remove := func() (*plan, error) {
		conds, ops, err := r.removeOps(ctx, k, cur.obj)
		if err != nil {
			return nil, err
		}
		p.self, p.ops, p.out, p.write, p.gone = append(p.self, conds...), append(ops, store.Del(key)), cur.obj.DeepCopy(), true, true
		return p, nil
	}
	switch {
	case opts.Force:
		return remove()
	case cur.obj.Deleting():
		p.out = cur.obj
		return p, nil
	case direct && len(cur.obj.Finalizers) > 0:
		return nil, r.markDoesNotFit(k, cur.obj)
	case direct, opts.PropagationPolicy == api.PropagationBackground && len(cur.obj.Finalizers) == 0:
		// A pure deletion, which etcd accepts on a full store; the
		// collector then finds the object's dependents orphaned.
		return remove()
	}
	obj := cur.obj.DeepCopy()
	now := r.opts.Now().UTC()
	obj.DeletionTimestamp = &now
	switch opts.PropagationPolicy {
	case api.PropagationOrphan:
		obj.AddFinalizer(api.FinalizerOrphan)
	case api.PropagationBackground:
	default:
		obj.AddFinalizer(api.FinalizerCascadeDeletion)
	}
	out, errs, err := k.prepare(ctx, adm, obj, cur.obj)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, api.NewInvalid(k.Kind, name, errs)
	}
	raw, err := r.encode(k, out)
	if err != nil {
		return nil, err
	}
	p.ops, p.out, p.write, p.size, p.raw = append(markOps(k, out), store.Put(key, raw)), out, true, int64(len(raw)), raw
	return p, nil
}
