package event_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
)

// worker starts an event of a new project p granting rules and returns
// its running worker's token.
func (e *env) worker(project string, rules ...api.PermissionRule) string {
	e.t.Helper()
	e.project(project, api.ProjectSpec{WorkerPermissions: rules})
	ev := e.create(project)
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	return e.token(ev.Name)
}

// user registers a token of a non-admin user without a scope.
func (e *env) user(name string) string {
	e.t.Helper()
	tok := name + "-token-0123456789abcdef"
	if err := e.s.Auth.Register(e.ctx, tok, identity.User{Name: name}); err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// obj is the JSON body of a namespaced object of kind in default.
func obj(kind, name string, spec any) map[string]any {
	return map[string]any{"apiVersion": api.APIVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": spec}
}

// expect sends the request and fails unless it answers code with a body
// containing every one of want.
func (e *env) expect(method, path, token string, body any, code int, want ...string) []byte {
	e.t.Helper()
	got, b := e.do(method, path, token, body)
	if got != code {
		e.t.Fatalf("%s %s = %d %s, want %d", method, path, got, b, code)
	}
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			e.t.Fatalf("%s %s: %s\nwant it to say %q", method, path, b, w)
		}
	}
	return b
}

var (
	container = map[string]any{"type": "container", "config": map[string]any{"command": []string{"cat", "admin.token"}}}
	mockItem  = map[string]any{"type": "mock", "config": map[string]any{"phase": "Succeeded"}}
)

func TestRun_ACommandRunsOnlyForACreatorGrantedRun(t *testing.T) {
	e := start(t)
	items := api.PermissionRule{Kinds: []string{"DeployItem", "Execution"}, Verbs: []string{"create", "get"}}
	plain := e.worker("plain", items)
	runner := e.worker("runner", items, api.PermissionRule{Kinds: []string{"DeployItem"}, Verbs: []string{"run"}})
	alice := e.user("alice")
	execSpec := map[string]any{"deployItems": []any{map[string]any{"name": "a", "type": "container",
		"config": map[string]any{"command": []string{"true"}}}}}

	e.expect("POST", "/namespaces/default/deployitems", plain, obj("DeployItem", "steal", container), http.StatusForbidden,
		`may not run deployitems \"steal\" in namespace default`, "not granted by the workerPermissions of project plain", api.CauseCreator)
	e.expect("POST", "/namespaces/default/executions", plain, obj("Execution", "steal", execSpec), http.StatusForbidden,
		"may not run deployitems in namespace default")
	e.expect("POST", "/namespaces/default/deployitems", alice, obj("DeployItem", "alice", container), http.StatusForbidden,
		"user alice may not run deployitems", "granted to admins")
	// What runs no command needs no grant.
	e.expect("POST", "/namespaces/default/deployitems", plain, obj("DeployItem", "mock", mockItem), http.StatusCreated)
	// Granted: the same item is admitted.
	e.expect("POST", "/namespaces/default/deployitems", runner, obj("DeployItem", "granted", container), http.StatusCreated)
	e.expect("POST", "/namespaces/default/executions", runner, obj("Execution", "granted", execSpec), http.StatusCreated)
	e.expect("POST", "/namespaces/default/deployitems", e.s.Token, obj("DeployItem", "admin", container), http.StatusCreated)
	for _, name := range []string{"steal", "alice"} {
		if _, err := e.c.Get(e.ctx, api.KindDeployItem, "default", name); !strings.Contains(errString(err), "not found") {
			t.Fatalf("deploy item %s after a refused create: %v", name, err)
		}
	}
}

