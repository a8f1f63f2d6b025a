package wait

import (
	"encoding/json"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

func TestParseFor(t *testing.T) {
	obj := &api.Object{}
	if err := json.Unmarshal([]byte(`{"kind":"X","metadata":{"name":"a"},"status":{"phase":"Ready","replicas":3,"x":{"y":"z"}}}`), obj); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in      string
		desc    string
		metObj  bool
		metNil  bool
		wantErr string
	}{
		{in: "delete", desc: "be deleted", metNil: true},
		{in: "phase=Ready", desc: "have phase=Ready", metObj: true},
		{in: "phase=Failed", desc: "have phase=Failed"},
		{in: "jsonpath=.status.replicas=3", desc: "have .status.replicas=3", metObj: true},
		{in: "jsonpath={.status.x.y}=z", desc: "have .status.x.y=z", metObj: true},
		{in: "jsonpath=status.x.y=z", desc: "have .status.x.y=z", metObj: true},
		{in: "phase=", wantErr: "needs a phase"},
		{in: "jsonpath=.status.phase", wantErr: "expected jsonpath=.path=value"},
		{in: "jsonpath={.status.phase=x", wantErr: "expected jsonpath={.path}=value"},
		{in: "jsonpath==x", wantErr: "the path is empty"},
		{in: "condition=Ready", wantErr: "use delete, phase=PHASE or jsonpath=.path=value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := ParseFor(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Description != tt.desc || c.met(obj) != tt.metObj || c.met(nil) != tt.metNil {
				t.Errorf("got %q met(obj)=%v met(nil)=%v", c.Description, c.met(obj), c.met(nil))
			}
		})
	}
}
