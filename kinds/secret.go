package kinds

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// maxSecretBytes bounds the total size of a Secret's values.
const maxSecretBytes = 1 << 20

// Secret defines the Secret kind: values are encrypted at rest; the
// write-only stringData is merged into data on every write and never stored.
func Secret() registry.Kind {
	merge := func(s *api.Secret) {
		if len(s.StringData) == 0 {
			s.StringData = nil
			return
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
	return registry.Define(registry.Spec[*api.Secret]{
		Kind:       "Secret",
		Namespaced: true,
		Encrypted:  true,
		Columns: []api.Column{
			{Name: "TYPE", Path: ".type"},
			{Name: "DATA", Path: ".data", Format: "count"},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
		PrepareForCreate: merge,
		PrepareForUpdate: func(s, _ *api.Secret) { merge(s) },
		Default: func(s *api.Secret) {
			if s.Type == "" {
				s.Type = "Opaque"
			}
		},
		Validate: validateSecret,
	})
}

// validateSecret checks key names and sizes. It never puts a value into an
// error: they are secret.
func validateSecret(s *api.Secret) field.ErrorList {
	var errs field.ErrorList
	total := 0
	for _, k := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), "<redacted>", msg))
		}
		total += len(s.Data[k])
	}
	if total > maxSecretBytes {
		errs = append(errs, field.TooLong(field.NewPath("data"), "<redacted>", maxSecretBytes))
	}
	return errs
}

func sortedKeys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }
