package manifest

import (
	"testing"

	"cairn.dev/cairn/deployer/kube/config"
)

func TestSecretValues_RedactsEveryLeafOfSecretsOnly(t *testing.T) {
	objs := []config.Object{
		{Ref: config.ObjectRef{APIVersion: "v1", Kind: "Secret", Name: "s"}, Object: map[string]any{
			"data":       map[string]any{"token": "dG9rZW4tdmFsdWU="}, // "token-value"
			"stringData": map[string]any{"pin": float64(73519864), "list": []any{"in-a-list"}, "short": "abc"},
		}},
		{Ref: config.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "c"}, Object: map[string]any{
			"data": map[string]any{"shown": "public-value"}}},
	}
	r := secretValues(objs, nil)
	for _, c := range []struct{ in, want string }{
		{`data.token: "dG9rZW4tdmFsdWU="`, `data.token: "<redacted>"`},
		{`got token-value`, `got <redacted>`},
		{`{Value:73519864}`, `{Value:<redacted>}`},
		{`{"in-a-list"}`, `{"<redacted>"}`},
		{`abc is too short to redact`, `abc is too short to redact`},
		{`public-value of a ConfigMap`, `public-value of a ConfigMap`},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
