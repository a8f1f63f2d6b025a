package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// maxCreateAttempts bounds retries when a guard (namespace, owner) changed
// under a create, or a generated name collided.
const maxCreateAttempts = 8

// Create stores a new object. It fills uid, creationTimestamp, generation 1
// and a generated name when only metadata.generateName is set; status and
// other server-set fields given by the caller are dropped. It blocks on one
// store transaction (plus one read per owner reference); it reads nothing
// else before writing.
//
// With opts DryRun it makes every check, reads what a create reads and
// confirms with the store that the name is free and the guards hold, and
// returns the object as it would be stored (without a resourceVersion),
// writing nothing. At most one opts is used.
//
// With a name generated and a request id in ctx (WithRequestID), the
// object gets the label api.LabelRequestID with that id (unless it has it,
// or as many labels as allowed already), by which its client can find it
// when the answer is lost or says that the create may have been applied.
//
// Errors: Unauthorized (no caller in ctx), Forbidden (the caller may not
// create it; the namespace or an owner is being deleted), BadRequest
// (wrong apiVersion/kind, undecodable fields), Invalid (field errors, an
// owner that does not exist with that uid), NotFound (the namespace does
// not exist), AlreadyExists (the name is taken), ServiceUnavailable (the
// store is unavailable: nothing was written) or Timeout (the store did not
// confirm the create in time: it may have been written; the message says
// how to find out).
func (r *Registry) Create(ctx context.Context, in *api.Object, opts ...api.WriteOptions) (*api.Object, error) {
	k, u, err := r.admit(ctx, in.Kind, authz.Attributes{Verb: authz.VerbCreate, Namespace: in.Namespace, Name: in.Name})
	if err != nil {
		return nil, err
	}
	o := writeOptions(opts)
	it := r.newCreate(in)
	if it.err != nil {
		return nil, it.err
	}
	if it.generate {
		labelRequest(ctx, it.obj)
	}
	it.manager = o.FieldManager
	res, _, err := r.run(ctx, u, []*txnItem{it}, o.DryRun)
	if err != nil {
		return nil, apiError(err, k.Kind, it.obj.Name)
	}
	return res[0].Object, nil
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the id of the API request it serves
// (a label value: at most 63 characters of [A-Za-z0-9._-], beginning and
// ending with a letter or digit). Create labels an object whose name it
// generates with it (api.LabelRequestID).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// labelRequest labels obj, whose name is generated, with the request id of
// ctx, if any, unless obj has that label or as many labels as allowed.
func labelRequest(ctx context.Context, obj *api.Object) {
	id, _ := ctx.Value(requestIDKey{}).(string)
	if _, has := obj.Labels[api.LabelRequestID]; id == "" || has || len(obj.Labels) >= api.MaxLabels {
		return
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels[api.LabelRequestID] = id
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	for i := range b {
		b[i] = suffixAlphabet[int(b[i])%len(suffixAlphabet)]
	}
	return string(b)
}

// EnsureNamespace creates the namespace name, as the caller in ctx, unless
// it exists. Errors: as Create, but AlreadyExists.
func (r *Registry) EnsureNamespace(ctx context.Context, name string) error {
	ns := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindNamespace}}
	ns.Name = name
	_, err := r.Create(ctx, ns)
	if errors.Is(err, api.ErrAlreadyExists) {
		return nil
	}
	return err
}

// Init prepares the store for serving: it checks that the encryption key
// matches the one the store was written with, counts every namespace's
// usage (a list of every object, a page at a time: namespace limits are
// not enforced before), and creates the default namespace (as the system).
// It is idempotent and safe to run on several servers at once. It writes
// only what is missing, so that it succeeds on a full store, which refuses
// writes: what it cannot write there (on a store filled before its first
// start) it logs and leaves to a later start.
func (r *Registry) Init(ctx context.Context) error {
	if r.enc != nil {
		err := r.enc.verify(ctx, r.store)
		if errors.Is(err, store.ErrNoSpace) {
			r.opts.Logger.Warn("the store is full: the encryption key's fingerprint will be recorded at a later start")
		} else if err != nil {
			return err
		}
	}
	if err := r.usage.Start(ctx); err != nil {
		return fmt.Errorf("registry: count namespace usage: %w", err)
	}
	ns := r.kinds[api.KindNamespace]
	_, err := r.read(ctx, ns, "", api.DefaultNamespace)
	if !errors.Is(err, store.ErrNotFound) {
		return apiError(err, ns.Kind, api.DefaultNamespace)
	}
	err = r.EnsureNamespace(system(ctx), api.DefaultNamespace)
	if errors.Is(err, api.ErrInsufficientStorage) {
		r.opts.Logger.Warn("the store is full: the default namespace will be created at a later start")
		return nil
	}
	return err
}
