package scheduler_test

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/store/storetest"
)

// tokenLine finds the token a unit printed as "<what>-token=<hex>".
func tokenLine(logs, what string) string {
	m := regexp.MustCompile(what + `-token=([0-9a-f]{64})`).FindStringSubmatch(logs)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestUnits_GetTokensOfTheirOwnThatTheStoreNeverHolds(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	if _, err := h.c.Create(t.Context(), testkit.Secret("default", "db", map[string]string{"password": "pw"})); err != nil {
		t.Fatal(err)
	}
	// The worker prints its token and creates a job, which prints its own
	// and reads its event with it; both then stay running.
	spec := script(`set -eu
echo "worker-token=$CAIRN_TOKEN"
api="$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/events/$CAIRN_EVENT"
curl -fsS --cacert "$CAIRN_CA_FILE" -H "Authorization: Bearer $CAIRN_TOKEN" -o /dev/null \
  -d '{"name":"build","spec":{"command":["sh","-c","echo job-token=$CAIRN_TOKEN; curl -fsS --cacert \"$CAIRN_CA_FILE\" -H \"Authorization: Bearer $CAIRN_TOKEN\" -o /dev/null '"$api"' && echo job-api-ok; sleep 300"]}}' \
  "$api/jobs"
sleep 300`)
	spec.Secrets = []string{"db"}
	spec.WorkerPermissions = []api.PermissionRule{{Kinds: []string{api.KindSecret}, Verbs: []string{"get", "list", "watch"}}}
	h.project("tok", spec)
	name := h.create("tok")
	testkit.Eventually(t, wait, "the worker and its job running", func() bool {
		return h.get(name).Status.JobPhases == "build:RUNNING"
	})
	var worker, job string
	testkit.Eventually(t, wait, "the worker and its job to print their tokens, the job to reach the API", func() bool {
		worker, job = tokenLine(h.logs(name, ""), "worker"), tokenLine(h.logs(name, "build"), "job")
		return worker != "" && job != "" && strings.Contains(h.logs(name, "build"), "job-api-ok")
	})
	if worker == job {
		t.Fatal("the worker and its job got the same token: each unit gets its own")
	}

	// Nothing in etcd holds them, nor any object or event secrets an
	// admin reads (Secrets decrypted, their values base64 in JSON).
	holds := func(b []byte) bool {
		for _, tk := range []string{worker, job} {
			if strings.Contains(string(b), tk) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte(tk))) {
				return true
			}
		}
		return false
	}
	all := storetest.Values(t, h.d.Store(), "/cairn/")
	if len(all) == 0 {
		t.Fatal("the store holds nothing under /cairn/: nothing was scanned")
	}
	for key, value := range all {
		if holds(value) {
			t.Errorf("etcd key %s holds a running unit's token", key)
		}
	}
	for _, path := range []string{"/secrets", "/events", "/projects", "/namespaces/default/events/" + name + "/secrets"} {
		code, b := h.do("GET", path, "", nil)
		if code != 200 {
			t.Fatalf("GET %s as admin: %d %s", path, code, b)
		}
		if holds(b) {
			t.Errorf("GET %s as admin shows a running unit's token", path)
		}
	}

	// The worker, granted Secrets, does not see its event's.
	if code, b := h.do("GET", "/namespaces/default/secrets/"+name, worker, nil); code != 404 && code != 403 {
		t.Errorf("the worker GETs secret %s: %d %s, want 404 or 403", name, code, b)
	}
	code, b := h.do("GET", "/namespaces/default/secrets", worker, nil)
	var l api.List
	if code != 200 || json.Unmarshal(b, &l) != nil || len(l.Items) != 1 || l.Items[0].Name != "db" {
		t.Errorf("the worker lists secrets: %d %s, want db alone", code, b)
	}

	if code, b := h.do("POST", "/namespaces/default/events/"+name+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	h.waitPhase(name, api.PhaseAborted)
	for _, tk := range []string{worker, job} {
		if code, b := h.do("GET", "/namespaces/default/events/"+name, tk, nil); code != 403 {
			t.Errorf("a unit's token once its event is ABORTED: %d %s, want 403", code, b)
		}
	}
}
