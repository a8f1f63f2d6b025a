package event_test

import (
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// TestCreate_TheNextEventCopiesTheSecretAsChanged: the secrets' copy is
// decoded once per snapshot of the project and reused by the next events;
// a secret changed after an event is copied, as changed, by the very next
// one, and an event of the same project before the change keeps the old
// value.
func TestCreate_TheNextEventCopiesTheSecretAsChanged(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "one"})
	e.project("shop", api.ProjectSpec{Secrets: []string{"db"}})
	copied := func(ev *api.Event) string {
		t.Helper()
		sec, err := e.svc.Secrets(e.ctx, "default", ev.Name)
		if err != nil {
			t.Fatal(err)
		}
		return string(sec.Data["password"])
	}
	first, second := e.create("shop"), e.create("shop")
	secrets := client.For[*api.Secret](e.c)
	db, err := secrets.Get(e.ctx, "default", "db")
	if err != nil {
		t.Fatal(err)
	}
	db.Data = map[string][]byte{"password": []byte("two")}
	if _, err := secrets.Update(e.ctx, db); err != nil {
		t.Fatal(err)
	}
	third := e.create("shop")
	if a, b, c := copied(first), copied(second), copied(third); a != "one" || b != "one" || c != "two" {
		t.Fatalf("the events copied %q, %q, %q; want one, one, two", a, b, c)
	}
}
