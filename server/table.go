package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/column"
	"cairn.dev/cairn/registry"
)

// Tables: a client that asks with Accept
// "application/json;as=Table;v=v1;g=meta.k8s.io" (kubectl get does) gets a
// meta.k8s.io/v1 Table built from the kind's printer columns, the cells
// cairn get prints (package column): NAME first, the kind's columns
// (those marked wide with priority 1, shown by -o wide), AGE last unless
// the kind has one. Each row carries the object's metadata (includeObject
// Metadata, the default), the whole object (Object) or nothing (None).

// The Table versions served.
var (
	tableV1      = mediaOffer{as: "Table", g: "meta.k8s.io", v: "v1"}
	tableV1beta1 = mediaOffer{as: "Table", g: "meta.k8s.io", v: "v1beta1"}
)

// tableFor returns the tabler of a request on rt that asks for a Table,
// nil for one that does not. Errors: BadRequest for a bad includeObject.
func tableFor(r *http.Request, rt *route) (*tabler, error) {
	o := negotiate(r, readOffers...)
	if o != tableV1 && o != tableV1beta1 {
		return nil, nil
	}
	return newTabler(o, rt.kind, r.URL.Query())
}

// tabler renders objects of one kind as Table rows.
type tabler struct {
	offer   mediaOffer
	kind    *registry.Kind
	cols    []api.Column
	include string // None, Metadata or Object
	now     time.Time
	// fields are the top-level fields the columns read.
	fields []string
}

// newTabler prepares the Table rows of kind k for a request's query
// (includeObject). Errors: BadRequest for an unknown includeObject.
func newTabler(offer mediaOffer, k *registry.Kind, q url.Values) (*tabler, error) {
	t := &tabler{offer: offer, kind: k, cols: k.Columns, include: q.Get("includeObject"), now: time.Now()}
	switch t.include {
	case "":
		t.include = "Metadata"
	case "None", "Metadata", "Object":
	default:
		return nil, badField("includeObject", "must be None, Metadata or Object, not %q", short(t.include))
	}
	if !column.HasAge(t.cols) {
		t.cols = append(t.cols[:len(t.cols):len(t.cols)], api.Column{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"})
	}
	for _, c := range t.cols {
		f, _, _ := strings.Cut(strings.TrimPrefix(c.Path, "."), ".")
		t.fields = append(t.fields, f)
	}
	return t, nil
}

// definitions are the Table's column definitions.
func (t *tabler) definitions() []metav1.TableColumnDefinition {
	defs := []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name",
		Description: "the object's name (metadata.name)"}}
	for _, c := range t.cols {
		d := metav1.TableColumnDefinition{Name: c.Name, Type: "string", Description: "the object's " + strings.TrimPrefix(c.Path, ".")}
		if c.Wide {
			d.Priority = 1
		}
		defs = append(defs, d)
	}
	return defs
}

// row is the JSON of one Table row of o.
func (t *tabler) row(o *api.Object) ([]byte, error) {
	m := make(map[string]any, len(t.fields))
	for _, f := range t.fields {
		if _, done := m[f]; done {
			continue
		}
		var raw []byte
		if f == "metadata" {
			var err error
			if raw, err = json.Marshal(&o.ObjectMeta); err != nil {
				return nil, err
			}
		} else {
			raw = o.Field(f)
		}
		var v any
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
		}
		m[f] = v
	}
	cells := make([]any, 0, len(t.cols)+1)
	cells = append(cells, o.Name)
	for _, c := range t.cols {
		cells = append(cells, column.Cell(m, c, t.kind.Sensitive, t.now))
	}
	row := struct {
		Cells  []any           `json:"cells"`
		Object json.RawMessage `json:"object,omitempty"`
	}{Cells: cells}
	switch t.include {
	case "Object":
		raw, err := marshalItem(o)
		if err != nil {
			return nil, err
		}
		row.Object = raw
	case "Metadata":
		meta, err := json.Marshal(&o.ObjectMeta)
		if err != nil {
			return nil, err
		}
		row.Object = append(append([]byte(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":`), meta...), '}')
	}
	return json.Marshal(row)
}

// table is the whole Table of objs, with list metadata meta.
func (t *tabler) table(objs []*api.Object, meta api.ListMeta) (json.RawMessage, error) {
	b := t.head()
	for i, o := range objs {
		raw, err := t.row(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, raw...)
	}
	return t.tail(b, meta), nil
}

// head opens a Table's JSON up to its first row: apiVersion, kind,
// columnDefinitions and `"rows":[`.
func (t *tabler) head() []byte {
	b := appendListHead(nil, api.TypeMeta{APIVersion: "meta.k8s.io/" + t.offer.v, Kind: "Table"})
	defs, _ := json.Marshal(t.definitions()) // plain strings and ints always marshal
	b = append(b, `"columnDefinitions":`...)
	b = append(b, defs...)
	return append(b, `,"rows":[`...)
}

// tail closes a Table's JSON after its last row, with its metadata.
func (t *tabler) tail(b []byte, meta api.ListMeta) []byte {
	b = append(b, "],"...)
	b = appendListMeta(b, meta)
	return append(b, '}')
}
