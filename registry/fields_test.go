package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store/storetest"
)

// TestFields_NamesAreCaseSensitiveAndStrictForInProcessCallers: the
// registry itself refuses top-level fields a kind does not declare (a
// Secret's datA, StringData, Data; a Namespace's Spec), metadata names in
// another case in a merge patch, and typed fields in another case at any
// depth, whether they come through Create, Update, Patch or a Txn. Each is
// a BadRequest naming the field, and nothing is written.
func TestFields_NamesAreCaseSensitiveAndStrictForInProcessCallers(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	if _, err := r.Create(ctx, testkit.Secret("default", "s", map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	lease := testkit.Object(api.KindLease, "", "l", testkit.Spec(`{"holderIdentity":"http://a","leaseDurationSeconds":5}`))
	if _, err := r.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	secret := func(field, value string) *api.Object {
		o := testkit.Secret("default", "n", nil)
		o.SetField(field, json.RawMessage(value))
		return o
	}
	stored := func(field, value string) *api.Object {
		o := secret(field, value)
		o.Name = "s"
		return o
	}
	ns := func(field string) *api.Object {
		o := testkit.Object(api.KindNamespace, "", "team")
		o.SetField(field, json.RawMessage(`{}`))
		return o
	}
	cases := []struct {
		name    string
		write   func() error
		mention []string // in the message
	}{
		{"Secret datA", func() error { _, err := r.Create(ctx, secret("datA", `{"k":"dg=="}`)); return err },
			[]string{"datA", `did you mean data?`}},
		{"Secret StringData", func() error { _, err := r.Create(ctx, secret("StringData", `{"k":"v"}`)); return err },
			[]string{"StringData", "did you mean stringData?"}},
		{"Secret Data on update", func() error { _, err := r.Update(ctx, stored("Data", `{"k":"dg=="}`)); return err },
			[]string{"Data", "did you mean data?"}},
		{"Secret unknown field lists the fields", func() error { _, err := r.Create(ctx, secret("values", `{}`)); return err },
			[]string{"values", "data, stringData, type"}},
		{"Namespace Spec", func() error { _, err := r.Create(ctx, ns("Spec")); return err },
			[]string{"Spec", "did you mean spec?", "Namespace has the fields"}},
		{"Namespace data", func() error { _, err := r.Create(ctx, ns("data")); return err },
			[]string{"data", "Namespace has the fields apiVersion, kind, metadata, spec, status"}},
		{"in a transaction", func() error {
			tx := r.Txn()
			tx.Create(secret("datA", `{}`))
			_, err := tx.Commit(ctx)
			return err
		}, []string{"datA"}},
		{"patch datA", func() error {
			_, err := r.Patch(ctx, api.KindSecret, "default", "s", []byte(`{"datA":{"k":"dg=="}}`), false)
			return err
		}, []string{"datA", "did you mean data?"}},
		{"patch removing StringData", func() error {
			_, err := r.Patch(ctx, api.KindSecret, "default", "s", []byte(`{"StringData":null}`), false)
			return err
		}, []string{"StringData"}},
		{"patch metadata.Labels", func() error {
			_, err := r.Patch(ctx, api.KindSecret, "default", "s", []byte(`{"metadata":{"Labels":{"a":"b"}}}`), false)
			return err
		}, []string{"metadata.Labels", "did you mean labels?"}},
		{"patch unknown metadata field", func() error {
			_, err := r.Patch(ctx, api.KindSecret, "default", "s", []byte(`{"metadata":{"nmae":"x"}}`), false)
			return err
		}, []string{"metadata.nmae"}},
		{"typed field in another case", func() error {
			_, err := r.Patch(ctx, api.KindLease, "", "l", []byte(`{"spec":{"HolderIdentity":"http://b"}}`), false)
			return err
		}, []string{"spec.HolderIdentity", "unknown field"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := s.Revision(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			err = tc.write()
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("got %v, want BadRequest", err)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("%q does not say %q", err, m)
				}
			}
			if after, _ := s.Revision(context.Background()); after != before {
				t.Errorf("the store revision moved from %d to %d", before, after)
			}
		})
	}
	// The right names still work, and status is accepted (and dropped).
	ok := secret("data", `{"k":"dg=="}`)
	ok.SetField("status", json.RawMessage(`{}`))
	if _, err := r.Create(ctx, ok); err != nil {
		t.Fatalf("create with the declared fields: %v", err)
	}
}

// TestDefine_DeclaredFieldsMustMatchTheGoType: a kind whose declared
// fields differ from its Go type's is refused by New, naming both.
func TestDefine_DeclaredFieldsMustMatchTheGoType(t *testing.T) {
	s, _ := storetest.Start(t)
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	bad := registry.Define(registry.Spec[*api.Secret]{Kind: "Vault", Namespaced: true, Fields: []string{"data", "spec"}})
	_, err = registry.New(s, registry.Options{Kinds: append(kinds.All(kinds.Deps{}), bad), Encryption: enc})
	if err == nil || !strings.Contains(err.Error(), "data, spec") || !strings.Contains(err.Error(), "data, stringData, type") {
		t.Fatalf("New with mismatched fields: %v", err)
	}
}
