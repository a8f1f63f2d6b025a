package column_test

import (
	"encoding/json"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/column"
)

func TestCell_PicksAConditionByType(t *testing.T) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"status":{"conditions":[
		{"type":"Other","status":"False"},{"type":"Reachable","status":"True"}]}}`), &obj); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{".status.conditions.Reachable.status", "True"},
		{".status.conditions.Other.status", "False"},
		{".status.conditions.Missing.status", column.None},
		{".status.conditions.Reachable.status.deeper", column.None},
	}
	for _, tt := range tests {
		if got := column.Cell(obj, api.Column{Path: tt.path}, nil, time.Now()); got != tt.want {
			t.Errorf("Cell(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
}
