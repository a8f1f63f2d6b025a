package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestCRUD_SecretOverHTTPWithCodes(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")

	created := c.do("POST", coll, testkit.Secret("default", "db", map[string]string{"password": "hunter2"})).expect(t, http.StatusCreated).object(t)
	if created.UID == "" || created.ResourceVersion == "" || created.Generation != 1 || created.CreationTimestamp.IsZero() {
		t.Fatalf("server-set fields missing: %+v", created.ObjectMeta)
	}
	if st := c.do("POST", coll, testkit.Secret("default", "db", nil)).expect(t, http.StatusConflict).status(t); st.Reason != api.ReasonAlreadyExists {
		t.Fatalf("duplicate create: reason %s", st.Reason)
	}

	got := c.do("GET", coll+"/db", nil).expect(t, http.StatusOK).object(t)
	if got.UID != created.UID {
		t.Fatalf("get: uid %s, want %s", got.UID, created.UID)
	}
	var data map[string][]byte
	if err := json.Unmarshal(got.Field("data"), &data); err != nil || string(data["password"]) != "hunter2" {
		t.Fatalf("get data: %s (%v)", got.Field("data"), err)
	}
	if st := c.do("GET", coll+"/nope", nil).expect(t, http.StatusNotFound).status(t); st.Reason != api.ReasonNotFound {
		t.Fatalf("get missing: reason %s", st.Reason)
	}

	got.Labels = map[string]string{"app": "web"}
	updated := c.do("PUT", coll+"/db", got).expect(t, http.StatusOK).object(t)
	if updated.Labels["app"] != "web" || updated.ResourceVersion == got.ResourceVersion {
		t.Fatalf("put: %+v", updated.ObjectMeta)
	}

	patched := c.do("PATCH", coll+"/db", `{"metadata":{"annotations":{"note":"x"}}}`,
		"Content-Type", "application/merge-patch+json").expect(t, http.StatusOK).object(t)
	if patched.Annotations["note"] != "x" || patched.Labels["app"] != "web" {
		t.Fatalf("patch: %+v", patched.ObjectMeta)
	}

	list := c.do("GET", coll, nil).expect(t, http.StatusOK).list(t)
	if list.Kind != "SecretList" || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %s", c.do("GET", coll, nil).body)
	}

	// DELETE marks (202) while the cascade finalizer remains ...
	marked := c.do("DELETE", coll+"/db", nil).expect(t, http.StatusAccepted).object(t)
	if !marked.Deleting() || !marked.HasFinalizer(api.FinalizerCascadeDeletion) {
		t.Fatalf("delete: %+v", marked.ObjectMeta)
	}
	c.do("GET", coll+"/db", nil).expect(t, http.StatusOK)
	// ... and an update that drops the last finalizer removes the object.
	c.do("PATCH", coll+"/db", `{"metadata":{"finalizers":null}}`, "Content-Type", "application/merge-patch+json").expect(t, http.StatusOK)
	c.do("GET", coll+"/db", nil).expect(t, http.StatusNotFound)
	c.do("DELETE", coll+"/db", nil).expect(t, http.StatusNotFound)
}

func TestCRUD_NamespacesAreClusterScoped(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	ns := testkit.Object(api.KindNamespace, "", "team-a")
	c.do("POST", path("namespaces"), ns).expect(t, http.StatusCreated)
	got := c.do("GET", path("namespaces", "team-a"), nil).expect(t, http.StatusOK).object(t)
	if got.Namespace != "" || got.Name != "team-a" {
		t.Fatalf("namespace: %+v", got.ObjectMeta)
	}
	names := []string{}
	for _, o := range c.do("GET", path("namespaces"), nil).expect(t, http.StatusOK).list(t).Items {
		names = append(names, o.Name)
	}
	if !slices.Equal(names, []string{"default", "team-a"}) {
		t.Fatalf("namespaces: %v", names)
	}
	// A secret in the new namespace is listed across namespaces.
	c.do("POST", nsPath("team-a", "secrets"), testkit.Secret("", "s", nil)).expect(t, http.StatusCreated)
	c.do("POST", nsPath("default", "secrets"), testkit.Secret("", "s", nil)).expect(t, http.StatusCreated)
	all := c.do("GET", path("secrets"), nil).expect(t, http.StatusOK).list(t)
	if len(all.Items) != 2 {
		t.Fatalf("all-namespaces list has %d items", len(all.Items))
	}
	if st := c.do("DELETE", path("namespaces", "default"), nil).expect(t, http.StatusForbidden).status(t); st.Reason != api.ReasonForbidden {
		t.Fatalf("delete default namespace: %s", st.Reason)
	}
}