func TestCreator_RecordedByTheServerNeverByTheClient(t *testing.T) {
	e := start(t)
	tok := e.worker("p", api.PermissionRule{Kinds: []string{"DeployItem"}, Verbs: []string{"create", "get", "update"}})
	forged := api.Creator{Name: "admin", Admin: true}.Encode()
	item := obj("DeployItem", "d", mockItem)
	item["metadata"].(map[string]any)["annotations"] = map[string]string{api.AnnotationCreator: forged}
	var created api.DeployItem
	if err := json.Unmarshal(e.expect("POST", "/namespaces/default/deployitems", tok, item, http.StatusCreated), &created); err != nil {
		t.Fatal(err)
	}
	c, ok := api.CreatorOf(&created.ObjectMeta)
	if !ok || c.Admin || !strings.HasPrefix(c.Name, "event:default/") || c.Project != "p" {
		t.Fatalf("creator recorded %+v (%v), want the worker of project p", c, ok)
	}
	// An admin's update keeps the record; a forged one in the update too.
	created.Annotations[api.AnnotationCreator] = forged
	created.Labels = map[string]string{"x": "y"}
	up, err := client.For[*api.DeployItem](e.c).Update(e.ctx, &created)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := api.CreatorOf(&up.ObjectMeta); got != c {
		t.Fatalf("creator after an admin's update: %+v, want %+v", got, c)
	}
	// Now the item acts for the worker: turning it into a container is
	// refused even to the admin, since the worker may not run.
	up.Spec = api.DeployItemSpec{Type: "container", Config: json.RawMessage(`{"command":["true"]}`)}
	if _, err := client.For[*api.DeployItem](e.c).Update(e.ctx, up); !api.IsCreatorForbidden(err) {
		t.Fatalf("container spec on the worker's item: %v, want a creator refusal", err)
	}
	// Kinds that do not act for anyone record nobody.
	e.secret("s", map[string]string{"k": "v"})
	sec, err := e.c.Get(e.ctx, api.KindSecret, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sec.Annotations[api.AnnotationCreator]; ok {
		t.Fatalf("a Secret records a creator: %v", sec.Annotations)
	}
}

func TestImports_ReadAsTheirCreator(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "change-me"})
	inst := api.PermissionRule{Kinds: []string{"Installation"}, Verbs: []string{"create", "get"}}
	blind := e.worker("blind", inst)
	reader := e.worker("reader", inst, api.PermissionRule{Kinds: []string{"Secret", "Target"}, Verbs: []string{"get"}})
	spec := map[string]any{"blueprint": map[string]any{"inline": map[string]any{}},
		"imports": map[string]any{"data": []any{map[string]any{"name": "pw", "secretRef": map[string]any{"name": "db"}}}}}
	e.expect("POST", "/namespaces/default/installations", blind, obj("Installation", "steal", spec), http.StatusForbidden,
		`may not get secrets \"db\" in namespace default`)
	targets := map[string]any{"blueprint": map[string]any{"inline": map[string]any{}},
		"imports": map[string]any{"targets": []any{map[string]any{"name": "c", "target": "prod"}}}}
	e.expect("POST", "/namespaces/default/installations", blind, obj("Installation", "target", targets), http.StatusForbidden,
		`may not get targets \"prod\"`)
	e.expect("POST", "/namespaces/default/installations", reader, obj("Installation", "ok", spec), http.StatusCreated)
	// A worker that may update an installation another created cannot
	// borrow its creator's right: the caller is checked too.
	e.expect("POST", "/namespaces/default/installations", e.s.Token, obj("Installation", "admins", map[string]any{
		"blueprint": map[string]any{"inline": map[string]any{}}}), http.StatusCreated)
	updater := e.worker("updater", api.PermissionRule{Kinds: []string{"Installation"}, Verbs: []string{"get", "update"}})
	cur, err := e.c.Get(e.ctx, api.KindInstallation, "default", "admins")
	if err != nil {
		t.Fatal(err)
	}
	var in api.Installation
	if err := cur.Into(&in); err != nil {
		t.Fatal(err)
	}
	in.Spec.Imports.Data = []api.DataImport{{Name: "pw", SecretRef: &api.SecretKeyRef{Name: "db"}}}
	e.expect("PUT", "/namespaces/default/installations/admins", updater, in, http.StatusForbidden,
		`may not get secrets \"db\"`)
}

