package client_test

import (
	"errors"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

func TestTyped_SecretRoundTripsOverBothClients(t *testing.T) {
	_, clients := start(t)
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			secrets := client.For[*api.Secret](c)
			if secrets.Kind() != "Secret" {
				t.Fatalf("Kind = %q", secrets.Kind())
			}
			in := &api.Secret{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "typed-" + name,
				Labels: map[string]string{"app": "x"}}, StringData: map[string]string{"password": "hunter2"}}
			created, err := secrets.Create(ctx, in)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if string(created.Data["password"]) != "hunter2" || created.StringData != nil || created.UID == "" {
				t.Errorf("created = data %v stringData %v uid %q", created.Data, created.StringData, created.UID)
			}
			got, err := secrets.Get(ctx, "default", "typed-"+name)
			if err != nil || got.Type != "Opaque" {
				t.Fatalf("get: %v type %q", err, got.Type)
			}
			got.Data["user"] = []byte("admin")
			upd, err := secrets.Update(ctx, got)
			if err != nil || string(upd.Data["user"]) != "admin" {
				t.Fatalf("update: %v", err)
			}
			patched, err := secrets.Patch(ctx, "default", "typed-"+name, []byte(`{"type":"custom"}`), false)
			if err != nil || patched.Type != "custom" {
				t.Fatalf("patch: %v type %q", err, patched.Type)
			}
			items, meta, err := secrets.List(ctx, "default", api.ListOptions{LabelSelector: "app=x"})
			if err != nil || len(items) != 1 || items[0].Name != "typed-"+name || meta.ResourceVersion == "" {
				t.Fatalf("list: %v, %d items, rv %q", err, len(items), meta.ResourceVersion)
			}
			_, gone, err := secrets.Delete(ctx, "default", "typed-"+name, api.DeleteOptions{Force: true})
			if err != nil || !gone {
				t.Fatalf("delete: %v gone %v", err, gone)
			}
			if _, err := secrets.Get(ctx, "default", "typed-"+name); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("get after delete = %v, want NotFound", err)
			}
		})
	}
}

func TestFor_PanicsOnNonKindTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("For[*api.Object] did not panic")
		}
	}()
	client.For[*api.Object](nil)
}

func TestConvert_DecodesCachedObjects(t *testing.T) {
	o := secret("default", "c", nil, nil)
	o.SetField("data", []byte(`{"k":"dg=="}`))
	s, err := client.Convert[*api.Secret](o)
	if err != nil || string(s.Data["k"]) != "v" || s.Name != "c" {
		t.Fatalf("Convert = %+v, %v", s, err)
	}
	o.SetField("data", []byte(`"not a map"`))
	if _, err := client.Convert[*api.Secret](o); err == nil {
		t.Error("Convert of a bad object succeeded")
	}
}
