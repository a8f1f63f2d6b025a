package registry

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
)

// The checks of an object's metadata lists (labels, annotations,
// finalizers, owner references). Each first compares the list's length
// with its limit (api.MaxLabels and friends) and, over it, reports one
// error without looking at the items; within it, each item is checked once
// and duplicates are found with a set, so the cost is linear in the
// request's size whatever it holds.

// limitFor is the limit a list of an update is held to: max, or the length
// the stored list already has when that is more (an object written before
// the limit existed may shrink its list, e.g. lose its finalizers, but not
// grow it).
func limitFor(max, stored int) int {
	if stored > max {
		return stored
	}
	return max
}

// tooMany is the one error of a list of n items at p over its limit (see
// limitFor), or nil.
func tooMany(p *field.Path, n, max, stored int) field.ErrorList {
	if n > limitFor(max, stored) {
		return field.ErrorList{field.TooMany(p, n, max)}
	}
	return nil
}

func validateLabels(l map[string]string, old *api.ObjectMeta) field.ErrorList {
	p := metaPath.Child("labels")
	if errs := tooMany(p, len(l), api.MaxLabels, len(old.Labels)); errs != nil {
		return errs
	}
	var errs field.ErrorList
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

func validateAnnotations(a map[string]string, old *api.ObjectMeta) field.ErrorList {
	p := metaPath.Child("annotations")
	if errs := tooMany(p, len(a), api.MaxAnnotations, len(old.Annotations)); errs != nil {
		return errs
	}
	if annotationBytes(a) > limitFor(api.MaxAnnotationBytes, annotationBytes(old.Annotations)) {
		return field.ErrorList{field.TooLong(p, "", api.MaxAnnotationBytes)}
	}
	var errs field.ErrorList
	for k := range a {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(p, k, "annotation key: "+msg))
		}
	}
	return errs
}

// annotationBytes is the size of annotations, keys and values together.
func annotationBytes(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

func validateFinalizers(fs []string, old *api.ObjectMeta) field.ErrorList {
	p := metaPath.Child("finalizers")
	if errs := tooMany(p, len(fs), api.MaxFinalizers, len(old.Finalizers)); errs != nil {
		return errs
	}
	if len(fs) == 0 {
		return nil
	}
	var errs field.ErrorList
	seen := make(map[string]int, len(fs))
	for i, f := range fs {
		ip := p.Index(i)
		for _, msg := range validation.IsQualifiedName(f) {
			errs = append(errs, field.Invalid(ip, f, msg))
		}
		if j, dup := seen[f]; dup {
			errs = append(errs, duplicate(ip, f, p.Index(j)))
			continue
		}
		seen[f] = i
	}
	return errs
}

// duplicate reports that the item at p repeats the one at first.
func duplicate(p *field.Path, value any, first *field.Path) *field.Error {
	e := field.Duplicate(p, value)
	e.Detail = "the same as " + first.String()
	return e
}

// ownerName identifies an owner by kind (as registered) and name.
type ownerName struct{ kind, name string }

// validateOwnerRefs checks the form of m's owner references (checkOwners
// checks that they exist): each names a kind, a name and a uid, in cairn's
// API version, not the object itself; at most one is the controller; no
// two share a uid, or a kind and name. A duplicate the stored object
// already had (written before duplicates were refused) is tolerated, so
// that the object can still be updated.
func (r *Registry) validateOwnerRefs(m *api.ObjectMeta, old *api.ObjectMeta) field.ErrorList {
	p := metaPath.Child("ownerReferences")
	refs := m.OwnerReferences
	if errs := tooMany(p, len(refs), api.MaxOwnerReferences, len(old.OwnerReferences)); errs != nil {
		return errs
	}
	if len(refs) == 0 {
		return nil
	}
	var errs field.ErrorList
	controllers := 0
	uids := make(map[string]int, len(refs))
	names := make(map[ownerName]int, len(refs))
	var tolerated *ownerDuplicates // those of old, computed on the first duplicate
	for i, o := range refs {
		ip := p.Index(i)
		if o.Kind == "" {
			errs = append(errs, field.Required(ip.Child("kind"), ""))
		}
		if o.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		}
		if o.UID == "" {
			errs = append(errs, field.Required(ip.Child("uid"), "the owner's uid is required"))
		}
		if o.APIVersion != "" && o.APIVersion != api.APIVersion {
			errs = append(errs, field.NotSupported(ip.Child("apiVersion"), o.APIVersion, []string{api.APIVersion}))
		}
		if o.UID != "" && o.UID == m.UID {
			errs = append(errs, field.Invalid(ip, o.Name, "an object cannot own itself"))
		}
		if o.Controller {
			controllers++
		}
		n := ownerName{r.registeredKind(o.Kind), o.Name}
		j, dupUID := uids[o.UID]
		k, dupName := names[n]
		if (dupUID && o.UID != "") || (dupName && o.Kind != "" && o.Name != "") {
			if tolerated == nil {
				tolerated = r.ownerDuplicatesOf(old)
			}
			switch {
			case dupUID && o.UID != "" && !tolerated.uids[o.UID]:
				errs = append(errs, duplicate(ip.Child("uid"), o.UID, p.Index(j).Child("uid")))
			case dupName && o.Kind != "" && o.Name != "" && !tolerated.names[n]:
				errs = append(errs, duplicate(ip, o.Kind+" "+o.Name, p.Index(k)))
			}
		}
		if !dupUID {
			uids[o.UID] = i
		}
		if !dupName {
			names[n] = i
		}
	}
	if controllers > 1 {
		errs = append(errs, field.Invalid(p, controllers, "at most one owner reference may set controller: true"))
	}
	return errs
}

