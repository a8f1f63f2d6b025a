package event_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

func TestCreate_EventAndItsSecretAndTokenInOneTransaction(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "s3cret"})
	e.project("shop", api.ProjectSpec{Secrets: []string{"db"},
		WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", "echo hi"}, Env: map[string]string{"A": "1"}}})
	ev := e.create("shop")
	if ev.Status.Worker.Phase != api.PhasePending {
		t.Errorf("worker phase = %q, want PENDING", ev.Status.Worker.Phase)
	}
	if strings.Join(ev.Spec.Worker.Command, " ") != "sh -c echo hi" || ev.Spec.Worker.Env["A"] != "1" {
		t.Errorf("worker = %+v, want the project's template", ev.Spec.Worker)
	}
	if !strings.HasPrefix(ev.Name, "shop-") || ev.Labels[api.LabelEventProject] != "shop" {
		t.Errorf("name %q labels %v, want shop-xxxxx labelled with its project", ev.Name, ev.Labels)
	}
	sec, err := e.svc.Secrets(e.ctx, "default", ev.Name)
	if err != nil {
		t.Fatalf("event secrets: %v", err)
	}
	if string(sec.Data["password"]) != "s3cret" || len(sec.Data) != 1 {
		t.Errorf("secrets copy = %v, want the project's password alone", sec.Data)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != ev.UID || !sec.OwnerReferences[0].Controller {
		t.Errorf("secret owners = %+v, want the event as controller", sec.OwnerReferences)
	}
	if _, err := client.For[*api.Secret](e.c).Get(e.ctx, "default", ev.Name); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("the event's secrets as a Secret: %v, want NotFound (they are a system record)", err)
	}
	token := e.token(ev.Name)
	if strings.Contains(string(mustJSON(t, ev)), token) {
		t.Fatal("the event shows its token")
	}
	u, err := e.s.Auth.Authenticate(e.ctx, token)
	if err != nil || u.Scope != "default/"+ev.Name {
		t.Fatalf("token authenticates as %+v, %v; want scope default/%s", u, err, ev.Name)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCreate_SecretCopyIsPointInTime(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "before"})
	e.project("shop", api.ProjectSpec{Secrets: []string{"db"}})
	ev := e.create("shop")
	db, err := client.For[*api.Secret](e.c).Get(e.ctx, "default", "db")
	if err != nil {
		t.Fatal(err)
	}
	db.Data = map[string][]byte{"password": []byte("after")}
	if _, err := client.For[*api.Secret](e.c).Update(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	sec, err := e.svc.Secrets(e.ctx, "default", ev.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sec.Data["password"]); got != "before" {
		t.Fatalf("the event's copy changed with the project's secret: %q", got)
	}
	if got := string(e.get(ev.Name).Spec.Worker.Command[0]); got != "sh" {
		t.Fatalf("worker command %q", got)
	}
}

func TestCreate_NothingHalfCreatedOnFailure(t *testing.T) {
	e := start(t)
	e.secret("clash1", map[string]string{"k": "x"})
	e.secret("clash2", map[string]string{"k": "y"})
	e.project("missing", api.ProjectSpec{Secrets: []string{"nope"}})
	e.project("clash", api.ProjectSpec{Secrets: []string{"clash1", "clash2"}})
	e.project("ok", api.ProjectSpec{})
	for _, tc := range []struct {
		name string
		ev   api.Event
		code int
		says string
	}{
		{"missing project", api.Event{Spec: api.EventSpec{Project: "ghost", Source: "s", Type: "t"}}, 422, "spec.project"},
		{"project secret missing", api.Event{Spec: api.EventSpec{Project: "missing", Source: "s", Type: "t"}}, 422, "Secret nope"},
		{"secrets share a key", api.Event{Spec: api.EventSpec{Project: "clash", Source: "s", Type: "t"}}, 422, "both have the key k"},
		{"no source", api.Event{Spec: api.EventSpec{Project: "ok", Type: "t"}}, 422, "spec.source"},
		{"own worker", api.Event{Spec: api.EventSpec{Project: "ok", Source: "s", Type: "t", Worker: api.WorkerSpec{Command: []string{"x"}}}}, 422, "spec.worker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := e.do("POST", "/namespaces/default/events", e.s.Token, tc.ev)
			if code != tc.code || !strings.Contains(string(b), tc.says) {
				t.Fatalf("create = %d %s, want %d naming %s", code, b, tc.code, tc.says)
			}
		})
	}
	l, err := e.c.List(e.ctx, api.KindEvent, "default", api.ListOptions{})
	if err != nil || len(l.Items) != 0 {
		t.Fatalf("events after failed creates: %d, %v", len(l.Items), err)
	}
	recs, err := e.s.Store.List(e.ctx, registry.SystemPrefix+"events/", store.ListOptions{})
	if err != nil || len(recs.KVs) != 0 {
		t.Fatalf("event records after failed creates: %v, %v", recs, err)
	}
	if code, _ := e.do("POST", "/namespaces/default/events", e.s.Token, map[string]any{"spec": map[string]any{"project": "ok"}, "bogus": 1}); code != 400 {
		t.Fatalf("unknown field: %d, want 400", code)
	}
}

func TestFanOut_OneEventPerSubscribedProject(t *testing.T) {
	e := start(t)
	sub := func(types ...string) []api.EventSubscription {
		return []api.EventSubscription{{Source: "github", Types: types, Labels: map[string]string{"team": "a"}}}
	}
	e.project("a", api.ProjectSpec{EventSubscriptions: sub("push")})
	e.project("b", api.ProjectSpec{EventSubscriptions: sub("*")})
	e.project("c", api.ProjectSpec{EventSubscriptions: sub("tag")})
	e.project("d", api.ProjectSpec{})
	post := func(typ string, labels map[string]string) []string {
		code, b := e.do("POST", "/namespaces/default/events", e.s.Token,
			api.Event{Spec: api.EventSpec{Source: "github", Type: typ, Labels: labels}})
		if code != http.StatusCreated {
			t.Fatalf("fan-out: %d %s", code, b)
		}
		var l struct {
			Kind  string      `json:"kind"`
			Items []api.Event `json:"items"`
		}
		if err := json.Unmarshal(b, &l); err != nil || l.Kind != "EventList" {
			t.Fatalf("fan-out answered %s (%v), want an EventList", b, err)
		}
		var projects []string
		for _, ev := range l.Items {
			projects = append(projects, ev.Spec.Project)
		}
		return projects
	}
	if got := strings.Join(post("push", map[string]string{"team": "a", "x": "y"}), ","); got != "a,b" {
		t.Fatalf("push went to %q, want a,b", got)
	}
	if got := post("push", nil); len(got) != 0 {
		t.Fatalf("an event without the subscriptions' labels went to %v, want none", got)
	}
	if got := post("release", map[string]string{"team": "a"}); strings.Join(got, ",") != "b" {
		t.Fatalf("release went to %v, want b", got)
	}
}

func TestCancel_EachPhase(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	for _, tc := range []struct {
		phases []api.EventPhase
		code   int
		want   api.EventPhase
	}{
		{nil, 200, api.PhaseCanceled},
		{[]api.EventPhase{api.PhaseStarting}, 200, api.PhaseAborted},
		{[]api.EventPhase{api.PhaseStarting, api.PhaseRunning}, 200, api.PhaseAborted},
		{[]api.EventPhase{api.PhaseStarting, api.PhaseRunning, api.PhaseSucceeded}, 409, api.PhaseSucceeded},
		{[]api.EventPhase{api.PhaseCanceled}, 409, api.PhaseCanceled},
		{[]api.EventPhase{api.PhaseStarting, api.PhaseTimedOut}, 409, api.PhaseTimedOut},
	} {
		ev := e.create("p")
		e.setPhase(ev.Name, tc.phases...)
		code, b := e.do("POST", "/namespaces/default/events/"+ev.Name+"/cancel", e.s.Token, nil)
		if code != tc.code {
			t.Errorf("cancel after %v = %d %s, want %d", tc.phases, code, b, tc.code)
		}
		if got := e.get(ev.Name).Status.Worker.Phase; got != tc.want {
			t.Errorf("after %v and cancel the worker is %s, want %s", tc.phases, got, tc.want)
		}
	}
}

func TestCancel_AbortsTheJobsToo(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	ev := e.create("p")
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	tok := e.token(ev.Name)
	for _, j := range []string{"a", "b"} {
		if code, b := e.do("POST", "/namespaces/default/events/"+ev.Name+"/jobs", tok,
			map[string]any{"name": j, "spec": map[string]any{"command": []string{"true"}}}); code != 201 {
			t.Fatalf("job %s: %d %s", j, code, b)
		}
	}
	cur := e.get(ev.Name)
	cur.Status.Jobs[1].Phase = api.PhaseStarting
	if _, err := client.For[*api.Event](e.c).UpdateStatus(e.ctx, cur); err != nil {
		t.Fatal(err)
	}
	if code, b := e.do("POST", "/namespaces/default/events/"+ev.Name+"/cancel", e.s.Token, nil); code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	got := e.get(ev.Name).Status
	if got.Worker.Phase != api.PhaseAborted || got.Jobs[0].Phase != api.PhaseCanceled || got.Jobs[1].Phase != api.PhaseAborted {
		t.Fatalf("after cancel: worker %s, jobs %s %s; want ABORTED, CANCELED (was pending), ABORTED", got.Worker.Phase, got.Jobs[0].Phase, got.Jobs[1].Phase)
	}
}

func TestCancelManyAndDeleteMany_NeedProjectAndPhases(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	e.project("q", api.ProjectSpec{})
	pending, running, other := e.create("p"), e.create("p"), e.create("q")
	e.setPhase(running.Name, api.PhaseStarting, api.PhaseRunning)
	for _, path := range []string{"", "?project=p", "?phases=PENDING", "?project=p&phases=DONE"} {
		if code, _ := e.do("POST", "/namespaces/default/events/cancel"+path, e.s.Token, nil); code != 400 {
			t.Errorf("cancel-many %q = %d, want 400", path, code)
		}
		if code, _ := e.do("DELETE", "/namespaces/default/events"+path, e.s.Token, nil); code != 400 {
			t.Errorf("delete-many %q = %d, want 400", path, code)
		}
	}
	if code, _ := e.do("POST", "/namespaces/default/events/cancel?project=p&phases=SUCCEEDED", e.s.Token, nil); code != 400 {
		t.Errorf("cancel-many of a terminal phase = %d, want 400", code)
	}
	code, b := e.do("POST", "/namespaces/default/events/cancel?project=p&phases=PENDING", e.s.Token, nil)
	if code != 200 || !strings.Contains(string(b), pending.Name) || strings.Contains(string(b), running.Name) {
		t.Fatalf("cancel-many PENDING of p = %d %s, want only %s", code, b, pending.Name)
	}
	if got := e.get(pending.Name).Status.Worker.Phase; got != api.PhaseCanceled {
		t.Fatalf("pending event is %s after cancel-many", got)
	}
	if got := e.get(other.Name).Status.Worker.Phase; got != api.PhasePending {
		t.Fatalf("the other project's event is %s after cancel-many", got)
	}
	code, b = e.do("DELETE", "/namespaces/default/events?project=p&phases=CANCELED,RUNNING", e.s.Token, nil)
	if code != 200 {
		t.Fatalf("delete-many: %d %s", code, b)
	}
	for _, name := range []string{pending.Name, running.Name} {
		ev, err := client.For[*api.Event](e.c).Get(e.ctx, "default", name)
		if err == nil && ev.DeletionTimestamp == nil {
			t.Errorf("event %s is still there after delete-many", name)
		} else if err != nil && !errors.Is(err, api.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if e.get(other.Name).DeletionTimestamp != nil {
		t.Error("the other project's event is deleted")
	}
}

func TestSearch_FiltersByProjectSourceTypePhaseAndLabels(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	e.project("q", api.ProjectSpec{})
	post := func(project, source, typ string, labels map[string]string) string {
		code, b := e.do("POST", "/namespaces/default/events", e.s.Token, api.Event{Spec: api.EventSpec{Project: project, Source: source, Type: typ, Labels: labels}, ObjectMeta: api.ObjectMeta{Labels: labels}})
		if code != 201 {
			t.Fatalf("create: %d %s", code, b)
		}
		var ev api.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		return ev.Name
	}
	a := post("p", "github", "push", map[string]string{"branch": "main"})
	b := post("p", "github", "tag", nil)
	c := post("q", "cli", "push", nil)
	e.setPhase(b, api.PhaseStarting, api.PhaseRunning)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{a, b, c}},
		{"?project=p", []string{a, b}},
		{"?source=github&type=push", []string{a}},
		{"?type=push", []string{a, c}},
		{"?phases=RUNNING", []string{b}},
		{"?project=p&phases=pending", []string{a}},
		{"?labelSelector=branch%3Dmain", []string{a}},
	} {
		code, body := e.do("GET", "/namespaces/default/events/search"+tc.query, e.s.Token, nil)
		if code != 200 {
			t.Fatalf("search %s: %d %s", tc.query, code, body)
		}
		var l struct {
			Items []api.Event `json:"items"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, ev := range l.Items {
			got[ev.Name] = true
		}
		if len(got) != len(tc.want) {
			t.Errorf("search %s = %v, want %v", tc.query, got, tc.want)
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("search %s misses %s", tc.query, w)
			}
		}
	}
	if code, _ := e.do("GET", "/namespaces/default/events/search?phases=DONE", e.s.Token, nil); code != 400 {
		t.Errorf("an unknown phase: %d, want 400", code)
	}
}

func TestCreate_DryRunChecksEverythingAndWritesNothing(t *testing.T) {
	e := start(t)
	e.project("shop", api.ProjectSpec{})
	rev := func() int64 {
		r, err := e.s.Store.Revision(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	before := rev()
	body := map[string]any{"apiVersion": api.APIVersion, "kind": api.KindEvent,
		"metadata": map[string]any{"generateName": "shop-"}, "spec": map[string]any{"project": "shop", "source": "git", "type": "push"}}
	code, b := e.do("POST", "/namespaces/default/events?dryRun=All", e.s.Token, body)
	if code != 201 {
		t.Fatalf("dry-run create = %d %s", code, b)
	}
	var ev api.Event
	if err := json.Unmarshal(b, &ev); err != nil || ev.ResourceVersion != "" || ev.Spec.Worker.Command == nil {
		t.Fatalf("dry-run answer %s (%v): want the event as it would be, without a resourceVersion", b, err)
	}
	// Fan-out too.
	delete(body["spec"].(map[string]any), "project")
	if code, b := e.do("POST", "/namespaces/default/events?dryRun=All", e.s.Token, body); code != 201 {
		t.Fatalf("dry-run fan-out = %d %s", code, b)
	}
	if after := rev(); after != before {
		t.Fatalf("a dry run wrote: revision %d → %d", before, after)
	}
	// An unknown project is refused as the real create is.
	body["spec"].(map[string]any)["project"] = "nope"
	code, b = e.do("POST", "/namespaces/default/events", e.s.Token, body)
	if dcode, db := e.do("POST", "/namespaces/default/events?dryRun=All", e.s.Token, body); dcode != code || code < 400 {
		t.Fatalf("dry run for a missing project = %d %s; the real create = %d %s", dcode, db, code, b)
	}
	// An action that does not dry-run refuses the parameter.
	if code, b := e.do("POST", "/namespaces/default/events/x/cancel?dryRun=All", e.s.Token, nil); code != 400 {
		t.Fatalf("cancel?dryRun=All = %d %s, want 400", code, b)
	}
}
