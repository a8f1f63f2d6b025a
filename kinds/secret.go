package kinds

import (
	"context"
	"encoding/base64"
	"encoding/json"
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
		Kind:       api.KindSecret,
		Namespaced: true,
		Encrypted:  true,
		Sensitive:  []string{"data", "stringData"},
		Fields:     []string{"data", "stringData", "type"},
		Columns: []api.Column{
			{Name: "TYPE", Path: ".type"},
			{Name: "DATA", Path: ".data", Format: "count"},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
		PrepareForCreate: func(_ context.Context, _ *registry.Admission, s *api.Secret) error {
			merge(s)
			return dropLastAppliedValues(s)
		},
		PrepareForUpdate: func(_ context.Context, _ *registry.Admission, s, _ *api.Secret) error {
			merge(s)
			return dropLastAppliedValues(s)
		},
		Default: func(s *api.Secret) {
			if s.Type == "" {
				s.Type = "Opaque"
			}
		},
		Precheck: checkBase64,
		Validate: func(_ context.Context, _ *registry.Admission, s *api.Secret) field.ErrorList {
			return validateSecret(s)
		},
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

// checkBase64 names each data key whose value is not base64, before the
// decoder rejects the object without saying where.
func checkBase64(obj *api.Object) field.ErrorList {
	raw := obj.Field("data")
	if raw == nil {
		return nil
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("data"), "<redacted>", "must be an object of base64 strings")}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(data)) {
		v, ok := data[k].(string)
		if !ok {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), "<redacted>", "must be a base64 string"))
			continue
		}
		if _, err := base64.StdEncoding.DecodeString(v); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), "<redacted>",
				"must be base64-encoded (use stringData for plain values)"))
		}
	}
	return errs
}

// LastAppliedAnnotation is where `kubectl apply` keeps the configuration
// it applied last, as JSON.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// dropLastAppliedValues removes data and stringData from the configuration
// `kubectl apply` records in the LastAppliedAnnotation of a Secret: the
// annotation is metadata, which lists and watches show, and a Secret's
// values never appear there. kubectl then sees those fields as never
// applied: a later apply sends them again (the same values change
// nothing), and a key removed from the configuration is not deleted by it
// (delete it with a patch). An annotation that is not a JSON object is
// left to kubectl.
func dropLastAppliedValues(s *api.Secret) error {
	raw, ok := s.Annotations[LastAppliedAnnotation]
	if !ok {
		return nil
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &cfg) != nil || cfg == nil {
		return nil
	}
	_, hasData := cfg["data"]
	_, hasString := cfg["stringData"]
	if !hasData && !hasString {
		return nil
	}
	delete(cfg, "data")
	delete(cfg, "stringData")
	out, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	s.Annotations = maps.Clone(s.Annotations)
	s.Annotations[LastAppliedAnnotation] = string(out) + "\n"
	return nil
}
