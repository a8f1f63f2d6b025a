package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// secretWith is the JSON of a Secret named name whose metadata also holds
// meta (raw JSON members, e.g. `"finalizers":[...]`).
func secretWith(name, meta string) string {
	return `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"` + name + `",` + meta + `}}`
}

// jsonList is a JSON array of n items, item(i) each.
func jsonList(n int, item func(i int) string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item(i))
	}
	b.WriteByte(']')
	return b.String()
}

// jsonMap is a JSON object of n members, key(i): value each.
func jsonMap(n int, key func(i int) string, value string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%q", key(i), value)
	}
	b.WriteByte('}')
	return b.String()
}

func finalizers(n int) string {
	return `"finalizers":` + jsonList(n, func(i int) string { return fmt.Sprintf(`"cairn.dev/f%d"`, i) })
}

func ownerRefs(n int) string {
	return `"ownerReferences":` + jsonList(n, func(i int) string {
		return fmt.Sprintf(`{"kind":"Secret","name":"o%d","uid":"uid-%d"}`, i, i)
	})
}

// wantCause fails the test unless st is a 422 Invalid with a cause of type
// typ on field.
func wantCause(t *testing.T, st *api.Status, field, typ string) {
	t.Helper()
	if st.Code != http.StatusUnprocessableEntity || st.Reason != api.ReasonInvalid || st.Details == nil {
		t.Fatalf("want 422 Invalid, got %d %s: %s", st.Code, st.Reason, st.Message)
	}
	for _, c := range st.Details.Causes {
		if c.Field == field && c.Type == typ {
			return
		}
	}
	t.Fatalf("no %s cause on %s in %+v", typ, field, st.Details.Causes)
}

// TestLimits_MetadataListsBeyondTheirLimitAre422NamingTheField sends
// creates, replaces and patches whose metadata lists exceed their limits
// (100,000 finalizers; 126 and 1,000 owner references, which used to
// overflow etcd's transaction and answer 500; too many labels and
// annotations) and checks that each is a 422 naming the field, and that
// nothing was written.
func TestLimits_MetadataListsBeyondTheirLimitAre422NamingTheField(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	secrets := nsPath("default", "secrets")
	cur := c.do("POST", secrets, testkit.Secret("default", "existing", nil)).expect(t, http.StatusCreated).object(t)
	rev := revision(t, s)

	over := fmt.Sprintf("%d", api.MaxAnnotationBytes)
	cases := []struct {
		name, meta, field, typ string
	}{
		{"100000 finalizers", finalizers(100000), "metadata.finalizers", "FieldValueTooMany"},
		{"one finalizer too many", finalizers(api.MaxFinalizers + 1), "metadata.finalizers", "FieldValueTooMany"},
		{"126 owner references", ownerRefs(126), "metadata.ownerReferences", "FieldValueTooMany"},
		{"1000 owner references", ownerRefs(1000), "metadata.ownerReferences", "FieldValueTooMany"},
		{"too many labels", `"labels":` + jsonMap(api.MaxLabels+1, func(i int) string { return fmt.Sprintf("l%d", i) }, "v"),
			"metadata.labels", "FieldValueTooMany"},
		{"too many annotations", `"annotations":` + jsonMap(api.MaxAnnotations+1, func(i int) string { return fmt.Sprintf("a%d", i) }, ""),
			"metadata.annotations", "FieldValueTooMany"},
		{"annotations over " + over + " bytes", `"annotations":{"big":"` + strings.Repeat("x", api.MaxAnnotationBytes) + `"}`,
			"metadata.annotations", "FieldValueTooLong"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := c.do("POST", secrets, secretWith("new", tc.meta)).status(t)
			wantCause(t, st, tc.field, tc.typ)
			if !strings.Contains(st.Message, tc.field) {
				t.Fatalf("message does not name %s: %s", tc.field, st.Message)
			}
			put := secretWith("existing", `"resourceVersion":"`+cur.ResourceVersion+`",`+tc.meta)
			wantCause(t, c.do("PUT", secrets+"/existing", put).status(t), tc.field, tc.typ)
			wantCause(t, c.do("PATCH", secrets+"/existing", `{"metadata":{`+tc.meta+`}}`,
				"Content-Type", "application/merge-patch+json").status(t), tc.field, tc.typ)
		})
	}
	if got := revision(t, s); got != rev {
		t.Fatalf("refused writes moved the store from revision %d to %d", rev, got)
	}

	// At the limits, a write goes through: 32 existing owners are 32
	// compares in one transaction, well within etcd's default.
	var refs []api.OwnerReference
	for i := range api.MaxOwnerReferences {
		o := c.do("POST", secrets, testkit.Secret("default", fmt.Sprintf("owner%d", i), nil)).expect(t, http.StatusCreated).object(t)
		refs = append(refs, api.OwnerRefTo(o, false))
	}
	full := testkit.Secret("default", "full", nil)
	full.OwnerReferences = refs
	for i := range api.MaxFinalizers {
		full.Finalizers = append(full.Finalizers, fmt.Sprintf("cairn.dev/f%d", i))
	}
	full.Labels = map[string]string{}
	for i := range api.MaxLabels {
		full.Labels[fmt.Sprintf("l%d", i)] = "v"
	}
	got := c.do("POST", secrets, full).expect(t, http.StatusCreated).object(t)
	if len(got.OwnerReferences) != api.MaxOwnerReferences || len(got.Finalizers) != api.MaxFinalizers || len(got.Labels) != api.MaxLabels {
		t.Fatalf("stored %d owners, %d finalizers, %d labels", len(got.OwnerReferences), len(got.Finalizers), len(got.Labels))
	}
}

