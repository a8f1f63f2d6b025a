package registry

import (
	"encoding/json"
	"testing"

	"cairn.dev/cairn/api"
)

// TestSameDesired_KeyOrderIsNoChangeButAnyValueIs: a write that records
// managedFields stores its fields re-encoded with sorted keys; that alone
// must not bump the generation, while any change of a value must.
func TestSameDesired_KeyOrderIsNoChangeButAnyValueIs(t *testing.T) {
	obj := func(spec, status string) *api.Object {
		o := &api.Object{Fields: map[string]json.RawMessage{"spec": json.RawMessage(spec)}}
		if status != "" {
			o.Fields["status"] = json.RawMessage(status)
		}
		return o
	}
	tests := []struct {
		name string
		a, b *api.Object
		want bool
	}{
		{"same bytes", obj(`{"size":3}`, ""), obj(`{"size":3}`, ""), true},
		{"keys in another order", obj(`{"size":3,"ref":"s1"}`, ""), obj(`{"ref":"s1","size":3}`, ""), true},
		{"spacing", obj(`{ "size": 3 }`, ""), obj(`{"size":3}`, ""), true},
		{"status is not desired", obj(`{"size":3}`, `{"phase":"A"}`), obj(`{"size":3}`, `{"phase":"B"}`), true},
		{"a value changed", obj(`{"size":3}`, ""), obj(`{"size":4}`, ""), false},
		{"a key added", obj(`{"size":3}`, ""), obj(`{"size":3,"ref":"s1"}`, ""), false},
		{"numbers beyond float precision differ", obj(`{"n":9007199254740993}`, ""), obj(`{"n":9007199254740992}`, ""), false},
		{"a number written otherwise", obj(`{"n":1}`, ""), obj(`{"n":1.0}`, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameDesired(tt.a, tt.b); got != tt.want {
				t.Errorf("sameDesired = %v, want %v", got, tt.want)
			}
		})
	}
}