// registeredKind is the registered name of kind ("secrets" → "Secret"), or
// kind itself when no kind is served by that name.
func (r *Registry) registeredKind(kind string) string {
	if k, err := r.Lookup(kind); err == nil {
		return k.Kind
	}
	return kind
}

// ownerDuplicates are the uids and owner names that appear more than once
// among an object's owner references.
type ownerDuplicates struct {
	uids  map[string]bool
	names map[ownerName]bool
}

// ownerDuplicatesOf returns the duplicates among old's owner references.
func (r *Registry) ownerDuplicatesOf(old *api.ObjectMeta) *ownerDuplicates {
	d := &ownerDuplicates{uids: map[string]bool{}, names: map[ownerName]bool{}}
	uids := make(map[string]bool, len(old.OwnerReferences))
	names := make(map[ownerName]bool, len(old.OwnerReferences))
	for _, o := range old.OwnerReferences {
		n := ownerName{r.registeredKind(o.Kind), o.Name}
		if uids[o.UID] {
			d.uids[o.UID] = true
		}
		if names[n] {
			d.names[n] = true
		}
		uids[o.UID], names[n] = true, true
	}
	return d
}

// validateFinalizerChange forbids adding finalizers to a deleting object
// and adding the server-managed cascade-deletion finalizer to a live one.
// A list over its limit is left to validateFinalizers, which reports it
// once.
// serverFinalizer reports whether f is one of the finalizers only DELETE
// sets (by its propagation policy).
func serverFinalizer(f string) bool {
	return f == api.FinalizerCascadeDeletion || f == api.FinalizerOrphan
}

func validateFinalizerChange(old, obj *api.Object) field.ErrorList {
	if len(obj.Finalizers) == 0 || len(obj.Finalizers) > limitFor(api.MaxFinalizers, len(old.Finalizers)) {
		return nil
	}
	var errs field.ErrorList
	p := metaPath.Child("finalizers")
	had := make(map[string]struct{}, len(old.Finalizers))
	for _, f := range old.Finalizers {
		had[f] = struct{}{}
	}
	for _, f := range obj.Finalizers {
		if _, ok := had[f]; ok {
			continue
		}
		switch {
		case old.Deleting():
			errs = append(errs, field.Forbidden(p, "cannot add finalizer "+f+": the object is being deleted"))
		case serverFinalizer(f):
			errs = append(errs, field.Forbidden(p, f+" is managed by the server"))
		}
	}
	return errs
}
