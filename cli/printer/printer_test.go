package printer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

var now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func obj(t *testing.T, js string) *api.Object {
	t.Helper()
	var o api.Object
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

var installation = api.KindInfo{
	Kind: "Installation", Plural: "installations", Namespaced: true,
	Columns: []api.Column{
		{Name: "Phase", Path: ".status.phase"},
		{Name: "Imports", Path: ".spec.imports", Format: "count"},
		{Name: "Execution", Path: ".status.executionRef", Wide: true},
		{Name: "Updated", Path: ".status.lastError.time", Format: "age"},
	},
}

var secret = api.KindInfo{
	Kind: api.KindSecret, Plural: "secrets", Namespaced: true,
	Sensitive: []string{"data", "stringData"},
	Columns: []api.Column{
		{Name: "Type", Path: ".type"},
		{Name: "Data", Path: ".data", Format: "count"},
		{Name: "Leak", Path: ".data.password"},
	},
}

func TestPrintList_Tables(t *testing.T) {
	a := `{"kind":"Installation","metadata":{"name":"a","namespace":"default","creationTimestamp":"2026-11-22T09:59:55Z","labels":{"app":"x","env":"dev"}},
		"spec":{"imports":[1,2]},"status":{"phase":"Succeeded","executionRef":"a-exec","lastError":{"time":"2026-11-20T10:00:00Z"}}}`
	b := `{"kind":"Installation","metadata":{"name":"preview-42","namespace":"team","creationTimestamp":"2026-11-22T07:00:00Z"}}`
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{
			name: "default columns, AGE appended",
			want: "NAME         PHASE       IMPORTS   UPDATED   AGE\n" +
				"a            Succeeded   2         2d        5s\n" +
				"preview-42   <none>      0         <none>    3h\n",
		},
		{
			name: "wide adds wide columns",
			opts: Options{Format: Wide},
			want: "NAME         PHASE       IMPORTS   EXECUTION   UPDATED   AGE\n" +
				"a            Succeeded   2         a-exec      2d        5s\n" +
				"preview-42   <none>      0         <none>      <none>    3h\n",
		},
		{
			name: "all namespaces puts NAMESPACE first, labels last",
			opts: Options{AllNamespaces: true, ShowLabels: true},
			want: "NAMESPACE   NAME         PHASE       IMPORTS   UPDATED   AGE   LABELS\n" +
				"default     a            Succeeded   2         2d        5s    app=x,env=dev\n" +
				"team        preview-42   <none>      0         <none>    3h    <none>\n",
		},
		{
			name: "no headers",
			opts: Options{NoHeaders: true},
			want: "a            Succeeded   2   2d       5s\n" +
				"preview-42   <none>      0   <none>   3h\n",
		},
		{
			name: "names",
			opts: Options{Format: Name},
			want: "installation/a\ninstallation/preview-42\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Now = func() time.Time { return now }
			p := New(&out, installation, tt.opts)
			if err := p.PrintList([]*api.Object{obj(t, a), obj(t, b)}); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}

func TestPrintList_ClusterScopedKindHasNoNamespaceColumn(t *testing.T) {
	var out bytes.Buffer
	p := New(&out, api.KindInfo{Kind: api.KindNamespace, Columns: []api.Column{{Name: "Status", Path: ".status.phase"}}},
		Options{AllNamespaces: true, Now: func() time.Time { return now }})
	ns := obj(t, `{"kind":"Namespace","metadata":{"name":"default","creationTimestamp":"2026-11-18T10:00:00Z"},"status":{"phase":"Active"}}`)
	if err := p.PrintList([]*api.Object{ns}); err != nil {
		t.Fatal(err)
	}
	want := "NAME      STATUS   AGE\ndefault   Active   4d\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestPrintRow_AlignsWithTableAndStartsWithHeader(t *testing.T) {
	var out bytes.Buffer
	p := New(&out, installation, Options{Now: func() time.Time { return now }})
	x := obj(t, `{"kind":"Installation","metadata":{"name":"x","creationTimestamp":"2026-11-22T09:59:00Z"},"status":{"phase":"Init"}}`)
	if err := p.PrintRow(x); err != nil {
		t.Fatal(err)
	}
	x.Fields["status"] = json.RawMessage(`{"phase":"Progressing"}`)
	if err := p.PrintRow(x); err != nil {
		t.Fatal(err)
	}
	want := "NAME   PHASE   IMPORTS   UPDATED   AGE\n" +
		"x      Init    0         <none>    60s\n" +
		"x      Progressing   0         <none>    60s\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// vault is a test kind whose sensitive fields are not a Secret's: a map
// of plain strings and a single string.
var vault = api.KindInfo{
	Kind: "Vault", Plural: "vaults", Namespaced: true,
	Sensitive: []string{"credentials", "token"},
	Columns: []api.Column{
		{Name: "Keys", Path: ".credentials", Format: "count"},
		{Name: "Token", Path: ".token"},
	},
}

// TestSensitiveFields_ValuesNeverInTablesListingsOrWatches: whatever kind
// declares them, sensitive values show as "<hidden>" in tables and as
// their sizes in listed or watched YAML and JSON; a single object asked
// for by name keeps them, and the printed object is never changed.
func TestSensitiveFields_ValuesNeverInTablesListingsOrWatches(t *testing.T) {
	tests := []struct {
		name     string
		kind     api.KindInfo
		obj      string
		values   []string // must never appear outside a single object
		redacted []string // must appear in listed YAML/JSON
		table    string   // the table's row
		single   string   // in the single object's YAML
	}{
		{
			name: "Secret data",
			kind: secret,
			obj: `{"kind":"Secret","metadata":{"name":"db","namespace":"default","creationTimestamp":"2026-11-22T09:00:00Z"},
				"type":"Opaque","data":{"password":"aHVudGVyMg==","user":"YWRtaW4="}}`,
			values:   []string{"hunter2", "aHVudGVyMg==", "YWRtaW4="},
			redacted: []string{"<redacted: 7 bytes>", "<redacted: 5 bytes>"},
			table:    "db     Opaque   2      <hidden>   60m",
			single:   "password: aHVudGVyMg==",
		},
		{
			name: "a test kind's map and string fields",
			kind: vault,
			obj: `{"kind":"Vault","metadata":{"name":"v","namespace":"default","creationTimestamp":"2026-11-22T09:00:00Z"},
				"credentials":{"apiKey":"s3cr3t-key","pin":"1234"},"token":"tok-123456","spec":{"visible":"yes"}}`,
			values:   []string{"s3cr3t-key", "1234", "tok-123456"},
			redacted: []string{"apiKey", "<redacted: 10 bytes>", "<redacted: 4 bytes>", "yes"},
			table:    "v      2      <hidden>   60m",
			single:   "token: tok-123456",
		},
	}
	for _, tt := range tests {
		for _, f := range []Format{Table, Wide, Name, YAML, JSON} {
			t.Run(tt.name+"/list "+string(f), func(t *testing.T) {
				var out bytes.Buffer
				p := New(&out, tt.kind, Options{Format: f, Now: func() time.Time { return now }})
				if err := p.PrintList([]*api.Object{obj(t, tt.obj)}); err != nil {
					t.Fatal(err)
				}
				for _, v := range tt.values {
					if strings.Contains(out.String(), v) {
						t.Errorf("sensitive value %q printed:\n%s", v, out.String())
					}
				}
				if f == YAML || f == JSON {
					for _, r := range tt.redacted {
						if !strings.Contains(out.String(), r) {
							t.Errorf("%q missing:\n%s", r, out.String())
						}
					}
				}
				if f == Table && !strings.Contains(out.String(), tt.table) {
					t.Errorf("table lacks %q:\n%s", tt.table, out.String())
				}
			})
			t.Run(tt.name+"/watch "+string(f), func(t *testing.T) {
				var out bytes.Buffer
				p := New(&out, tt.kind, Options{Format: f, Now: func() time.Time { return now }})
				if err := p.PrintRow(obj(t, tt.obj)); err != nil {
					t.Fatal(err)
				}
				for _, v := range tt.values {
					if strings.Contains(out.String(), v) {
						t.Errorf("sensitive value %q printed:\n%s", v, out.String())
					}
				}
			})
		}
		t.Run(tt.name+"/single object YAML keeps values", func(t *testing.T) {
			var out bytes.Buffer
			o := obj(t, tt.obj)
			before, _ := json.Marshal(o)
			if err := New(&out, tt.kind, Options{Format: YAML}).PrintObject(o); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.single) {
				t.Errorf("single get -o yaml lost %q:\n%s", tt.single, out.String())
			}
			var list bytes.Buffer
			if err := New(&list, tt.kind, Options{Format: JSON}).PrintList([]*api.Object{o}); err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(o); !bytes.Equal(before, after) {
				t.Errorf("printing changed the object:\n%s\n%s", before, after)
			}
		})
	}
}

// TestSensitiveFields_OnlyWhatTheKindDeclares: redaction follows the
// kind's declaration, not its name or a field's name.
func TestSensitiveFields_OnlyWhatTheKindDeclares(t *testing.T) {
	undeclared := api.KindInfo{Kind: api.KindSecret, Plural: "secrets", Namespaced: true,
		Columns: []api.Column{{Name: "Data", Path: ".data.k"}}}
	o := obj(t, `{"kind":"Secret","metadata":{"name":"plain","creationTimestamp":"2026-11-22T09:00:00Z"},"data":{"k":"dmFsdWU="}}`)
	for _, f := range []Format{Table, JSON} {
		var out bytes.Buffer
		if err := New(&out, undeclared, Options{Format: f, Now: func() time.Time { return now }}).PrintList([]*api.Object{o}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "dmFsdWU=") || strings.Contains(out.String(), "redacted") || strings.Contains(out.String(), "<hidden>") {
			t.Errorf("-o %q of a kind declaring nothing sensitive:\n%s", f, out.String())
		}
	}
}

func TestHide_KeysAndSizesOnly(t *testing.T) {
	o := obj(t, `{"kind":"X","metadata":{"name":"x"},
		"data":{"a":"aHVudGVyMg==","b":"not base64!"},"stringData":{"p":"hunter2"},
		"token":"abc","nested":{"n":{"deep":1}},"list":[1,2],"empty":null}`)
	tests := []struct {
		field string
		want  Hidden
		ok    bool
	}{
		{"data", Hidden{Sizes: map[string]int{"a": 7, "b": 11}}, true},
		{"stringData", Hidden{Sizes: map[string]int{"p": 7}}, true},
		{"token", Hidden{Size: 3}, true},
		{"nested", Hidden{Sizes: map[string]int{"n": len(`{"deep":1}`)}}, true},
		{"list", Hidden{Size: len(`[1,2]`)}, true},
		{"empty", Hidden{}, false},
		{"absent", Hidden{}, false},
	}
	for _, tt := range tests {
		got, ok := Hide(o, tt.field)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Hide(%s) = %+v, %v; want %+v, %v", tt.field, got, ok, tt.want, tt.ok)
		}
	}
}

func TestIsSensitive_ByTopLevelField(t *testing.T) {
	sensitive := []string{"data", "stringData"}
	for path, want := range map[string]bool{
		".data": true, ".data.password": true, "data.k": true, "stringData": true,
		".database": false, ".spec.data": false, ".status": false, "": false,
	} {
		if got := IsSensitive(sensitive, path); got != want {
			t.Errorf("IsSensitive(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestPrintObject_JSONKeepsEnvelopeOrder(t *testing.T) {
	var out bytes.Buffer
	o := obj(t, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Installation","metadata":{"name":"a"},"spec":{"x":1}}`)
	if err := New(&out, installation, Options{Format: JSON}).PrintObject(o); err != nil {
		t.Fatal(err)
	}
	want := "{\n    \"apiVersion\": \"cairn.dev/v1alpha1\",\n    \"kind\": \"Installation\",\n    \"metadata\": {\n        \"name\": \"a\"\n    },\n    \"spec\": {\n        \"x\": 1\n    }\n}\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestPrintRow_YAMLDocumentsSeparated(t *testing.T) {
	var out bytes.Buffer
	p := New(&out, installation, Options{Format: YAML})
	for _, n := range []string{"a", "b"} {
		if err := p.PrintRow(obj(t, `{"kind":"Installation","metadata":{"name":"`+n+`"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	want := "kind: Installation\nmetadata:\n  name: a\n---\nkind: Installation\nmetadata:\n  name: b\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestAge_LikeKubectl(t *testing.T) {
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{5 * time.Second, "5s"},
		{3 * time.Minute, "3m"},
		{3*time.Minute + 20*time.Second, "3m20s"},
		{2 * time.Hour, "120m"},
		{3 * time.Hour, "3h"},
		{4 * 24 * time.Hour, "4d"},
		{400 * 24 * time.Hour, "400d"},
	}
	for _, tt := range tests {
		if got := Age(now.Add(-tt.ago), now); got != tt.want {
			t.Errorf("Age(%v ago) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := Age(time.Time{}, now); got != "<unknown>" {
		t.Errorf("Age(zero) = %q", got)
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"": Table, "wide": Wide, "YAML": YAML, "json": JSON, "name": Name} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("ParseFormat(xml) = %v, want an error listing the formats", err)
	}
}
