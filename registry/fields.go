package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"cairn.dev/cairn/api"
)

// Field names are case-sensitive and strict: every top-level field of an
// object must be one its kind declares (Kind.Fields), every metadata field
// one of api.ObjectMeta's, and the typed decoding of a kind matches names
// exactly, at every depth. encoding/json alone would match "datA" to data
// and "metadata.Labels" to labels, and take the last of duplicate keys.

// envelope are the top-level names every object has besides its kind's.
var envelope = []string{"apiVersion", "kind", "metadata"}

// declaredFields returns the top-level fields of a kind whose Go type is t:
// declared when the kind declares them (Spec.Fields), else the JSON fields
// of t. Declared fields must be exactly those of t, so that the list and
// the type cannot drift apart; a mismatch is an error naming both.
func declaredFields(kind string, declared []string, t reflect.Type) ([]string, error) {
	var own []string
	for _, f := range api.FieldNames(t) {
		if !slices.Contains(envelope, f) {
			own = append(own, f)
		}
	}
	if declared == nil {
		return own, nil
	}
	a, b := slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(own))
	if !slices.Equal(a, b) {
		return nil, fmt.Errorf("registry: kind %q declares the fields %s but its Go type has %s",
			kind, strings.Join(a, ", "), strings.Join(b, ", "))
	}
	return slices.Clone(declared), nil
}

// checkFields refuses an object with a top-level field its kind does not
// declare (BadRequest naming the field and listing the kind's fields).
// status is accepted on every kind: it is server-managed, dropped on
// create and ignored by writes to the main resource.
func checkFields(k *Kind, obj *api.Object) error {
	for _, f := range slices.Sorted(maps.Keys(obj.Fields)) {
		if !knownTop(k, f) {
			return unknownTopField(k, f)
		}
	}
	return nil
}

func knownTop(k *Kind, f string) bool {
	return f == api.FieldStatus || slices.Contains(envelope, f) || slices.Contains(k.Fields, f)
}

func unknownTopField(k *Kind, f string) error {
	known := append(slices.Clone(envelope), k.Fields...)
	return api.NewUnknownField(f, f, known, "a "+k.Kind)
}

// checkPatchFields refuses a JSON merge patch that names a top-level field
// the kind does not declare or a metadata field that does not exist (even
// to remove it with null): merged as it is, "metadata.Labels" would be
// ignored or, decoded case-insensitively, replace the labels.
func checkPatchFields(k *Kind, patch map[string]json.RawMessage) error {
	for _, f := range slices.Sorted(maps.Keys(patch)) {
		if !knownTop(k, f) {
			return unknownTopField(k, f)
		}
	}
	raw, ok := patch["metadata"]
	if !ok {
		return nil
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil // null, or not an object: the merge or the decoding says so
	}
	known := api.MetadataFields()
	for _, f := range slices.Sorted(maps.Keys(meta)) {
		if !slices.Contains(known, f) {
			return api.NewUnknownField("metadata."+f, f, known, "metadata")
		}
	}
	return nil
}

// strictDecode decodes raw into v as the typed decoding does, but with
// names matched case-sensitively, and returns a BadRequest naming the
// first unknown or duplicate field, at any depth ("spec.Size"). done
// reports whether v holds the whole of raw: false when another decoding
// error stopped it, which is left to the typed decoding, whose message
// names it.
func strictDecode(kind, name string, raw []byte, v any) (done bool, err error) {
	strict, err := sigsjson.UnmarshalStrict(raw, v)
	if err != nil {
		return false, nil
	}
	if len(strict) == 0 {
		return true, nil
	}
	var msgs []string
	var causes []api.StatusCause
	for _, e := range strict {
		path, what := "", e.Error()
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			path = api.ShowPath(fe.FieldPath())
			what, _, _ = strings.Cut(what, " \"")
			what += didYouMean(reflect.TypeOf(v), fe.FieldPath(), what)
		}
		msg := what + " (field names are case-sensitive and appear once)"
		causes = append(causes, api.StatusCause{Field: path, Type: "FieldValueNotSupported", Message: msg})
		msgs = append(msgs, path+": "+what)
	}
	st := api.NewBadRequest("%s %q: %s (field names are case-sensitive and appear once)", kind, name, strings.Join(msgs, "; "))
	st.Details = &api.StatusDetails{Kind: kind, Name: name, Causes: causes}
	return true, st
}

// didYouMean is ", did you mean NAME?" when the unknown field at path
// likely misspells a field its holder has, else "" (also for duplicates).
func didYouMean(t reflect.Type, path, what string) string {
	if what != "unknown field" {
		return ""
	}
	name := path[strings.LastIndex(path, ".")+1:]
	if k, ok := suggest(name, fieldsAt(t, path)); ok {
		return ", did you mean " + k + "?"
	}
	return ""
}
