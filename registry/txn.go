package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// MaxTxnItems bounds the writes of one Txn; beyond it Commit answers
// BadRequest. Its conditions and writes are also bounded, by
// Options.MaxTxnOps of each (see checkTxnSize).
const MaxTxnItems = 64

// DefaultMaxTxnOps is the default of Options.MaxTxnOps: etcd's default
// limit (--max-txn-ops) on the conditions, and on the writes, of one
// transaction.
const DefaultMaxTxnOps = 128

// MinTxnOps is the least Options.MaxTxnOps a registry accepts: the
// conditions of one create within the metadata limits (its own key, two
// for its namespace, one per owner reference).
const MinTxnOps = 3 + api.MaxOwnerReferences

// Txn is a set of writes to several objects (and auxiliary keys) committed
// atomically in one etcd transaction: all of them or none. Each object's
// write gets every check its single-object verb makes (resourceVersion
// compare-and-swap, owners checked and guarded, the namespace existing and
// not terminating, the kind's hooks and validation, deletion marks), inside
// the one transaction. Build one with Registry.Txn, add writes, then
// Commit. A Txn is not safe for concurrent use and commits once.
type Txn struct {
	r     *Registry
	items []*txnItem
	done  bool
}

// TxnResult is what one write of a Txn left: the object as stored (or, for
// a delete that removed it, as it was, with Gone true). Also's entries are
// zero.
type TxnResult struct {
	Object *api.Object
	Gone   bool
}

// Txn starts an empty transaction.
func (r *Registry) Txn() *Txn { return &Txn{r: r} }

// Create adds the create of obj and returns the pending object: a copy of
// obj with its uid (and, for a generateName, its name) assigned, from which
// the caller can build owner references for the transaction's other
// objects (api.OwnerRefTo). Should a generated name collide, Commit picks
// another and rewrites the transaction's owner references to it: the
// results hold the final names. A failure (unknown kind, wrong apiVersion,
// bad generateName) is reported by Commit.
func (t *Txn) Create(obj *api.Object) *api.Object {
	it := t.r.newCreate(obj)
	t.items = append(t.items, it)
	return it.obj.DeepCopy()
}

// Update adds the update of obj's main resource, as Registry.Update: with
// metadata.resourceVersion it is a compare-and-swap, without it applies to
// the latest version.
func (t *Txn) Update(obj *api.Object) { t.items = append(t.items, t.r.newWrite(obj, OpUpdate)) }

// UpdateStatus adds the update of obj's status, as Registry.UpdateStatus.
func (t *Txn) UpdateStatus(obj *api.Object) {
	t.items = append(t.items, t.r.newWrite(obj, OpUpdateStatus))
}

// Delete adds the deletion of an object, as Registry.Delete: a deletion
// mark, or with opts.Force (admins only) its removal.
func (t *Txn) Delete(kind, ns, name string, opts api.DeleteOptions) {
	t.items = append(t.items, t.r.newDelete(kind, ns, name, opts))
}

// Also adds raw store writes, committed only if conds hold, e.g. a token
// registration (auth.TokenOp). They are not authorized: only code adds
// them, never a request. When one of conds fails, Commit answers Conflict.
func (t *Txn) Also(conds []store.Cond, ops ...store.Op) {
	t.items = append(t.items, &txnItem{conds: conds, ops: ops})
}

