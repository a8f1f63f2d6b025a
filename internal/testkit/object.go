package testkit

import (
	"encoding/base64"
	"encoding/json"
	"maps"

	"cairn.dev/cairn/api"
)

// Opt changes an object being built by Object, Secret or Widget.
type Opt func(*api.Object)

// Object builds an object of kind named name in namespace ns ("" for
// cluster-scoped kinds), ready to be created, with opts applied in order.
func Object(kind, ns, name string, opts ...Opt) *api.Object {
	o := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: kind},
		ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name}}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// Secret builds a Secret whose data holds the values of data (plain
// strings, encoded here).
func Secret(ns, name string, data map[string]string, opts ...Opt) *api.Object {
	o := Object(api.KindSecret, ns, name, opts...)
	if len(data) > 0 {
		enc := make(map[string]string, len(data))
		for k, v := range data {
			enc[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		o.SetField("data", mustJSON(enc))
	}
	return o
}

// StringData sets a Secret's write-only stringData to the plain values of
// m, which the API merges into data on a write.
func StringData(m map[string]string) Opt {
	raw := mustJSON(m)
	return func(o *api.Object) { o.SetField("stringData", raw) }
}

// Labels adds the labels kv: key, value, key, value, ... An odd count
// panics.
func Labels(kv ...string) Opt {
	if len(kv)%2 != 0 {
		panic("testkit.Labels: odd number of arguments")
	}
	return func(o *api.Object) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			o.Labels[kv[i]] = kv[i+1]
		}
	}
}

// LabelMap adds the labels of m.
func LabelMap(m map[string]string) Opt {
	return func(o *api.Object) {
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
		maps.Copy(o.Labels, m)
	}
}

// Annotations adds the annotations kv: key, value, ... An odd count panics.
func Annotations(kv ...string) Opt {
	if len(kv)%2 != 0 {
		panic("testkit.Annotations: odd number of arguments")
	}
	return func(o *api.Object) {
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		for i := 0; i < len(kv); i += 2 {
			o.Annotations[kv[i]] = kv[i+1]
		}
	}
}

// OwnedBy adds an owner reference to each owner (read from the API: it
// needs their uids), made by api.OwnerRefTo.
func OwnedBy(owners ...api.Resource) Opt {
	return func(o *api.Object) {
		for _, w := range owners {
			o.OwnerReferences = append(o.OwnerReferences, api.OwnerRefTo(w, false))
		}
	}
}

// ControlledBy adds an owner reference to owner marked controller: true.
func ControlledBy(owner api.Resource) Opt {
	return func(o *api.Object) {
		o.OwnerReferences = append(o.OwnerReferences, api.OwnerRefTo(owner, true))
	}
}

// GenerateName sets metadata.generateName to prefix: build the object with
// an empty name and the API picks a unique one starting with prefix.
func GenerateName(prefix string) Opt {
	return func(o *api.Object) { o.GenerateName = prefix }
}

// Finalizers adds the finalizers f.
func Finalizers(f ...string) Opt {
	return func(o *api.Object) { o.Finalizers = append(o.Finalizers, f...) }
}

// Spec sets the spec to the JSON text js (e.g. `{"size":3}`). Invalid JSON
// panics.
func Spec(js string) Opt { return Field(api.FieldSpec, js) }

// Status sets the status to the JSON text js. The API ignores it on
// create and update; it is for status writes and decoding tests.
func Status(js string) Opt { return Field(api.FieldStatus, js) }

// Field sets the top-level field name to the JSON text js. Invalid JSON
// panics.
func Field(name, js string) Opt {
	if !json.Valid([]byte(js)) {
		panic("testkit.Field: invalid JSON for " + name)
	}
	return func(o *api.Object) { o.SetField(name, json.RawMessage(js)) }
}

// SpecOf sets the spec to v encoded as JSON. A value that does not encode
// panics.
func SpecOf(v any) Opt {
	raw := mustJSON(v)
	return func(o *api.Object) { o.SetField(api.FieldSpec, raw) }
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic("testkit: " + err.Error())
	}
	return raw
}

// Cleaner builds the smallest Cleaner admission accepts: a TTL of an hour
// and one condition over one Secret "s". Tests of status writes use it as
// an object with a status of its own.
func Cleaner(ns, name string, opts ...Opt) *api.Object {
	return Object(api.KindCleaner, ns, name, append([]Opt{
		Spec(`{"ttl":"1h","targets":[{"name":"s","reference":{"kind":"Secret","name":"s"}}],"conditions":["s == null"]}`)}, opts...)...)
}
