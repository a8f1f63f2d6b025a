package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/openapi"
	"cairn.dev/cairn/store"
)

// Server-side apply and metadata.managedFields, with the library
// Kubernetes itself uses (apimachinery's managedfields, over
// structured-merge-diff), against schemas derived from the kinds' Go types
// (package openapi).
//
// Every write records managed fields, as kube-apiserver does: a create
// makes its writer (its field manager, or else the caller's name) the
// owner of every field it set, and each later write the owner of what it
// changed, so that a server-side apply after other writers (cairn apply,
// kubectl apply, kubectl label) removes only the fields its manager set.
// An object stored before managed fields were recorded on every create
// carries none; as in Kubernetes, its updates record none until its first
// server-side apply, which gives what it holds to "before-first-apply".

// schemas holds the documents and field managers, built on first use.
type schemas struct {
	once sync.Once
	spec *openapi.Spec
	tc   managedfields.TypeConverter
	err  error

	mu  sync.Mutex
	fms map[fmKey]*managedfields.FieldManager

	// creates remembers the managed fields of creates by shape
	// (createfields.go).
	creates createShapes
}

// fmKey names a field manager: one per kind and subresource.
type fmKey struct{ kind, subresource string }

// OpenAPI returns the OpenAPI v2 and v3 documents of the served kinds,
// built from their Go types on first use (about a tenth of a second);
// then it does not block. The error is the build's, the same every call.
func (r *Registry) OpenAPI() (*openapi.Spec, error) {
	s := &r.schemas
	s.once.Do(func() {
		var rs []openapi.Resource
		for _, k := range r.KindDefs() {
			res := openapi.Resource{Info: k.KindInfo, Type: k.GoType}
			for _, a := range k.Actions {
				res.Actions = append(res.Actions, openapi.Action{Name: a.Name, Method: a.Method, Collection: a.Collection})
			}
			rs = append(rs, res)
		}
		if s.spec, s.err = openapi.Build(rs); s.err != nil {
			s.err = fmt.Errorf("registry: build the OpenAPI documents: %w", s.err)
			return
		}
		if s.tc, s.err = managedfields.NewTypeConverter(s.spec.Definitions(), false); s.err != nil {
			s.err = fmt.Errorf("registry: build the schemas of server-side apply: %w", s.err)
		}
		s.fms = map[fmKey]*managedfields.FieldManager{}
	})
	return s.spec, s.err
}

// fieldManager returns the field manager of kind k's main resource (sub
// "") or its status (sub "status").
func (r *Registry) fieldManager(k *Kind, sub string) (*managedfields.FieldManager, error) {
	if _, err := r.OpenAPI(); err != nil {
		return nil, err
	}
	s := &r.schemas
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmKey{k.Kind, sub}
	if fm, ok := s.fms[key]; ok {
		return fm, nil
	}
	gvk := schema.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: k.Kind}
	u := unstructuredScheme{}
	fm, err := managedfields.NewDefaultFieldManager(s.tc, u, u, u, gvk, gvk.GroupVersion(), sub, nil)
	if err != nil {
		return nil, fmt.Errorf("registry: field manager of %s: %w", k.Kind, err)
	}
	s.fms[key] = fm
	return fm, nil
}

// subresourceOf is the field manager subresource of a write op.
func subresourceOf(op Operation) string {
	if op == OpUpdateStatus {
		return "status"
	}
	return ""
}

// recordUpdate records in obj's managed fields that manager (the
// request's field manager; the caller's name when it named none) wrote
// obj over old (nil for a create). Managed fields obj carries replace
// old's, as Kubernetes allows (an empty entry resets them). A create of a
// shape seen before copies what the field manager recorded for it
// (createfields.go).
func (r *Registry) recordUpdate(k *Kind, op Operation, old, obj *api.Object, manager, caller string) (*api.Object, error) {
	if manager == "" {
		manager = caller
	}
	if old != nil || op != OpCreate {
		return r.fieldManagerUpdate(k, op, old, obj, manager)
	}
	shape, ok := createShape(obj)
	if !ok {
		return r.fieldManagerUpdate(k, op, nil, obj, manager)
	}
	if e, ok := r.schemas.creates.lookup(k.Kind, shape); ok {
		if out, ok := createdBy(obj, e, manager, time.Now()); ok {
			return out, nil
		}
	}
	out, err := r.fieldManagerUpdate(k, op, nil, obj, manager)
	if err == nil {
		r.schemas.creates.remember(k.Kind, shape, out)
	}
	return out, err
}

