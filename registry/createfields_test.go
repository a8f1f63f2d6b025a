package registry_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

// TestCreateFields_RememberedShapeRecordsWhatTheFieldManagerRecords: a
// create of a shape created before copies the managed fields the field
// manager recorded for that shape, with its own manager; for every case, the second object's
// stored managed fields are byte for byte the field manager's own for it
// (the entries' second aside, which is the clock's), and the copy was
// taken (the shape was remembered after the first create).
func TestCreateFields_RememberedShapeRecordsWhatTheFieldManagerRecords(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	data := func(ns, name, js string) *api.Object {
		return testkit.Object(api.KindDataObject, ns, name, testkit.Field("data", js))
	}
	cases := []struct {
		name          string
		first, second *api.Object
		manager       string
	}{
		{"a Secret with data", testkit.Secret("default", "s1", map[string]string{"k": "v"}),
			testkit.Secret("default", "s2", map[string]string{"k": "other value"}), ""},
		{"a Secret with labels, annotations and stringData", testkit.Secret("default", "l1", nil,
			testkit.Labels("app", "a", "example.com/tier", "x"), testkit.Annotations("note", "1"), testkit.StringData(map[string]string{"p": "q"})),
			testkit.Secret("default", "l2", nil,
				testkit.Labels("app", "b", "example.com/tier", "yy"), testkit.Annotations("note", "two"), testkit.StringData(map[string]string{"p": "r"})),
			"kubectl-create"},
		{"a Secret with empty labels", testkit.Secret("default", "e1", nil, testkit.Labels()),
			testkit.Secret("default", "e2", nil, testkit.Labels()), "m"},
		{"a Secret with only a name", testkit.Secret("default", "n1", nil), testkit.Secret("default", "n2", nil), "m"},
		{"a namespace", testkit.Object(api.KindNamespace, "", "team-a"), testkit.Object(api.KindNamespace, "", "team-b"), "m"},
		{"a DataObject with nested maps, nulls and escaped keys",
			data("default", "d1", `{"a":{"b":1,"c":null,"q\"uote":"x","é/ü.ß":true},"e":{}}`),
			data("default", "d2", `{"a":{"b":"two","c":null,"q\"uote":"y","é/ü.ß":false},"e":{}}`), "m"},
		{"a DataObject holding a scalar", data("default", "d3", `"text"`), data("default", "d4", `42`), "m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := api.WriteOptions{FieldManager: tc.manager}
			first, err := r.Create(ctx, tc.first, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !registry.RemembersCreateShape(r, asPlanned(first)) {
				t.Fatal("the shape of the first create was not remembered")
			}
			second := api.WriteOptions{}
			if tc.manager != "" {
				second.FieldManager = tc.manager + "-then-another"
			}
			got, err := r.Create(ctx, tc.second, second)
			if err != nil {
				t.Fatal(err)
			}
			s1, ok1 := registry.CreateShape(asPlanned(first))
			s2, ok2 := registry.CreateShape(asPlanned(got))
			if !ok1 || !ok2 || s1 != s2 {
				t.Fatalf("the two creates differ in shape: %s, %s", s1, s2)
			}
			want := fieldManagerCreate(t, r, got, second.FieldManager)
			if g, w := managedFieldsJSON(t, got), managedFieldsJSON(t, want); g != w {
				t.Fatalf("managed fields\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestCreateFields_ListsTakeTheFieldManager: an object with a list (here
// finalizers) is never served from a remembered shape, and records what
// the field manager records.
func TestCreateFields_ListsTakeTheFieldManager(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	for _, name := range []string{"f1", "f2"} {
		o := testkit.Secret("default", name, nil, testkit.Finalizers("example.com/"+name))
		got, err := r.Create(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if registry.RemembersCreateShape(r, asPlanned(got)) {
			t.Fatal("an object with a list has a remembered shape")
		}
		want := fieldManagerCreate(t, r, got, "")
		if g, w := managedFieldsJSON(t, got), managedFieldsJSON(t, want); g != w {
			t.Fatalf("managed fields\n got %s\nwant %s", g, w)
		}
	}
}

// asPlanned is stored as its create recorded its managed fields: without
// them and without a resourceVersion.
func asPlanned(stored *api.Object) *api.Object {
	o := stored.DeepCopy()
	o.ManagedFields, o.ResourceVersion = nil, ""
	return o
}

// fieldManagerCreate is what the field manager records when stored, as
// written by manager (the system caller's name when ""), is created.
func fieldManagerCreate(t *testing.T, r *registry.Registry, stored *api.Object, manager string) *api.Object {
	t.Helper()
	in := asPlanned(stored)
	if manager == "" {
		manager = stored.ManagedFields[0].Manager
	}
	out, err := registry.FieldManagerCreate(r, in.Kind, in, manager)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// managedFieldsJSON is o's managed fields as JSON, every entry's time set
// to one second.
func managedFieldsJSON(t *testing.T, o *api.Object) string {
	t.Helper()
	mf := make([]metav1.ManagedFieldsEntry, len(o.ManagedFields))
	for i := range o.ManagedFields {
		o.ManagedFields[i].DeepCopyInto(&mf[i])
		if mf[i].Time == nil {
			t.Fatalf("entry %d has no time", i)
		}
		mf[i].Time = &metav1.Time{}
	}
	raw, err := json.Marshal(mf)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestJSONShape: keys and nesting are kept, scalars become 0 and null n;
// an array, an unclosed object or string has no shape.
func TestJSONShape(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`{"a":"x","b":1.5e3,"c":true,"d":null,"e":{}}`, `{"a":0,"b":0,"c":0,"d":n,"e":{}}`, true},
		{` { "a" : { "b" : "x,}" } } `, `{"a":{"b":0}}`, true},
		{`{"k\"ey":"v\"al\\"}`, `{"k\"ey":0}`, true},
		{`{"a":-1,"b":false}`, `{"a":0,"b":0}`, true},
		{`{"a":[]}`, "", false},
		{`{"a":{"b":["x"]}}`, "", false},
		{`{"a":{}`, "", false},
		{`{"a":"x}`, "", false},
	}
	for _, tc := range cases {
		got, ok := registry.JSONShape([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("JSONShape(%s) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCreateFields_CopyIsTheFieldManagersObject: for objects as a create
// hands them to the field manager (fields in any key order, numbers
// written in any way), a create of a remembered shape returns the very
// object the field manager returns, in memory and encoded byte for byte,
// the entries' second aside.
func TestCreateFields_CopyIsTheFieldManagersObject(t *testing.T) {
	r, _ := newRegistry(t)
	data := func(name, js string) *api.Object {
		o := testkit.Object(api.KindDataObject, "default", name, testkit.Field("data", js),
			testkit.Labels("b", "2", "a", "1"), testkit.Annotations("n", "v"))
		o.UID, o.Generation, o.CreationTimestamp = "u-"+name, 1, time.Date(2026, 11, 28, 15, 0, 0, 123456789, time.UTC)
		return o
	}
	cases := []struct {
		name          string
		first, second *api.Object
	}{
		{"keys out of order, numbers written every way",
			data("d1", `{"z":{"y":1.0,"x":-0,"w":1e3,"v":12345678901234567890},"a":"<&>","m":null}`),
			data("d2", `{"z":{"y":2.5,"x":7,"w":1E-3,"v":1},"a":"\u00e9","m":null}`)},
		{"a Secret", testkit.Secret("default", "s1", map[string]string{"b": "1", "a": "2"}),
			testkit.Secret("default", "s2", map[string]string{"b": "3", "a": "4"})},
		{"nothing but a null field", data("n1", `null`), data("n2", `null`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, remembered, err := registry.RecordCreate(r, tc.first, "m1"); err != nil || remembered {
				t.Fatalf("first create: remembered %v, %v", remembered, err)
			}
			got, remembered, err := registry.RecordCreate(r, tc.second, "m2")
			if err != nil || !remembered {
				t.Fatalf("second create: remembered %v, %v", remembered, err)
			}
			want, err := registry.FieldManagerCreate(r, tc.second.Kind, tc.second.DeepCopy(), "m2")
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []*api.Object{got, want} {
				for i := range o.ManagedFields {
					o.ManagedFields[i].Time = &metav1.Time{}
				}
			}
			g, err := got.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			w, err := want.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if string(g) != string(w) {
				t.Fatalf("encoded\n got %s\nwant %s", g, w)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("in memory\n got %#v\nwant %#v", got, want)
			}
		})
	}
}
