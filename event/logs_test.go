package event_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
)

// startWithLogs is start with the deploy items' logs endpoint too.
func startWithLogs(t *testing.T) *env {
	t.Helper()
	svc := event.New(event.Options{})
	s := servertest.Start(t,
		servertest.WithKinds(kinds.All(kinds.Deps{EventActions: svc.Actions(), EventRemoveWrites: svc.RemoveWrites,
			DeployItemActions: svc.Logs().DeployItemActions()})...),
		servertest.WithAuthorize(svc.Authorize),
		servertest.WithRegistryOptions(func(o *registry.Options) { o.Authority = svc }))
	svc.Bind(s.Registry, nil)
	s.Auth.SetScopeCheck(svc.CheckToken)
	return &env{t: t, s: s, svc: svc, c: s.Client(t), ctx: context.Background()}
}

// keep writes the kept output of unit id owned by owner, as a
// controller does when the unit ends.
func (e *env) keep(owner api.OwnerReference, id, out string) {
	e.t.Helper()
	sec := &api.Secret{ObjectMeta: api.ObjectMeta{Name: api.UnitLogSecretName(id), Namespace: "default",
		Annotations: map[string]string{api.AnnotationUnit: id}, OwnerReferences: []api.OwnerReference{owner}},
		Data: map[string][]byte{api.UnitLogKey: []byte(out)}}
	if _, err := client.For[*api.Secret](e.c).Create(e.ctx, sec); err != nil {
		e.t.Fatal(err)
	}
}

// TestLogs_ServedFromTheKeptTailToWhoeverMayReadTheirObject: a server
// that runs no controllers serves an ended unit's output from the tail
// kept through the API, for an event's worker and a container deploy
// item's run and delete command alike, and only to callers that may get
// the event or deploy item: a worker's token reads its own event's logs,
// not another's, and a deploy item's only when its project grants get on
// DeployItems.
func TestLogs_ServedFromTheKeptTailToWhoeverMayReadTheirObject(t *testing.T) {
	e := startWithLogs(t)
	e.project("granted", api.ProjectSpec{WorkerPermissions: []api.PermissionRule{{Kinds: []string{"DeployItem"}, Verbs: []string{"get"}}}})
	e.project("plain", api.ProjectSpec{})
	ev, other := e.create("granted"), e.create("plain")
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	e.setPhase(other.Name, api.PhaseStarting, api.PhaseRunning)
	tok, otherTok := e.token(ev.Name), e.token(other.Name)
	e.keep(api.OwnerReference{Kind: api.KindEvent, Name: ev.Name, UID: ev.UID}, api.WorkerUnitID(ev.UID), "worker says the password is hunter2\n")

	item, err := client.For[*api.DeployItem](e.c).Create(e.ctx, &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: "app", Namespace: "default"},
		Spec: api.DeployItemSpec{Type: api.DeployItemTypeContainer, Config: []byte(`{"command": ["true"], "deleteCommand": ["false"]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if code, b := e.do("GET", "/namespaces/default/deployitems/app/logs", e.s.Token, nil); code != http.StatusNotFound {
		t.Fatalf("logs of an item never picked up: %d %s, want 404", code, b)
	}
	item.Status.LastReconcileTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if item, err = client.For[*api.DeployItem](e.c).UpdateStatus(e.ctx, item); err != nil {
		t.Fatal(err)
	}
	owner := api.OwnerReference{Kind: api.KindDeployItem, Name: "app", UID: item.UID}
	run, _ := api.DeployItemLogUnit(item, false)
	del, _ := api.DeployItemLogUnit(item, true)
	e.keep(owner, run, "installed\n")
	e.keep(owner, del, "uninstall failed\n")

	for _, tc := range []struct {
		name, path, token string
		code              int
		body              string
	}{
		{"admin reads a worker's kept output", "/namespaces/default/events/" + ev.Name + "/logs", e.s.Token, 200, "worker says the password is hunter2\n"},
		{"a worker reads its own", "/namespaces/default/events/" + ev.Name + "/logs?follow=true", tok, 200, "worker says the password is hunter2\n"},
		{"another event's worker may not", "/namespaces/default/events/" + ev.Name + "/logs", otherTok, 403, ""},
		{"a worker that never started", "/namespaces/default/events/" + other.Name + "/logs", e.s.Token, 404, ""},
		{"a deploy item's run", "/namespaces/default/deployitems/app/logs", e.s.Token, 200, "installed\n"},
		{"its delete command", "/namespaces/default/deployitems/app/logs?delete=true", e.s.Token, 200, "uninstall failed\n"},
		{"a worker granted get on deploy items", "/namespaces/default/deployitems/app/logs", tok, 200, "installed\n"},
		{"a worker not granted it", "/namespaces/default/deployitems/app/logs", otherTok, 403, ""},
		{"a bad delete", "/namespaces/default/deployitems/app/logs?delete=maybe", e.s.Token, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := e.do("GET", tc.path, tc.token, nil)
			if code != tc.code || (tc.body != "" && string(b) != tc.body) {
				t.Fatalf("GET %s = %d %q, want %d %q", tc.path, code, b, tc.code, tc.body)
			}
		})
	}
}
