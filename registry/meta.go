package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// validateMeta checks the user-settable metadata of obj.
func validateMeta(k *Kind, obj *api.Object) field.ErrorList {
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
	errs = append(errs, validateLabels(m.Labels)...)
	errs = append(errs, validateAnnotations(m.Annotations)...)
	for i, f := range m.Finalizers {
		p := metaPath.Child("finalizers").Index(i)
		for _, msg := range validation.IsQualifiedName(f) {
			errs = append(errs, field.Invalid(p, f, msg))
		}
		if slices.Index(m.Finalizers, f) != i {
			errs = append(errs, field.Duplicate(p, f))
		}
	}
	controllers := 0
	for i, o := range m.OwnerReferences {
		p := metaPath.Child("ownerReferences").Index(i)
		if o.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), ""))
		}
		if o.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if o.UID == "" {
			errs = append(errs, field.Required(p.Child("uid"), "the owner's uid is required"))
		}
		if o.APIVersion != "" && o.APIVersion != api.APIVersion {
			errs = append(errs, field.NotSupported(p.Child("apiVersion"), o.APIVersion, []string{api.APIVersion}))
		}
		if o.UID != "" && o.UID == m.UID {
			errs = append(errs, field.Invalid(p, o.Name, "an object cannot own itself"))
		}
		if o.Controller {
			controllers++
		}
	}
	if controllers > 1 {
		errs = append(errs, field.Invalid(metaPath.Child("ownerReferences"), controllers,
			"at most one owner reference may set controller: true"))
	}
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
	for i, o := range obj.OwnerReferences {
		if slices.Contains(keep, o) {
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

// maxAnnotationBytes bounds the total size of an object's annotations.
const maxAnnotationBytes = 256 << 10

func validateLabels(l map[string]string) field.ErrorList {
	var errs field.ErrorList
	p := metaPath.Child("labels")
	for k, v := range l {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, "label key: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p.Key(k), v, msg))
		}
	}
	return errs
}

func validateAnnotations(a map[string]string) field.ErrorList {
	var errs field.ErrorList
	p := metaPath.Child("annotations")
	total := 0
	for k, v := range a {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(p, k, "annotation key: "+msg))
		}
		total += len(k) + len(v)
	}
	if total > maxAnnotationBytes {
		errs = append(errs, field.TooLong(p, "", maxAnnotationBytes))
	}
	return errs
}