// fieldManagerUpdate is recordUpdate through the field manager itself,
// manager named.
func (r *Registry) fieldManagerUpdate(k *Kind, op Operation, old, obj *api.Object, manager string) (*api.Object, error) {
	fm, err := r.fieldManager(k, subresourceOf(op))
	if err != nil {
		return nil, err
	}
	live := emptyLike(obj)
	if old != nil {
		if live, err = toUnstructured(old); err != nil {
			return nil, err
		}
	}
	next, err := toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	out, err := fm.Update(live, next, manager)
	if err != nil {
		return nil, fieldManagerError(k, obj.Name, err)
	}
	return fromUnstructured(out)
}

// applyConfig merges the apply configuration patch of manager into live
// (an empty object of its name for a create) and returns the result with
// its managed fields. A field another manager owns with another value is
// a Conflict naming that manager and the field, unless force.
func (r *Registry) applyConfig(k *Kind, op Operation, live *api.Object, patch []byte, manager string, force bool) (*api.Object, error) {
	fm, err := r.fieldManager(k, subresourceOf(op))
	if err != nil {
		return nil, err
	}
	lu, err := toUnstructured(live)
	if err != nil {
		return nil, err
	}
	applied := &unstructured.Unstructured{}
	if err := applied.UnmarshalJSON(patch); err != nil {
		return nil, api.NewBadRequest("the apply configuration does not decode: %v", err)
	}
	out, err := fm.Apply(lu, applied, manager, force)
	if err != nil {
		return nil, fieldManagerError(k, live.Name, err)
	}
	return fromUnstructured(out)
}

// fieldManagerError maps an error of the field manager to the API: a
// conflict stays a Conflict (its message names the other manager and the
// fields), anything else about the object is a BadRequest.
func fieldManagerError(k *Kind, name string, err error) error {
	var se *apierrors.StatusError
	if errors.As(err, &se) {
		st := se.Status()
		out := api.NewStatus(api.Reason(st.Reason), "%s", st.Message)
		if out.Reason == "" || out.Reason.Code() == 500 {
			out = api.NewStatus(api.ReasonBadRequest, "%s", st.Message)
		}
		out.Details = &api.StatusDetails{Kind: k.Kind, Name: name}
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				out.Details.Causes = append(out.Details.Causes, api.StatusCause{Field: c.Field, Type: string(c.Type), Message: c.Message})
			}
		}
		return out
	}
	return api.NewBadRequest("%s %q: %v", k.Kind, name, err)
}

// emptyLike is the empty live object of a create: obj's type, name and
// namespace.
func emptyLike(obj *api.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(api.APIVersion)
	u.SetKind(obj.Kind)
	u.SetName(obj.Name)
	u.SetNamespace(obj.Namespace)
	return u
}

func toUnstructured(o *api.Object) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("registry: %s %q as unstructured: %w", o.Kind, o.Name, err)
	}
	return u, nil
}

func fromUnstructured(obj runtime.Object) (*api.Object, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("registry: the field manager returned a %T", obj)
	}
	raw, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out := &api.Object{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, api.NewBadRequest("the merged object does not decode: %s", describeDecodeError(err))
	}
	return out, nil
}

// unstructuredScheme converts, defaults and creates cairn's objects for the
// field manager as unstructured ones: cairn serves one version of each
// kind, so a conversion is a copy, and defaults are the kinds' own
// (applied later, by admission).
type unstructuredScheme struct{}

func (unstructuredScheme) Convert(in, out, _ any) error {
	u, ok := in.(*unstructured.Unstructured)
	o, ok2 := out.(*unstructured.Unstructured)
	if !ok || !ok2 {
		return fmt.Errorf("registry: cannot convert %T into %T", in, out)
	}
	o.Object = runtime.DeepCopyJSON(u.Object)
	return nil
}

func (unstructuredScheme) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func (unstructuredScheme) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

func (unstructuredScheme) Default(runtime.Object) {}

func (unstructuredScheme) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// maxApplyAttempts bounds how often an apply switches between its update
// and its create when the object appears and vanishes under it.
const maxApplyAttempts = 4

