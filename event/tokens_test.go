package event_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// secretGrants lets a worker get, list and watch Secrets.
var secretGrants = []api.PermissionRule{{Kinds: []string{api.KindSecret}, Verbs: []string{"get", "list", "watch"}}}

func TestEventSecrets_NoWorkerTokenReadsThemWhateverItsGrants(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "s3cret"})
	e.project("p", api.ProjectSpec{Secrets: []string{"db"}, WorkerPermissions: secretGrants})
	ev, other := e.create("p"), e.create("p")
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	e.setPhase(other.Name, api.PhaseStarting, api.PhaseRunning)
	tok, otherTok := e.token(ev.Name), e.token(other.Name)
	alice := e.s.NewToken(t, identity.User{Name: "alice"})

	// A watch of Secrets as the worker, opened before anything else
	// happens, and closed once it saw a marker Secret created last.
	wctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	wc, err := client.NewHTTP(client.Config{Server: e.s.URL, Token: tok, CertificateAuthorityData: string(e.s.CA)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(wctx, api.KindSecret, "default", api.ListOptions{})
	if err != nil {
		t.Fatalf("watch secrets with a worker token granted watch: %v", err)
	}
	defer w.Stop()

	for _, name := range []string{ev.Name, other.Name} {
		for _, who := range []struct{ name, token string }{{"the worker", tok}, {"a user", alice}} {
			if code, b := e.do("GET", "/namespaces/default/secrets/"+name, who.token, nil); code != http.StatusNotFound && code != http.StatusForbidden {
				t.Errorf("%s GETs secret %s: %d %s, want 404 or 403", who.name, name, code, b)
			}
			code, b := e.do("GET", "/namespaces/default/events/"+name+"/secrets", who.token, nil)
			if code != http.StatusForbidden || !strings.Contains(string(b), "only admins") {
				t.Errorf("%s GETs the secrets of event %s: %d %s, want 403 saying only admins", who.name, name, code, b)
			}
		}
	}
	code, b := e.do("GET", "/namespaces/default/secrets", tok, nil)
	if code != http.StatusOK {
		t.Fatalf("list secrets with a worker token granted list: %d %s", code, b)
	}
	var l api.List
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 || l.Items[0].Name != "db" {
		t.Errorf("a worker lists %d secrets (%v), want db alone", len(l.Items), names(l.Items))
	}
	for _, tk := range []string{tok, otherTok} {
		if strings.Contains(string(b), tk) {
			t.Error("a worker's list of Secrets holds a running worker's token")
		}
	}

	e.secret("marker", map[string]string{"k": "v"})
	var seen []string
	for ev := range w.Events() {
		if ev.Type != api.Added && ev.Type != api.Modified {
			continue
		}
		raw, _ := json.Marshal(ev.Object)
		if strings.Contains(string(raw), tok) || strings.Contains(string(raw), otherTok) {
			t.Errorf("a worker's watch of Secrets shows a worker token in %s", ev.Object.Name)
		}
		seen = append(seen, ev.Object.Name)
		if ev.Object.Name == "marker" {
			break
		}
	}
	if strings.Join(seen, ",") != "db,marker" {
		t.Errorf("a worker's watch of Secrets shows %v, want db and marker alone", seen)
	}

	// An admin still reads them.
	code, b = e.do("GET", "/namespaces/default/events/"+ev.Name+"/secrets", e.s.Token, nil)
	var sec api.Secret
	if code != http.StatusOK || json.Unmarshal(b, &sec) != nil || string(sec.Data["password"]) != "s3cret" {
		t.Fatalf("an admin GETs the event's secrets: %d %s, want 200 with the project's password", code, b)
	}
	noTokenInStore(t, e, tok, otherTok)
}

// noTokenInStore fails when any value under cairn's prefix, read raw from
// etcd, or any object an admin reads (Secrets decrypted, every event's
// secrets), holds one of tokens.
func noTokenInStore(t *testing.T, e *env, tokens ...string) {
	t.Helper()
	all, err := e.s.Store.List(e.ctx, "/cairn/", store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, kv := range all.KVs {
		texts["etcd key "+kv.Key] = string(kv.Value)
	}
	for _, kind := range []string{api.KindSecret, api.KindEvent, api.KindProject} {
		l, err := e.c.List(e.ctx, kind, "", api.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			raw, _ := json.Marshal(o)
			texts[kind+" "+o.Namespace+"/"+o.Name] = string(raw)
			if kind != api.KindEvent {
				continue
			}
			sec, err := e.svc.Secrets(e.ctx, o.Namespace, o.Name)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ = json.Marshal(sec)
			texts["secrets of event "+o.Name] = string(raw)
		}
	}
	if len(all.KVs) == 0 || len(texts) <= len(all.KVs) {
		t.Fatalf("the scan read %d keys and %d texts: nothing to look at", len(all.KVs), len(texts))
	}
	for where, text := range texts {
		for _, tk := range tokens {
			// A Secret's values are base64 in its JSON.
			if strings.Contains(text, tk) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(tk))) {
				t.Errorf("%s holds a running worker's token", where)
			}
		}
	}
}

