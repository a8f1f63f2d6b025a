package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Namespace defines the Namespace kind: cluster-scoped, Active while live
// and Terminating once deleted, until everything in it is gone. Its
// spec.limits bound what it may hold (the registry enforces them); its
// status.usage is filled by the registry on a get and never stored.
func Namespace() registry.Kind {
	return registry.Define(registry.Spec[*api.Namespace]{
		Kind:       api.KindNamespace,
		ShortNames: []string{"ns"},
		Fields:     []string{"spec", "status"},
		Columns: []api.Column{
			{Name: "STATUS", Path: ".status.phase"},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
		Precheck: validateLimits,
		// status.usage is what a server counts when it is read: a client
		// writing back a status it read must not store it.
		Default: func(ns *api.Namespace) { ns.Status.Usage = nil },
		PrepareForCreate: func(_ context.Context, _ *registry.Admission, ns *api.Namespace) error {
			ns.Status.Phase = api.NamespaceActive
			return nil
		},
		PrepareForDelete: func(_ context.Context, _ *registry.Admission, ns *api.Namespace) error {
			ns.Status.Phase = api.NamespaceTerminating
			return nil
		},
	})
}

var limitsPath = field.NewPath("spec", "limits")

// validateLimits checks spec.limits before the typed decode, so that a
// wrong value is a field error naming it: objects a whole number, bytes a
// whole number of bytes given as an integer or a quantity ("256Mi"), both
// not negative. Other shapes are left to the typed decode.
func validateLimits(obj *api.Object) field.ErrorList {
	raw := obj.Field(api.FieldSpec)
	if len(raw) == 0 {
		return nil
	}
	var spec struct {
		Limits map[string]json.RawMessage `json:"limits"`
	}
	if json.Unmarshal(raw, &spec) != nil {
		return nil
	}
	var errs field.ErrorList
	if v, ok := spec.Limits["objects"]; ok && !isNull(v) {
		p := limitsPath.Child("objects")
		i, err := wholeNumber(v)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p, shown(v), "must be a whole number of objects"))
		case i < 0:
			errs = append(errs, field.Invalid(p, i, "must not be negative"))
		}
	}
	if v, ok := spec.Limits["bytes"]; ok && !isNull(v) {
		p := limitsPath.Child("bytes")
		q, err := parseBytes(v)
		_, whole := q.AsInt64()
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(p, shown(v), `must be a number of bytes: an integer or a quantity such as "256Mi"`))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(p, q.String(), "must not be negative"))
		case !whole:
			errs = append(errs, field.Invalid(p, q.String(), "must be a whole number of bytes, below 8Ei"))
		}
	}
	return errs
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// shown is how an invalid value is quoted in a field error: a string as
// it is, anything else as its JSON.
func shown(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

// wholeNumber reads a JSON number that is a whole number.
func wholeNumber(v json.RawMessage) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return 0, err
	}
	n, ok := x.(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	return n.Int64()
}

// parseBytes reads a JSON number or string as a quantity.
func parseBytes(v json.RawMessage) (resource.Quantity, error) {
	var s string
	if json.Unmarshal(v, &s) != nil {
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return resource.Quantity{}, err
		}
		s = n.String()
	}
	return resource.ParseQuantity(s)
}
