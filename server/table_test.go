package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

func decodeTable(t *testing.T, body []byte) metav1.Table {
	t.Helper()
	var tbl metav1.Table
	if err := json.Unmarshal(body, &tbl); err != nil {
		t.Fatalf("not a Table: %v: %s", err, body)
	}
	if tbl.Kind != "Table" || tbl.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("kind %q apiVersion %q", tbl.Kind, tbl.APIVersion)
	}
	return tbl
}

func TestTable_ListHasTheKindsColumnsAndHidesSecretValues(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "db", map[string]string{"password": "hunter2", "user": "u"})).expect(t, http.StatusCreated)
	r := c.do("GET", coll, nil, "Accept", tableAccept).expect(t, http.StatusOK)
	if ct := r.header.Get("Content-Type"); !strings.Contains(ct, "as=Table") {
		t.Fatalf("Content-Type %q", ct)
	}
	tbl := decodeTable(t, r.body)
	var names []string
	for _, d := range tbl.ColumnDefinitions {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "Name,TYPE,DATA,AGE" {
		t.Fatalf("columns %v", names)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "db" || tbl.Rows[0].Cells[1] != "Opaque" || tbl.Rows[0].Cells[2] != "2" {
		t.Fatalf("rows %+v", tbl.Rows)
	}
	if strings.Contains(string(r.body), "aHVudGVyMg") || strings.Contains(string(r.body), "hunter2") {
		t.Fatal("a secret value is in the table")
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(tbl.Rows[0].Object.Raw, &meta); err != nil || meta.Kind != "PartialObjectMetadata" || meta.Name != "db" || meta.Namespace != "default" {
		t.Fatalf("row object %s (%v)", tbl.Rows[0].Object.Raw, err)
	}
	if tbl.ResourceVersion == "" {
		t.Fatal("the table has no resourceVersion")
	}
	// includeObject=None leaves the object out; Object puts all of it in.
	none := decodeTable(t, c.do("GET", coll+"?includeObject=None", nil, "Accept", tableAccept).expect(t, http.StatusOK).body)
	if len(none.Rows[0].Object.Raw) != 0 {
		t.Fatalf("includeObject=None: %s", none.Rows[0].Object.Raw)
	}
	c.do("GET", coll+"?includeObject=Everything", nil, "Accept", tableAccept).expect(t, http.StatusBadRequest)
	// A plain JSON client still gets the list.
	if l := c.do("GET", coll, nil).expect(t, http.StatusOK).list(t); l.Kind != "SecretList" {
		t.Fatalf("plain JSON got %q", l.Kind)
	}
}

func TestTable_OneObjectAndWideColumns(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	tbl := decodeTable(t, c.do("GET", api.BasePath+"/namespaces/default", nil, "Accept", tableAccept).expect(t, http.StatusOK).body)
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "default" {
		t.Fatalf("rows %+v", tbl.Rows)
	}
	for _, k := range s.Registry.KindDefs() {
		for _, col := range k.Columns {
			if !col.Wide {
				continue
			}
			tbl := decodeTable(t, c.do("GET", api.BasePath+"/"+k.Plural+"?limit=1", nil, "Accept", tableAccept).expect(t, http.StatusOK).body)
			for _, d := range tbl.ColumnDefinitions {
				if d.Name == col.Name && d.Priority != 1 {
					t.Errorf("%s's wide column %s has priority %d, want 1 (shown by -o wide)", k.Kind, col.Name, d.Priority)
				}
			}
		}
	}
}

func TestTable_WatchSendsEachChangeAsATableRow(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	body := openStream(t, s, coll+"?watch=true&fieldSelector=metadata.name%3Dw", "Accept", tableAccept)
	c.do("POST", coll, testkit.Secret("default", "w", nil)).expect(t, http.StatusCreated)
	var ev struct {
		Type   string
		Object json.RawMessage
	}
	if err := json.NewDecoder(body).Decode(&ev); err != nil {
		t.Fatal(err)
	}
	tbl := decodeTable(t, ev.Object)
	if ev.Type != api.Added || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "w" {
		t.Fatalf("%s %+v", ev.Type, tbl.Rows)
	}
}