func TestCleaner_TargetsReadAndDeletedAsItsCreator(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "x"})
	cleaners := api.PermissionRule{Kinds: []string{"Cleaner"}, Verbs: []string{"create"}}
	reader := api.PermissionRule{Kinds: []string{"Secret"}, Verbs: []string{"get", "list"}}
	cleaner := func(del bool) map[string]any {
		return obj("Cleaner", "c", map[string]any{"ttl": "1h",
			"targets":    []any{map[string]any{"name": "s", "reference": map[string]any{"kind": "Secret", "name": "db"}, "delete": del}},
			"conditions": []string{"s != null"}})
	}
	blind := e.worker("blind", cleaners)
	e.expect("POST", "/namespaces/default/cleaners", blind, cleaner(false), http.StatusForbidden, `may not get secrets \"db\"`)
	noDelete := e.worker("nodelete", cleaners, reader)
	e.expect("POST", "/namespaces/default/cleaners", noDelete, cleaner(true), http.StatusForbidden, `may not delete secrets \"db\"`)
	e.expect("POST", "/namespaces/default/cleaners", noDelete, cleaner(false), http.StatusCreated)
	selector := obj("Cleaner", "sel", map[string]any{"ttl": "1h",
		"targets":    []any{map[string]any{"name": "s", "reference": map[string]any{"kind": "Secret", "matchLabels": map[string]string{"a": "b"}}, "delete": true}},
		"conditions": []string{"size(s.items) > 0"}})
	e.expect("POST", "/namespaces/default/cleaners", noDelete, selector, http.StatusForbidden, "may not delete secrets in namespace default")
}

func TestOnBehalfOf_ARequestActingForAnObjectIsCheckedAsItsCreator(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "x"})
	e.secret("other", map[string]string{"password": "y"})
	tok := e.worker("p", api.PermissionRule{Kinds: []string{"Cleaner"}, Verbs: []string{"create"}},
		api.PermissionRule{Kinds: []string{"Secret"}, Verbs: []string{"get", "delete"}})
	b := e.expect("POST", "/namespaces/default/cleaners", tok, obj("Cleaner", "c", map[string]any{"ttl": "1h",
		"targets":    []any{map[string]any{"name": "s", "reference": map[string]any{"kind": "Secret", "name": "db"}, "delete": true}},
		"conditions": []string{"s != null"}}), http.StatusCreated)
	var cl api.Cleaner
	if err := json.Unmarshal(b, &cl); err != nil {
		t.Fatal(err)
	}
	// The admin (a controller) acting for the Cleaner: what the worker may
	// do passes, the rest is refused, in-process and over HTTP alike.
	ctx := api.ActFor(e.ctx, api.KindCleaner, &cl.ObjectMeta)
	if _, err := e.c.Get(ctx, api.KindSecret, "default", "db"); err != nil {
		t.Fatalf("get acting for the cleaner: %v", err)
	}
	if _, err := e.c.List(ctx, api.KindSecret, "default", api.ListOptions{}); !api.IsCreatorForbidden(err) ||
		!strings.Contains(err.Error(), "may not list secrets") {
		t.Fatalf("list acting for the cleaner: %v, want a refusal naming list", err)
	}
	http := e.s.Client(t) // over HTTP: the client sends the header
	if _, err := http.Get(ctx, api.KindProject, "default", "p"); !api.IsCreatorForbidden(err) {
		t.Fatalf("get project over HTTP acting for the cleaner: %v, want a creator refusal", err)
	}
	// A stale reference (another incarnation) is refused too.
	stale := api.WithOnBehalfOf(e.ctx, api.OnBehalfOf{Kind: api.KindCleaner, Namespace: "default", Name: "c", UID: "not-its-uid"})
	if _, err := e.c.Get(stale, api.KindSecret, "default", "db"); api.ReasonOf(err) != api.ReasonForbidden {
		t.Fatalf("acting for another incarnation: %v, want Forbidden", err)
	}
	// The project loses delete: the next deletion acting for the Cleaner
	// is refused, naming who may not delete what; the Secret stays.
	p, err := client.For[*api.Project](e.c).Get(e.ctx, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.WorkerPermissions[1].Verbs = []string{"get"}
	if _, err := client.For[*api.Project](e.c).Update(e.ctx, p); err != nil {
		t.Fatal(err)
	}
	_, _, err = e.c.Delete(ctx, api.KindSecret, "default", "db", api.DeleteOptions{})
	if !api.IsCreatorForbidden(err) || !strings.Contains(err.Error(), `may not delete secrets "db"`) {
		t.Fatalf("delete acting for the cleaner after the grant went: %v", err)
	}
	if _, err := e.c.Get(e.ctx, api.KindSecret, "default", "db"); err != nil {
		t.Fatalf("the secret after a refused deletion: %v", err)
	}
}