// Commit authorizes every object write for the caller in ctx, plans them
// all and commits them in one etcd transaction, retrying races that the
// single-object verbs retry (unconditional writes, owners or namespaces
// that changed, a generated name that collided). It blocks on the store:
// one read per update or delete, one per owner not created in the same
// transaction, and the transaction itself (more when it retries).
//
// It returns one result per write, in the order they were added. On
// failure nothing is written, and the error, an *api.Status with the reason
// of the failing write's own verb (Unauthorized without a caller;
// Forbidden; NotFound; AlreadyExists; Conflict for a stale
// resourceVersion or a failed Also condition; Invalid; BadRequest, also
// for a transaction beyond MaxTxnItems or one that writes an object twice;
// ServiceUnavailable, Timeout), names that write:
// `transaction item 2 (update Secret "demo/db"): ...`. A transaction with
// more conditions or writes than the store accepts (Options.MaxTxnOps)
// is Invalid, naming its size and the limit, and never reaches the store.
//
// With opts DryRun every write is planned and checked, and the
// transaction's conditions confirmed with the store, but nothing is
// written: the results are the objects as they would be (creates without
// a resourceVersion). At most one opts is used.
func (t *Txn) Commit(ctx context.Context, opts ...api.WriteOptions) ([]TxnResult, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if t.done {
		return nil, api.NewBadRequest("the transaction has already been committed")
	}
	t.done = true
	if len(t.items) == 0 {
		return nil, nil
	}
	if len(t.items) > MaxTxnItems {
		return nil, api.NewBadRequest("a transaction holds at most %d writes, got %d: split it", MaxTxnItems, len(t.items))
	}
	keys := map[string]int{}
	for i, it := range t.items {
		if it.err != nil {
			return nil, it.fail(i, it.err)
		}
		if it.k == nil {
			continue
		}
		if err := t.r.authorizeFor(ctx, it.k, u, it.attributes(), nil); err != nil {
			return nil, it.fail(i, err)
		}
		key := t.r.key(it.k, it.namespace(), it.name())
		if j, dup := keys[key]; dup {
			return nil, it.fail(i, api.NewBadRequest("item %d (%s) writes the same object: a transaction writes each object once",
				j, t.items[j]))
		}
		keys[key] = i
	}
	res, i, err := t.r.run(ctx, u, t.items, writeOptions(opts).DryRun)
	if err != nil {
		if i < 0 {
			return nil, apiError(err, "", "")
		}
		return nil, t.items[i].fail(i, err)
	}
	return res, nil
}

// txnItem is one write of a Txn or of a single-object verb.
type txnItem struct {
	// op is the write; "" for Also.
	op Operation
	k  *Kind
	// obj is, for a create, the pending object (name and uid set); for an
	// update, the caller's object (the item's own copy).
	obj *api.Object
	// delNS, delName and opts address a delete.
	delNS, delName string
	opts           api.DeleteOptions
	// generate is true when a create's name was generated.
	generate bool
	// patch, for a Patch, is the JSON merge patch applied to the object
	// read at each attempt; obj then holds only its kind, namespace, name
	// and the resourceVersion the patch sets (its precondition).
	patch     []byte
	patchType api.PatchType
	// manager is the write's field manager (WriteOptions.FieldManager);
	// force takes over fields of other managers on an apply; applied marks
	// a create made by an apply, its managed fields recorded already.
	manager string
	force   bool
	applied bool
	// conds and ops are Also's.
	conds []store.Cond
	ops   []store.Op
	// err is a failure found when the item was added.
	err error
	// direct makes a delete remove an object without finalizers at once,
	// when its deletion mark did not fit in a full store (Registry.Delete).
	direct bool
	// read, for an update, is the object as read with others in one round
	// trip (UpdateStatuses' prefetch): the next first attempt plans over it
	// instead of reading it, when it is at the version the write names,
	// and clears it.
	read *stored
}

func (r *Registry) newCreate(in *api.Object) *txnItem {
	obj := in.DeepCopy()
	it := &txnItem{op: OpCreate, obj: obj}
	if it.k, it.err = r.Lookup(obj.Kind); it.err != nil {
		return it
	}
	if it.err = checkType(it.k, obj); it.err != nil {
		return it
	}
	if it.generate = obj.Name == "" && obj.GenerateName != ""; it.generate {
		if msgs := validation.IsDNS1123Label(obj.GenerateName + "x"); len(msgs) > 0 || len(obj.GenerateName) > 58 {
			it.err = api.NewInvalid(it.k.Kind, obj.GenerateName, field.ErrorList{field.Invalid(
				metaPath.Child("generateName"), obj.GenerateName,
				"must be a DNS-1123 label prefix of at most 58 characters")})
			return it
		}
		obj.Name = obj.GenerateName + randomSuffix()
	}
	obj.UID = uuid.NewString()
	return it
}

func (r *Registry) newWrite(in *api.Object, op Operation) *txnItem {
	obj := in.DeepCopy()
	it := &txnItem{op: op, obj: obj}
	if it.k, it.err = r.Lookup(obj.Kind); it.err != nil {
		return it
	}
	if it.err = checkType(it.k, obj); it.err != nil {
		return it
	}
	_, it.err = parseRV(obj.ResourceVersion)
	return it
}