func names(objs []*api.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

func TestEventTokens_OnlyAdminsRegisterThem(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{WorkerPermissions: []api.PermissionRule{
		{Kinds: []string{api.KindEvent}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}})
	ev := e.create("p")
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	tok := e.token(ev.Name)
	alice := e.s.NewToken(t, identity.User{Name: "alice"})
	fresh, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	path := "/namespaces/default/events/" + ev.Name + "/tokens"
	good := api.EventTokenRequest{UID: ev.UID, Hash: auth.Hash(fresh)}
	for _, tc := range []struct {
		name  string
		token string
		body  any
		code  int
		says  string
	}{
		{"the event's worker", tok, good, 403, "only admins"},
		{"a user who is not an admin", alice, good, 403, "only admins"},
		{"no uid", e.s.Token, api.EventTokenRequest{Hash: good.Hash}, 400, "uid"},
		{"not a hash", e.s.Token, api.EventTokenRequest{UID: ev.UID, Hash: "abc"}, 400, "hash"},
		{"unknown field", e.s.Token, map[string]string{"token": fresh}, 400, "token"},
		{"another uid", e.s.Token, api.EventTokenRequest{UID: "0000", Hash: good.Hash}, 409, "created again"},
		{"the admin token's hash", e.s.Token, api.EventTokenRequest{UID: ev.UID, Hash: auth.Hash(e.s.Token)}, 409, "already registered"},
		{"an admin", e.s.Token, good, 201, ""},
		{"an admin again", e.s.Token, good, 201, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := e.do("POST", path, tc.token, tc.body)
			if code != tc.code || !strings.Contains(string(b), tc.says) {
				t.Fatalf("POST tokens = %d %s, want %d naming %q", code, b, tc.code, tc.says)
			}
		})
	}
	if code, b := e.do("GET", "/namespaces/default/events/"+ev.Name, fresh, nil); code != 200 {
		t.Fatalf("the token an admin registered: %d %s", code, b)
	}
	if u, err := e.s.Auth.Authenticate(e.ctx, e.s.Token); err != nil || !u.Admin {
		t.Fatalf("the admin token after a registration of its hash was refused: %+v %v", u, err)
	}
}

func TestEventTokens_GoWithTheirEventAndNeverServeAnother(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	create := func() *api.Event {
		code, b := e.do("POST", "/namespaces/default/events", e.s.Token,
			api.Event{ObjectMeta: api.ObjectMeta{Name: "same"}, Spec: api.EventSpec{Project: "p", Source: "s", Type: "t"}})
		if code != http.StatusCreated {
			t.Fatalf("create event same: %d %s", code, b)
		}
		return e.setPhase("same", api.PhaseStarting, api.PhaseRunning)
	}
	registered := func(tok string) bool {
		_, err := e.s.Store.Get(e.ctx, auth.HashKey(auth.Hash(tok)))
		return err == nil
	}
	records := func() int {
		l, err := e.s.Store.List(e.ctx, registry.SystemPrefix+"events/default/same/", store.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.KVs)
	}

	first := create()
	worker, job := e.token("same"), e.token("same")
	for _, tk := range []string{worker, job} {
		if code, b := e.do("GET", "/namespaces/default/events/same", tk, nil); code != 200 {
			t.Fatalf("a unit's token of the running event: %d %s", code, b)
		}
	}
	// Deleted the way the collector ends a deletion: marked, then its
	// last finalizer removed by an update.
	if _, gone, err := e.c.Delete(e.ctx, api.KindEvent, "default", "same", api.DeleteOptions{}); err != nil || gone {
		t.Fatalf("delete: gone %v, %v; want marked", gone, err)
	}
	if !registered(worker) || !registered(job) {
		t.Fatal("the tokens of an event being deleted went before the event")
	}
	marked := e.get("same")
	marked.Finalizers = nil
	if _, err := client.For[*api.Event](e.c).Update(e.ctx, marked); err != nil {
		t.Fatal(err)
	}
	if registered(worker) || registered(job) || records() != 0 {
		t.Fatalf("after the event is removed: worker token registered %v, job token %v, %d records; want none",
			registered(worker), registered(job), records())
	}

	second := create()
	if second.UID == first.UID {
		t.Fatal("the event created again has the same uid")
	}
	for _, tk := range []string{worker, job} {
		if code, b := e.do("GET", "/namespaces/default/events/same", tk, nil); code != 401 && code != 403 {
			t.Fatalf("a token of the deleted event on the one created again: %d %s, want 401 or 403", code, b)
		}
	}
	// A registration the scheduler made for the first event, arriving
	// late, is refused; had it been stored, it would not serve the
	// second event either.
	late, _ := auth.NewToken()
	if code, b := e.do("POST", "/namespaces/default/events/same/tokens", e.s.Token,
		api.EventTokenRequest{UID: first.UID, Hash: auth.Hash(late)}); code != http.StatusConflict {
		t.Fatalf("a registration for the first event: %d %s, want 409", code, b)
	}
	if err := e.s.Auth.Register(e.ctx, late, event.TokenUser("default", "same")); err != nil {
		t.Fatal(err)
	}
	if code, b := e.do("GET", "/namespaces/default/events/same", late, nil); code != 403 || !strings.Contains(string(b), "created again") {
		t.Fatalf("a token registered as the event's but not for this one: %d %s, want 403", code, b)
	}

	// Terminal: refused, and no new token is registered.
	now := e.token("same")
	e.setPhase("same", api.PhaseSucceeded)
	if code, b := e.do("GET", "/namespaces/default/events/same", now, nil); code != 403 || !strings.Contains(string(b), "SUCCEEDED") {
		t.Fatalf("a token of the terminal event: %d %s, want 403 naming the phase", code, b)
	}
	again, _ := auth.NewToken()
	if code, b := e.do("POST", "/namespaces/default/events/same/tokens", e.s.Token,
		api.EventTokenRequest{UID: second.UID, Hash: auth.Hash(again)}); code != http.StatusConflict || !strings.Contains(string(b), "SUCCEEDED") {
		t.Fatalf("a registration for a terminal event: %d %s, want 409 naming the phase", code, b)
	}
	// A forced deletion removes the registrations too.
	if _, _, err := e.c.Delete(e.ctx, api.KindEvent, "default", "same", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if registered(now) || records() != 0 {
		t.Fatalf("after a forced deletion: token registered %v, %d records; want none", registered(now), records())
	}
}
