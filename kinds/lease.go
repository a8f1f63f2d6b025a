package kinds

import (
	"context"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// maxHolderBytes bounds a Lease's holderIdentity (a URL).
const maxHolderBytes = 1 << 10

// Lease defines the Lease kind: cluster-scoped leader-election records,
// written by the candidates of package lease.
func Lease() registry.Kind {
	return registry.Define(registry.Spec[*api.Lease]{
		Kind:   api.KindLease,
		Fields: []string{"spec"},
		Columns: []api.Column{
			{Name: "HOLDER", Path: ".spec.holderIdentity"},
			{Name: "RENEWED", Path: ".spec.renewTime", Format: "age"},
			{Name: "TRANSITIONS", Path: ".spec.leaseTransitions", Wide: true},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
		Validate: func(_ context.Context, _ *registry.Admission, l *api.Lease) field.ErrorList {
			return validateLease(l)
		},
	})
}

// validateLease bounds the holder's size and requires a positive duration.
func validateLease(l *api.Lease) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(l.Spec.HolderIdentity) > maxHolderBytes {
		errs = append(errs, field.TooLong(spec.Child("holderIdentity"), "", maxHolderBytes))
	}
	if l.Spec.LeaseDurationSeconds < 1 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), l.Spec.LeaseDurationSeconds, "must be at least 1"))
	}
	if l.Spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), l.Spec.LeaseTransitions, "must not be negative"))
	}
	return errs
}
