package cleaner

import (
	"encoding/json"
	"slices"
	"testing"

	"cairn.dev/cairn/api"
)

// cleanerObject is a Cleaner object of uid at generation, with spec and
// status given as raw JSON.
func cleanerObject(uid string, generation int64, spec, status string) *api.Object {
	o := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindCleaner}}
	o.Namespace, o.Name, o.UID, o.Generation = "default", "c", uid, generation
	o.SetField(api.FieldSpec, json.RawMessage(spec))
	if status != "" {
		o.SetField(api.FieldStatus, json.RawMessage(status))
	}
	return o
}

func targetNames(r cleanerRefs) []string {
	var out []string
	for _, t := range r.Spec.Targets {
		out = append(out, t.Reference.Name)
	}
	return out
}

func TestRefsCache_DecodesASpecOncePerGenerationAndEachStatus(t *testing.T) {
	const specA = `{"targets":[{"name":"s","reference":{"kind":"Secret","name":"a"}}]}`
	const specB = `{"targets":[{"name":"s","reference":{"kind":"Secret","name":"b"}}]}`
	var rc refsCache
	steps := []struct {
		name        string
		obj         *api.Object
		wantTargets []string
		wantStatus  []string
	}{
		{"first version", cleanerObject("u1", 1, specA, ""), []string{"a"}, nil},
		// A status write: same generation. The spec is taken from the
		// cache (this version's spec does not even decode), the status
		// is read.
		{"status written", cleanerObject("u1", 1, `{"targets":"not a list"}`, `{"resolvedTargets":["Secret/a"]}`),
			[]string{"a"}, []string{"Secret/a"}},
		{"spec changed", cleanerObject("u1", 2, specB, `{"resolvedTargets":["Secret/a"]}`), []string{"b"}, []string{"Secret/a"}},
		// Another Cleaner under the same name: its own spec.
		{"another uid", cleanerObject("u2", 2, specA, ""), []string{"a"}, nil},
	}
	for _, s := range steps {
		r := rc.of(s.obj)
		if got := targetNames(r); !slices.Equal(got, s.wantTargets) {
			t.Fatalf("%s: targets %v, want %v", s.name, got, s.wantTargets)
		}
		if !slices.Equal(r.Status.ResolvedTargets, s.wantStatus) {
			t.Fatalf("%s: resolved %v, want %v", s.name, r.Status.ResolvedTargets, s.wantStatus)
		}
	}
	// Forgotten (deleted), a uid's spec is decoded again.
	rc.forget("u1")
	if got := targetNames(rc.of(cleanerObject("u1", 2, `{"targets":"not a list"}`, ""))); len(got) != 0 {
		t.Fatalf("after forget: targets %v, want the undecodable spec's none", got)
	}
}
