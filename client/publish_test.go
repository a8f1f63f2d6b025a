package client_test

import (
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

func TestPublish_CreatesThenUpdatesOnlyWhenTheValueChanges(t *testing.T) {
	_, c := start(t)
	ctx := testkit.Context(t)
	obj := func(data string) *api.Object {
		return testkit.Object(api.KindDataObject, "default", "exports", testkit.Field("data", data))
	}
	if err := client.Publish(ctx, c, obj(`{"a":1,"b":2}`), "data"); err != nil {
		t.Fatal(err)
	}
	first, err := c.Get(ctx, api.KindDataObject, "default", "exports")
	if err != nil {
		t.Fatal(err)
	}
	// The same value, keys in another order: nothing is written.
	if err := client.Publish(ctx, c, obj(`{"b":2, "a":1}`), "data"); err != nil {
		t.Fatal(err)
	}
	same, err := c.Get(ctx, api.KindDataObject, "default", "exports")
	if err != nil || same.ResourceVersion != first.ResourceVersion {
		t.Fatalf("republishing the same value wrote: %s → %s (%v)", first.ResourceVersion, same.ResourceVersion, err)
	}
	if err := client.Publish(ctx, c, obj(`{"a":3}`), "data"); err != nil {
		t.Fatal(err)
	}
	changed, err := c.Get(ctx, api.KindDataObject, "default", "exports")
	if err != nil || !api.SameJSON(changed.Field("data"), []byte(`{"a":3}`)) || changed.UID != first.UID {
		t.Fatalf("a new value: %s (uid %s, was %s), %v; want it updated in place", changed.Field("data"), changed.UID, first.UID, err)
	}
}
