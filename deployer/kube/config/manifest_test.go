package config

import (
	"strings"
	"testing"
)

func TestParseManifest_NamesTheEntryAtFault(t *testing.T) {
	cm := `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}`
	cases := []struct {
		name, config, want string
		objects            int
	}{
		{"ok", `{"namespace":"ns","manifests":[` + cm + `,{"policy":"keep","manifest":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}}]}`, "", 2},
		{"empty", ``, "config is required", 0},
		{"unknown field", `{"manifest":[]}`, `config does not decode as a manifest config: unknown field "manifest"`, 0},
		{"list entry", `{"manifests":[{"manifest":[1]}]}`, "config.manifests[0].manifest is not an object", 0},
		{"duplicate", `{"manifests":[` + cm + `,` + cm + `]}`, "config.manifests[1]: ConfigMap a is also config.manifests[0]", 0},
		{"bad readiness", `{"manifests":[` + cm + `],"readiness":{"custom":[{"name":"x","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"a"},"jsonPath":".data"}]}}`,
			"config.readiness.custom[0].in is required", 0},
		{"fromValues refused", `{"manifests":[` + cm + `],"exports":[{"key":"k","fromValues":".a"}]}`, "config.exports[0].fromValues is for helm items only", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, objs, err := ParseManifest([]byte(c.config))
			if c.want == "" {
				if err != nil || len(objs) != c.objects {
					t.Fatalf("ParseManifest = %d objects, %v", len(objs), err)
				}
				if objs[1].Policy != PolicyKeep || objs[0].Policy != PolicyManage || objs[0].Ref.Name != "a" {
					t.Fatalf("objects %+v", objs)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ParseManifest = %v, want %q", err, c.want)
			}
		})
	}
}
