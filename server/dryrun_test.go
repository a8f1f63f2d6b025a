package server_test

import (
	"net/http"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// A dry run makes every check of the write and answers the object as it
// would be, and writes nothing: the store's revision does not move.
func TestDryRun_EveryWriteChecksAndWritesNothing(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	existing := c.do("POST", coll, testkit.Secret("default", "existing", map[string]string{"k": "v"})).expect(t, http.StatusCreated).object(t)
	merge := []string{"Content-Type", string(api.MergePatch)}
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		hdr    []string
		code   int
		check  func(t *testing.T, out *api.Object)
	}{
		{name: "create", method: "POST", path: coll + "?dryRun=All", body: testkit.Secret("default", "new", nil), code: http.StatusCreated,
			check: func(t *testing.T, out *api.Object) {
				if out.Name != "new" || out.UID == "" || out.ResourceVersion != "" || out.CreationTimestamp.IsZero() {
					t.Fatalf("dry-run create answered %+v: want the object with its uid, no resourceVersion", out.ObjectMeta)
				}
			}},
		{name: "create of a taken name", method: "POST", path: coll + "?dryRun=All", body: testkit.Secret("default", "existing", nil), code: http.StatusConflict},
		{name: "invalid create", method: "POST", path: coll + "?dryRun=All", body: testkit.Secret("default", "Bad_Name", nil), code: http.StatusUnprocessableEntity},
		{name: "update", method: "PUT", path: coll + "/existing?dryRun=All",
			body: testkit.Secret("default", "existing", nil, testkit.Labels("dry", "run")), code: http.StatusOK,
			check: func(t *testing.T, out *api.Object) {
				if out.Labels["dry"] != "run" || out.ResourceVersion != existing.ResourceVersion {
					t.Fatalf("dry-run update answered labels %v at %s, want the new label at the current version %s", out.Labels, out.ResourceVersion, existing.ResourceVersion)
				}
			}},
		{name: "merge patch", method: "PATCH", path: coll + "/existing?dryRun=All", body: `{"metadata":{"labels":{"p":"1"}}}`, hdr: merge, code: http.StatusOK,
			check: func(t *testing.T, out *api.Object) {
				if out.Labels["p"] != "1" {
					t.Fatalf("dry-run patch answered labels %v", out.Labels)
				}
			}},
		{name: "JSON patch", method: "PATCH", path: coll + "/existing?dryRun=All", body: `[{"op":"add","path":"/metadata/labels","value":{"j":"1"}}]`,
			hdr: []string{"Content-Type", string(api.JSONPatch)}, code: http.StatusOK,
			check: func(t *testing.T, out *api.Object) {
				if out.Labels["j"] != "1" {
					t.Fatalf("dry-run JSON patch answered labels %v", out.Labels)
				}
			}},
		{name: "delete", method: "DELETE", path: coll + "/existing?dryRun=All", code: http.StatusAccepted,
			check: func(t *testing.T, out *api.Object) {
				if !out.Deleting() || !out.HasFinalizer(api.FinalizerCascadeDeletion) {
					t.Fatalf("dry-run delete answered %+v, want the deletion mark", out.ObjectMeta)
				}
			}},
		{name: "delete by its body", method: "DELETE", path: coll + "/existing", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"],"propagationPolicy":"Background"}`,
			code: http.StatusOK},
		{name: "forced delete", method: "DELETE", path: coll + "/existing?dryRun=All&force=true", code: http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := revision(t, s)
			r := c.do(tc.method, tc.path, tc.body, tc.hdr...).expect(t, tc.code)
			if tc.check != nil {
				tc.check(t, r.object(t))
			}
			if after := revision(t, s); after != before {
				t.Fatalf("a dry run wrote: the store went from revision %d to %d", before, after)
			}
			cur := c.do("GET", coll+"/existing", nil).expect(t, http.StatusOK).object(t)
			if cur.ResourceVersion != existing.ResourceVersion {
				t.Fatalf("the object changed: %s, was %s", cur.ResourceVersion, existing.ResourceVersion)
			}
			c.do("GET", coll+"/new", nil).expect(t, http.StatusNotFound)
		})
	}
}