func TestUpdate_StaleResourceVersionConflicts(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	p := nsPath("default", "secrets", "s")
	first := c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "s", nil)).expect(t, http.StatusCreated).object(t)
	first.Labels = map[string]string{"round": "1"}
	c.do("PUT", p, first).expect(t, http.StatusOK)

	first.Labels = map[string]string{"round": "2"} // still carries the first resourceVersion
	if st := c.do("PUT", p, first).expect(t, http.StatusConflict).status(t); st.Reason != api.ReasonConflict {
		t.Fatalf("stale PUT: reason %s", st.Reason)
	}
	stalePatch := `{"metadata":{"resourceVersion":"` + first.ResourceVersion + `","labels":{"round":"3"}}}`
	c.do("PATCH", p, stalePatch, "Content-Type", "application/merge-patch+json").expect(t, http.StatusConflict)
	if got := c.do("GET", p, nil).object(t); got.Labels["round"] != "1" {
		t.Fatalf("a conflicting write changed the object: %v", got.Labels)
	}
}

func TestStatus_SubresourceIsolation(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	c := newClient(t, s)
	p := nsPath("default", "widgets", "w")
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)

	// PUT on the status subresource writes status only.
	w := c.do("GET", p, nil).object(t)
	w.SetField("status", json.RawMessage(`{"phase":"Ready"}`))
	w.SetField("spec", json.RawMessage(`{"size":99}`))
	w.Labels = map[string]string{"sneaky": "yes"}
	out := c.do("PUT", p+"/status", w).expect(t, http.StatusOK).object(t)
	if string(out.Field("status")) != `{"phase":"Ready"}` || string(out.Field("spec")) != `{"size":1}` || out.Labels != nil || out.Generation != 1 {
		t.Fatalf("status PUT changed more than status: %s", c.do("GET", p, nil).body)
	}

	// PUT on the main resource never changes status.
	w = c.do("GET", p, nil).object(t)
	w.SetField("status", json.RawMessage(`{"phase":"Hacked"}`))
	w.SetField("spec", json.RawMessage(`{"size":2}`))
	out = c.do("PUT", p, w).expect(t, http.StatusOK).object(t)
	if string(out.Field("status")) != `{"phase":"Ready"}` || string(out.Field("spec")) != `{"size":2}` || out.Generation != 2 {
		t.Fatalf("main PUT: status %s spec %s generation %d", out.Field("status"), out.Field("spec"), out.Generation)
	}

	// PATCH follows the same split.
	out = c.do("PATCH", p+"/status", `{"status":{"phase":"Done"},"spec":{"size":5}}`, "Content-Type", "application/merge-patch+json").expect(t, http.StatusOK).object(t)
	if string(out.Field("status")) != `{"phase":"Done"}` || string(out.Field("spec")) != `{"size":2}` {
		t.Fatalf("status PATCH: %s", c.do("GET", p, nil).body)
	}
	out = c.do("PATCH", p, `{"status":{"phase":"Nope"}}`, "Content-Type", "application/json").expect(t, http.StatusOK).object(t)
	if string(out.Field("status")) != `{"phase":"Done"}` {
		t.Fatalf("main PATCH changed status: %s", out.Field("status"))
	}
	if got := c.do("GET", p+"/status", nil).expect(t, http.StatusOK).object(t); got.Name != "w" {
		t.Fatalf("GET status: %+v", got.ObjectMeta)
	}
}

