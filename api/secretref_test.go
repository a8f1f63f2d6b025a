package api_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

func TestSecretReference_StringIsFoundAgain(t *testing.T) {
	for _, r := range []api.SecretReference{
		{Name: "db-password", Key: "password", Version: "42"},
		{Name: "a.b-c", Key: "tls.crt"},
		{Name: "x", Key: "A_b-1.c", Version: "7"},
	} {
		got := api.FindSecretReferences("url: pg://u:" + r.String() + "@host")
		if len(got) != 1 || got[0] != r {
			t.Errorf("FindSecretReferences(%q) = %+v, want %+v", r.String(), got, r)
		}
	}
	for _, s := range []string{"((cairn.dev/secret:Upper/key))", "((cairn.dev/secret:db))", "(cairn.dev/secret:db/k)", "{{cairn.dev/secret:db/k}}"} {
		if got := api.FindSecretReferences(s); len(got) != 0 {
			t.Errorf("FindSecretReferences(%q) = %+v, want none", s, got)
		}
	}
}

func TestResolveSecretReferences_ReplacesInsideStringsEscapingValues(t *testing.T) {
	values := map[string]string{"db/password": `pa"ss\word`, "db/user": "admin"}
	lookups := 0
	lookup := func(r api.SecretReference) (string, error) {
		lookups++
		v, ok := values[r.Name+"/"+r.Key]
		if !ok {
			return "", errors.New("Secret " + r.Name + " has no key " + r.Key)
		}
		return v, nil
	}
	cases := []struct {
		name, in, want string
		values         int
		err            string
	}{
		{"none", `{"a":"b"}`, `{"a":"b"}`, 0, ""},
		{"whole string", `{"p":"((cairn.dev/secret:db/password@3))"}`, `{"p":"pa\"ss\\word"}`, 1, ""},
		{"inside a string, twice", `{"u":"pg://((cairn.dev/secret:db/user)):((cairn.dev/secret:db/password))@h","v":["((cairn.dev/secret:db/user))"]}`,
			`{"u":"pg://admin:pa\"ss\\word@h","v":["admin"]}`, 2, ""},
		{"missing key", `{"p":"((cairn.dev/secret:db/nope))"}`, "", 0, "has no key nope"},
		{"not JSON", `{"p":"((cairn.dev/secret:db/user))"`, "", 0, "not JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lookups = 0
			out, vals, err := api.ResolveSecretReferences(json.RawMessage(c.in), lookup)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || string(out) != c.want || len(vals) != c.values || lookups != c.values {
				t.Fatalf("got %s %q %v (%d lookups), want %s with %d values", out, vals, err, lookups, c.want, c.values)
			}
			if !json.Valid(out) {
				t.Fatalf("%s is not JSON", out)
			}
		})
	}
}

func TestProbeSecretReferences_UnprobeRestoresOnlyPlacedReferences(t *testing.T) {
	ref := api.SecretReference{Name: "db", Key: "password", Version: "9"}.String()
	probed := api.ProbeSecretReferences(map[string]any{"p": ref, "l": []any{"x " + ref}, "n": 1.0}).(map[string]any)
	if probed["p"] == ref || probed["n"] != 1.0 {
		t.Fatalf("probed %v", probed)
	}
	if got := api.UnprobeSecretReferences(probed["p"].(string)); got != ref {
		t.Fatalf("unprobe %q = %q, want %q", probed["p"], got, ref)
	}
	if got := api.UnprobeSecretReferences(strings.ToUpper(probed["p"].(string))); got == strings.ToUpper(ref) {
		t.Fatalf("an upper-cased probe unprobes to the upper-cased reference: a computation would go unnoticed")
	}
}
