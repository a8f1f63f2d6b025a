package registry

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

var metaPath = field.NewPath("metadata")

// checkType fills an empty apiVersion and rejects a wrong one, a kind
// that does not match, and a top-level field the kind does not declare.
func checkType(k *Kind, obj *api.Object) error {
	if obj.APIVersion == "" {
		obj.APIVersion = api.APIVersion
	}
	if obj.APIVersion != api.APIVersion {
		return api.NewBadRequest("apiVersion %q is not served: use %q", obj.APIVersion, api.APIVersion)
	}
	if obj.Kind != k.Kind {
		return api.NewBadRequest("kind %q does not match the resource %q", obj.Kind, k.Plural)
	}
	return checkFields(k, obj)
}

// validateMeta checks the user-settable metadata of obj; old is the
// stored object an update replaces (nil for a create). Each list is checked
// against its limit (api.MaxFinalizers and friends) before its items, in
// time linear in its length; a list over its limit gets one TooMany (or
// TooLong) error and no error per item. A list that old already held over
// its limit may stay so as long as it does not grow (see limitFor).
func (r *Registry) validateMeta(k *Kind, obj, old *api.Object) field.ErrorList {
	var errs field.ErrorList
	m := &obj.ObjectMeta
	if m.Name == "" {
		errs = append(errs, field.Required(metaPath.Child("name"), "a name (or generateName) is required"))
	} else {
		for _, msg := range validation.IsDNS1123Label(m.Name) {
			errs = append(errs, field.Invalid(metaPath.Child("name"), m.Name, msg))
		}
	}
	if k.Namespaced {
		if m.Namespace == "" {
			errs = append(errs, field.Required(metaPath.Child("namespace"), "a namespace is required"))
		} else {
			for _, msg := range validation.IsDNS1123Label(m.Namespace) {
				errs = append(errs, field.Invalid(metaPath.Child("namespace"), m.Namespace, msg))
			}
		}
	} else if m.Namespace != "" {
		errs = append(errs, field.Forbidden(metaPath.Child("namespace"), k.Kind+" is not namespaced"))
	}
	was := &api.ObjectMeta{} // a create is held to the limits as they are
	if old != nil {
		was = &old.ObjectMeta
	}
	errs = append(errs, validateLabels(m.Labels, was)...)
	errs = append(errs, validateAnnotations(m.Annotations, was)...)
	if v, ok := m.Annotations[api.AnnotationDeletionProtection]; ok && v != "true" && v != "false" {
		errs = append(errs, field.NotSupported(metaPath.Child("annotations").Key(api.AnnotationDeletionProtection), v, []string{"true", "false"}))
	}
	errs = append(errs, validateFinalizers(m.Finalizers, was)...)
	errs = append(errs, r.validateOwnerRefs(m, was)...)
	return errs
}

// checkOwners requires every owner reference of obj (but those in keep,
// already validated) to name a live object of a known kind in the same
// namespace with the same uid, and rewrites each kind to its registered
// name. An owner created in the same transaction (in pend) is accepted as
// it is: its create's own condition guards it. For the others it returns
// guards that keep them so until the write commits.
func (r *Registry) checkOwners(ctx context.Context, k *Kind, obj *api.Object, keep []api.OwnerReference, pend pending) ([]ownerGuard, error) {
	var guards []ownerGuard
	var errs field.ErrorList
	if len(obj.OwnerReferences) == 0 {
		return nil, nil
	}
	kept := make(map[api.OwnerReference]struct{}, len(keep))
	for _, o := range keep {
		kept[o] = struct{}{}
	}
	for i, o := range obj.OwnerReferences {
		if _, ok := kept[o]; ok {
			continue
		}
		p := metaPath.Child("ownerReferences").Index(i)
		ok, err := r.Lookup(o.Kind)
		if err != nil {
			errs = append(errs, field.NotSupported(p.Child("kind"), o.Kind, kindNames(r)))
			continue
		}
		// Store the kind as registered ("secrets" → "Secret"), so that
		// readers can compare kinds exactly.
		obj.OwnerReferences[i].Kind = ok.Kind
		if ok.Namespaced != k.Namespaced {
			errs = append(errs, field.Invalid(p.Child("kind"), o.Kind,
				"owners must be in the same namespace as their dependents (a namespaced object is owned by its Namespace implicitly)"))
			continue
		}
		key := r.key(ok, obj.Namespace, o.Name)
		if uid, created := pend[key]; created {
			if uid != o.UID {
				errs = append(errs, field.Invalid(p.Child("uid"), o.UID,
					fmt.Sprintf("%s %q, created in the same transaction, has uid %s", ok.Kind, o.Name, uid)))
			}
			continue
		}
		cur, err := r.readGuard(ctx, ok, obj.Namespace, o.Name, func(s *stored) bool {
			return s.obj.UID == o.UID && !s.obj.Deleting()
		})
		if errors.Is(err, store.ErrNotFound) {
			errs = append(errs, field.NotFound(p, fmt.Sprintf("%s %q in namespace %q", ok.Kind, o.Name, obj.Namespace)))
			continue
		}
		if err != nil {
			return nil, err
		}
		if cur.obj.UID != o.UID {
			errs = append(errs, field.Invalid(p.Child("uid"), o.UID,
				fmt.Sprintf("%s %q has uid %s", ok.Kind, o.Name, cur.obj.UID)))
			continue
		}
		if cur.obj.Deleting() {
			return nil, api.NewForbidden(k.Kind, obj.Name, fmt.Sprintf("owner %s %q is being deleted", ok.Kind, o.Name))
		}
		guards = append(guards, ownerGuard{key: key, rev: cur.rev})
	}
	if len(errs) > 0 {
		return nil, api.NewInvalid(k.Kind, obj.Name, errs)
	}
	return guards, nil
}

func kindNames(r *Registry) []string {
	var names []string
	for _, k := range r.Kinds() {
		names = append(names, k.Kind)
	}
	return names
}