func TestList_LabelSelectorLimitAndContinue(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	for i := range 5 {
		b := testkit.Secret("default", "s"+strconv.Itoa(i), nil, testkit.Labels("tier", []string{"web", "db"}[i%2]))
		c.do("POST", nsPath("default", "secrets"), b).expect(t, http.StatusCreated)
	}
	q := url.Values{"labelSelector": {"tier in (web)"}}
	web := c.do("GET", nsPath("default", "secrets")+"?"+q.Encode(), nil).expect(t, http.StatusOK).list(t)
	if len(web.Items) != 3 {
		t.Fatalf("selector: %d items, want 3", len(web.Items))
	}

	var names []string
	cont := ""
	for pages := 0; ; pages++ {
		q := url.Values{"limit": {"2"}, "continue": {cont}}
		page := c.do("GET", nsPath("default", "secrets")+"?"+q.Encode(), nil).expect(t, http.StatusOK).list(t)
		if len(page.Items) > 2 || pages > 3 {
			t.Fatalf("page %d has %d items", pages, len(page.Items))
		}
		for _, o := range page.Items {
			names = append(names, o.Name)
		}
		if cont = page.Continue; cont == "" {
			break
		}
	}
	if !slices.Equal(names, []string{"s0", "s1", "s2", "s3", "s4"}) {
		t.Fatalf("paged names %v", names)
	}
}

func TestDelete_ForceIsForAdminsOnly(t *testing.T) {
	s := servertest.Start(t)
	admin := newClient(t, s)
	user := admin.as(s.NewToken(t, identityUser("alice")))
	p := nsPath("default", "secrets", "s")
	admin.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "s", nil)).expect(t, http.StatusCreated)

	if st := user.do("DELETE", p+"?force=true", nil).expect(t, http.StatusForbidden).status(t); st.Reason != api.ReasonForbidden {
		t.Fatalf("non-admin force: reason %s", st.Reason)
	}
	if got := admin.do("GET", p, nil).expect(t, http.StatusOK).object(t); got.Deleting() {
		t.Fatal("a refused force delete marked the object")
	}
	user.do("DELETE", p, nil).expect(t, http.StatusAccepted)
	// The admin's force delete removes the deleting object despite its finalizer.
	admin.do("DELETE", p+"?force=true", nil).expect(t, http.StatusOK)
	admin.do("GET", p, nil).expect(t, http.StatusNotFound)
}

func TestDelete_PreconditionsFromQueryOrBody(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	p := nsPath("default", "secrets", "s")
	obj := c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "s", nil)).expect(t, http.StatusCreated).object(t)

	c.do("DELETE", p+"?uid=other", nil).expect(t, http.StatusConflict)
	c.do("DELETE", p, `{"preconditions":{"resourceVersion":"1"}}`).expect(t, http.StatusConflict)
	st := c.do("DELETE", p+"?uid="+obj.UID, `{"preconditions":{"uid":"other"}}`).expect(t, http.StatusBadRequest).status(t)
	if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "preconditions.uid" {
		t.Fatalf("disagreeing preconditions: %+v", st)
	}
	if got := c.do("GET", p, nil).object(t); got.Deleting() {
		t.Fatal("a failed precondition marked the object")
	}
	c.do("DELETE", p, `{"preconditions":{"uid":"`+obj.UID+`","resourceVersion":"`+obj.ResourceVersion+`"}}`).expect(t, http.StatusAccepted)
}

func TestServertest_TwoServersShareOneStore(t *testing.T) {
	s1 := servertest.Start(t)
	s2 := servertest.Start(t, servertest.SharedWith(s1))
	newClient(t, s1).do("POST", nsPath("default", "secrets"), testkit.Secret("default", "shared", map[string]string{"k": "v"})).expect(t, http.StatusCreated)
	if err := s1.Stop(); err != nil {
		t.Fatal(err)
	}
	got := newClient(t, s2).do("GET", nsPath("default", "secrets", "shared"), nil).expect(t, http.StatusOK).object(t)
	var data map[string][]byte
	if err := json.Unmarshal(got.Field("data"), &data); err != nil || string(data["k"]) != "v" {
		t.Fatalf("second server reads the secret as %s (%v)", got.Field("data"), err)
	}
	// s1's admin token is valid on s2 too: tokens live in the shared store.
	newClient(t, s2).as(s1.Token).do("GET", path("secrets"), nil).expect(t, http.StatusOK)
}