// Apply applies the server-side apply configuration patch (JSON) of the
// field manager opts.FieldManager (required) to the object ns/name of
// kind, or with status to its status: the configuration is merged into
// the object, each field owned by the managers that set it
// (metadata.managedFields); when the object does not exist it is created
// from the configuration (created true; not for status). The
// configuration must name the object's apiVersion, kind and name. A field
// another manager owns with another value is a Conflict naming that
// manager and the field, unless opts.Force. With opts.DryRun nothing is
// written. It blocks as Update does (and Create, when it creates).
//
// Errors: as Update and Create, plus BadRequest for a configuration that
// does not decode, names another object, or lacks a field manager.
func (r *Registry) Apply(ctx context.Context, kind, ns, name string, patch []byte, status bool, opts api.WriteOptions) (obj *api.Object, created bool, err error) {
	k, u, op, err := r.admitPatch(ctx, kind, ns, name, status)
	if err != nil {
		return nil, false, err
	}
	opts.PatchType = api.ApplyPatch
	return r.apply(ctx, u, k, ns, name, patch, op, opts)
}

// apply is Apply once the caller is admitted. A create is authorized as
// one.
func (r *Registry) apply(ctx context.Context, u identity.User, k *Kind, ns, name string, patch []byte, op Operation, o api.WriteOptions) (*api.Object, bool, error) {
	if o.FieldManager == "" {
		return nil, false, api.NewBadRequest("an apply patch needs a field manager: set the fieldManager query parameter")
	}
	cfg := &api.Object{}
	if err := json.Unmarshal(patch, cfg); err != nil {
		return nil, false, api.NewBadRequest("the apply configuration does not decode: %s", describeDecodeError(err))
	}
	if err := checkApplied(k, ns, name, cfg); err != nil {
		return nil, false, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(patch, &probe); err != nil {
		return nil, false, api.NewBadRequest("the apply configuration is not a JSON object")
	}
	if err := checkPatchFields(k, probe); err != nil {
		return nil, false, err
	}
	for attempt := 0; ; attempt++ {
		it := newPatch(k, ns, name, patch, patchPrecondition(probe), op)
		if it.err != nil {
			return nil, false, it.err
		}
		it.patchType, it.manager, it.force = api.ApplyPatch, o.FieldManager, o.Force
		res, _, err := r.run(ctx, u, []*txnItem{it}, o.DryRun)
		if err == nil {
			return res[0].Object, false, nil
		}
		if !errors.Is(err, store.ErrNotFound) || op == OpUpdateStatus || attempt >= maxApplyAttempts {
			return nil, false, apiError(err, k.Kind, name)
		}
		// Nothing to merge into: the configuration creates the object,
		// if the caller may create.
		if err := r.authorizeFor(ctx, k, u, authz.Attributes{Verb: authz.VerbCreate, Namespace: ns, Name: name}, nil); err != nil {
			return nil, false, err
		}
		empty := &api.Object{TypeMeta: cfg.TypeMeta}
		empty.Name, empty.Namespace = name, cfg.Namespace
		obj, err := r.applyConfig(k, op, empty, patch, o.FieldManager, o.Force)
		if err != nil {
			return nil, false, err
		}
		c := r.newCreate(obj)
		if c.err != nil {
			return nil, false, c.err
		}
		c.applied = true
		res, _, err = r.run(ctx, u, []*txnItem{c}, o.DryRun)
		if err == nil {
			return res[0].Object, true, nil
		}
		if !errors.Is(err, api.ErrAlreadyExists) {
			return nil, false, apiError(err, k.Kind, name)
		}
	}
}

// checkApplied checks an apply configuration against the object it
// addresses (kind k, ns/name) and fills its namespace from the path.
func checkApplied(k *Kind, ns, name string, cfg *api.Object) error {
	if err := checkType(k, cfg); err != nil {
		return err
	}
	switch {
	case cfg.Name == "":
		return api.NewBadRequest("the apply configuration needs metadata.name (%q)", name)
	case cfg.Name != name:
		return api.NewBadRequest("metadata.name %q of the apply configuration does not match the name %q of the URL", cfg.Name, name)
	case k.Namespaced && cfg.Namespace == "":
		cfg.Namespace = ns
	case k.Namespaced && cfg.Namespace != ns:
		return api.NewBadRequest("metadata.namespace %q of the apply configuration does not match the namespace %q of the URL", cfg.Namespace, ns)
	}
	return nil
}