// TestLimits_DuplicateFinalizersAndOwnerReferencesAre422NamingTheIndex
// sends metadata with a repeated finalizer, two owner references with one
// uid, and two with one kind and name (also when the kind is spelled as
// its plural), and checks the 422 names the repeating item.
func TestLimits_DuplicateFinalizersAndOwnerReferencesAre422NamingTheIndex(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	secrets := nsPath("default", "secrets")
	owner := c.do("POST", secrets, testkit.Secret("default", "owner", nil)).expect(t, http.StatusCreated).object(t)
	ref := func(kind, name, uid string) string {
		return fmt.Sprintf(`{"kind":%q,"name":%q,"uid":%q}`, kind, name, uid)
	}
	cases := []struct {
		name, meta, field string
	}{
		{"a finalizer twice", `"finalizers":["cairn.dev/a","cairn.dev/b","cairn.dev/a"]`, "metadata.finalizers[2]"},
		{"two owners with one uid", `"ownerReferences":[` + ref("Secret", "owner", owner.UID) + "," + ref("Secret", "other", owner.UID) + `]`,
			"metadata.ownerReferences[1].uid"},
		{"two owners with one kind and name", `"ownerReferences":[` + ref("Secret", "owner", owner.UID) + "," + ref("Secret", "owner", "another-uid") + `]`,
			"metadata.ownerReferences[1]"},
		{"one kind spelled twice", `"ownerReferences":[` + ref("Secret", "owner", owner.UID) + "," + ref("secrets", "owner", "another-uid") + `]`,
			"metadata.ownerReferences[1]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := c.do("POST", secrets, secretWith("dependent", tc.meta)).status(t)
			wantCause(t, st, tc.field, "FieldValueDuplicate")
			wantCause(t, c.do("PATCH", secrets+"/owner", `{"metadata":{`+tc.meta+`}}`,
				"Content-Type", "application/merge-patch+json").status(t), tc.field, "FieldValueDuplicate")
		})
	}
	c.do("GET", secrets+"/dependent", nil).expect(t, http.StatusNotFound)
}