func (r *Registry) newDelete(kind, ns, name string, opts api.DeleteOptions) *txnItem {
	it := &txnItem{op: OpDelete, delNS: ns, delName: name, opts: opts}
	if it.k, it.err = r.Lookup(kind); it.err != nil {
		return it
	}
	if it.err = checkPropagation(it.k, opts.PropagationPolicy); it.err != nil {
		return it
	}
	if !it.k.Namespaced {
		it.delNS = ""
	}
	if isNamespace(it.k) && name == api.DefaultNamespace {
		it.err = api.NewForbidden(api.KindNamespace, name, "the default namespace cannot be deleted")
		return it
	}
	_, it.err = parseRV(opts.Preconditions.ResourceVersion)
	return it
}

func (it *txnItem) namespace() string {
	if it.obj != nil {
		return it.obj.Namespace
	}
	return it.delNS
}

func (it *txnItem) name() string {
	if it.obj != nil {
		return it.obj.Name
	}
	return it.delName
}

// attributes are what the Authorizer is asked about the item.
func (it *txnItem) attributes() authz.Attributes {
	a := authz.Attributes{Namespace: it.namespace(), Name: it.name()}
	switch it.op {
	case OpCreate:
		a.Verb = authz.VerbCreate
		if it.generate {
			a.Name = ""
		}
	case OpUpdate:
		a.Verb = authz.VerbUpdate
	case OpUpdateStatus:
		a.Verb, a.Subresource = authz.VerbUpdate, "status"
	case OpDelete:
		a.Verb, a.Force = authz.VerbDelete, it.opts.Force
	}
	return a
}

// String describes the item for errors: `update Secret "demo/db"`.
func (it *txnItem) String() string {
	if it.op == "" {
		return "extra writes"
	}
	kind := "object"
	if it.k != nil {
		kind = it.k.Kind
	} else if it.obj != nil {
		kind = it.obj.Kind
	}
	name := it.name()
	if ns := it.namespace(); ns != "" && (it.k == nil || it.k.Namespaced) {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s %s %q", it.op, kind, name)
}

// fail is the error of a Txn whose item i failed with err: the API error
// of err, its message prefixed with the item.
func (it *txnItem) fail(i int, err error) error {
	kind := ""
	if it.k != nil {
		kind = it.k.Kind
	}
	var st *api.Status
	if !errors.As(apiError(err, kind, it.name()), &st) {
		return err
	}
	c := *st
	c.Message = fmt.Sprintf("transaction item %d (%s): %s", i, it, st.Message)
	return &c
}

// unconditional reports whether the item writes an existing object at
// whatever version it finds: an update, status update or patch without a
// resourceVersion. (A delete without preconditions also retries a lost
// race, but only maxUpdateAttempts times and without waiting for other
// writers: a deletion mark does not depend on what it replaces.)
func (it *txnItem) unconditional() bool {
	switch it.op {
	case OpUpdate, OpUpdateStatus:
		return it.obj.ResourceVersion == ""
	}
	return false
}

// maxAttempts bounds how often the item may lose a race before its write
// is refused (see retry.go).
func (it *txnItem) maxAttempts() int {
	switch {
	case it.op == OpCreate:
		return maxCreateAttempts
	case it.unconditional():
		return maxUnconditionalAttempts
	}
	return maxUpdateAttempts
}

// exhausted is the error of an item that lost too many races.
func (it *txnItem) exhausted() error {
	switch {
	case it.op == OpCreate:
		return api.NewConflict(it.k.Kind, it.name(), "too many concurrent changes to its namespace or owners; retry")
	case it.unconditional():
		return api.NewConflict(it.k.Kind, it.name(), fmt.Sprintf("the object kept changing: %d attempts in a row lost the race; retry", it.maxAttempts()))
	case it.op == OpDelete:
		return api.NewConflict(it.k.Kind, it.name(), "the object keeps changing; retry")
	}
	return api.NewConflict(it.k.Kind, it.name(), "the object has been modified; read it again and retry")
}

// lockUnconditional takes this process's locks of the objects that items
// write unconditionally (see keyLocks) and returns the context to write
// with, which records them, and the function that releases them. Errors:
// Timeout when ctx ends first.
func (r *Registry) lockUnconditional(ctx context.Context, items []*txnItem) (context.Context, func(), error) {
	var keys []string
	for _, it := range items {
		if it.k != nil && it.unconditional() {
			keys = append(keys, r.key(it.k, it.namespace(), it.name()))
		}
	}
	return r.locks.lock(ctx, keys)
}
