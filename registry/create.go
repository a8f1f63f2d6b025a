package registry

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// maxCreateAttempts bounds retries when a guard (namespace, owner) changed
// under a create, or a generated name collided.
const maxCreateAttempts = 8

// Create stores a new object. It fills uid, creationTimestamp, generation 1
// and a generated name when only metadata.generateName is set; status and
// other server-set fields given by the caller are dropped.
//
// Errors: BadRequest (wrong apiVersion/kind, undecodable fields), Invalid
// (field errors, an owner that does not exist with that uid), NotFound (the
// namespace does not exist), Forbidden (the namespace or an owner is being
// deleted), AlreadyExists (the name is taken).
func (r *Registry) Create(ctx context.Context, in *api.Object) (*api.Object, error) {
	k, err := r.Lookup(in.Kind)
	if err != nil {
		return nil, err
	}
	obj := in.DeepCopy()
	if err := checkType(k, obj); err != nil {
		return nil, err
	}
	generate := obj.Name == "" && obj.GenerateName != ""
	if generate {
		if msgs := validation.IsDNS1123Label(obj.GenerateName + "x"); len(msgs) > 0 || len(obj.GenerateName) > 58 {
			return nil, api.NewInvalid(k.Kind, obj.GenerateName, field.ErrorList{field.Invalid(
				metaPath.Child("generateName"), obj.GenerateName,
				"must be a DNS-1123 label prefix of at most 58 characters")})
		}
	}
	for attempt := 0; ; attempt++ {
		if generate {
			obj.Name = obj.GenerateName + randomSuffix()
		}
		out, err := r.createOnce(ctx, k, obj)
		retry := errors.Is(err, store.ErrPrecondition) || (generate && errors.Is(err, api.ErrAlreadyExists))
		if !retry {
			return out, err
		}
		if attempt == maxCreateAttempts {
			return nil, api.NewConflict(k.Kind, obj.Name, "too many concurrent changes to its namespace or owners; retry")
		}
	}
}

func (r *Registry) createOnce(ctx context.Context, k *Kind, obj *api.Object) (*api.Object, error) {
	obj.UID = uuid.NewString()
	obj.CreationTimestamp = r.opts.Now().UTC()
	obj.Generation = 1
	obj.ResourceVersion = ""
	obj.DeletionTimestamp = nil
	obj.SetField(api.FieldStatus, nil)
	errs := validateMeta(k, obj)
	if obj.HasFinalizer(api.FinalizerCascadeDeletion) {
		errs = append(errs, field.Forbidden(metaPath.Child("finalizers"),
			api.FinalizerCascadeDeletion+" is managed by the server"))
	}
	out, kindErrs, err := k.prepare(obj, nil, opCreate)
	if err != nil {
		return nil, err
	}
	if errs = append(errs, kindErrs...); len(errs) > 0 {
		return nil, api.NewInvalid(k.Kind, obj.Name, errs)
	}
	guards := r.namespaceGuards(k, out.Namespace)
	owners, err := r.checkOwners(ctx, k, out, nil)
	if err != nil {
		return nil, err
	}
	raw, err := r.encode(k, out)
	if err != nil {
		return nil, api.NewInternal(err)
	}
	key := r.key(k, out.Namespace, out.Name)
	conds := append(append([]store.Cond{store.Absent(key)}, guards...), owners...)
	rev, err := r.store.Txn(ctx, conds, store.Put(key, raw))
	if errors.Is(err, store.ErrPrecondition) {
		if _, gerr := r.store.Get(ctx, key); gerr == nil {
			return nil, api.NewAlreadyExists(k.Kind, out.Name)
		}
		if nerr := r.explainNamespace(ctx, k, out.Namespace); nerr != nil {
			return nil, nerr
		}
		return nil, err // an owner moved: the caller retries
	}
	if err != nil {
		return nil, api.NewInternal(err)
	}
	out.ResourceVersion = fmt.Sprint(rev)
	return out, nil
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

// EnsureNamespace creates the namespace name unless it exists.
func (r *Registry) EnsureNamespace(ctx context.Context, name string) error {
	ns := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Namespace"}}
	ns.Name = name
	_, err := r.Create(ctx, ns)
	if errors.Is(err, api.ErrAlreadyExists) {
		return nil
	}
	return err
}

// Init prepares the store for serving: it checks that the encryption key
// matches the one the store was written with, and creates the default
// namespace. It is idempotent and safe to run on several servers at once.
func (r *Registry) Init(ctx context.Context) error {
	if r.enc != nil {
		if err := r.enc.verify(ctx, r.store); err != nil {
			return err
		}
	}
	return r.EnsureNamespace(ctx, api.DefaultNamespace)
}