func TestWorkerPermissions_NoWorkerWidensItsOwn(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		name string
		rule api.PermissionRule
		want string
		at   string // the field named; kinds[0] when empty
	}{
		{"projects", api.PermissionRule{Kinds: []string{"Project"}, Verbs: []string{"update"}}, "may not change the projects", ""},
		{"leases", api.PermissionRule{Kinds: []string{"Lease"}, Verbs: []string{"get"}}, "Leases fence", ""},
		{"namespaces", api.PermissionRule{Kinds: []string{"Namespace"}, Verbs: []string{"get"}}, "inside its project's namespace", ""},
		{"a kind that does not exist", api.PermissionRule{Kinds: []string{"Widget"}, Verbs: []string{"get"}}, `Unsupported value: \"Widget\"`, ""},
		{"run on a kind that runs nothing", api.PermissionRule{Kinds: []string{"Installation"}, Verbs: []string{"run"}}, "run is granted on DeployItem only", ""},
		{"an unknown verb", api.PermissionRule{Kinds: []string{"Installation"}, Verbs: []string{"escalate"}}, `Unsupported value: \"escalate\"`, "verbs[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := *e
			e.t = t
			if tc.at == "" {
				tc.at = "kinds[0]"
			}
			e.expect("POST", "/namespaces/default/projects", e.s.Token, obj("Project", "bad",
				api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"true"}}, WorkerPermissions: []api.PermissionRule{tc.rule}}),
				http.StatusUnprocessableEntity, "spec.workerPermissions[0]."+tc.at, tc.want)
		})
	}
	tok := e.worker("self", api.PermissionRule{Kinds: []string{"Installation"}, Verbs: []string{"get", "update", "create"}})
	own := obj("Project", "self", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"true"}},
		WorkerPermissions: []api.PermissionRule{{Kinds: []string{"Secret"}, Verbs: []string{"get"}}}})
	e.expect("PUT", "/namespaces/default/projects/self", tok, own, http.StatusForbidden, "may not change the projects")
	e.expect("POST", "/namespaces/default/projects", tok, obj("Project", "mine", own["spec"]), http.StatusForbidden)
	// A user without a scope cannot grant run it does not hold either.
	alice := e.user("alice")
	e.expect("POST", "/namespaces/default/projects", alice, obj("Project", "alices", api.ProjectSpec{
		WorkerTemplate: api.WorkerSpec{Command: []string{"true"}}}), http.StatusForbidden, "user alice may not run projects")
}

func TestInheritance_WhatAControllerRendersActsForTheRootsCreator(t *testing.T) {
	e := start(t)
	tok := e.worker("p", api.PermissionRule{Kinds: []string{"Installation"}, Verbs: []string{"create"}})
	b := e.expect("POST", "/namespaces/default/installations", tok, obj("Installation", "i", map[string]any{
		"blueprint": map[string]any{"inline": map[string]any{}}}), http.StatusCreated)
	var in api.Installation
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	owner := api.OwnerRefTo(&in, true)
	exec := func(typ string) *api.Execution {
		return &api.Execution{ObjectMeta: api.ObjectMeta{Name: "i-" + typ, Namespace: "default", OwnerReferences: []api.OwnerReference{owner}},
			Spec: api.ExecutionSpec{DeployItems: []api.DeployItemTemplate{{Name: "a", Type: typ, Config: json.RawMessage(`{"command":["true"]}`)}}}}
	}
	// The admin renders as a controller does: the worker may not run.
	if _, err := client.For[*api.Execution](e.c).Create(e.ctx, exec("container")); !api.IsCreatorForbidden(err) ||
		!strings.Contains(err.Error(), "may not run deployitems") {
		t.Fatalf("container execution under the worker's installation: %v", err)
	}
	out, err := client.For[*api.Execution](e.c).Create(e.ctx, exec("mock"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := api.CreatorOf(&in.ObjectMeta)
	if got, _ := api.CreatorOf(&out.ObjectMeta); got != want || got.Project != "p" {
		t.Fatalf("the execution's creator %+v, want the installation's %+v", got, want)
	}
	// Without a controlling owner the admin's own authority applies.
	free := exec("container")
	free.Name, free.OwnerReferences = "free", nil
	if _, err := client.For[*api.Execution](e.c).Create(e.ctx, free); err != nil {
		t.Fatalf("an admin's own container execution: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
