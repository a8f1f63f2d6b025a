package registry

import (
	"errors"
	"fmt"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// TestErrStaleRead_IsTheRegistrysOwnAndAConflictIfItEverLeaves: planning
// a write over a version it does not name fails with errStaleRead, which
// is not the store's precondition failure (a condition of a transaction)
// and which apiError answers as a Conflict.
func TestErrStaleRead_IsTheRegistrysOwnAndAConflictIfItEverLeaves(t *testing.T) {
	if errors.Is(errStaleRead, store.ErrPrecondition) {
		t.Fatal("errStaleRead is store.ErrPrecondition")
	}
	r := &Registry{}
	cur := &stored{obj: &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Widget"},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "w", ResourceVersion: "7"}}}
	next := cur.obj.DeepCopy()
	next.ResourceVersion = "5"
	k := &Kind{KindInfo: api.KindInfo{Kind: "Widget", Namespaced: true}}
	if _, err := r.planUpdate(t.Context(), &Admission{Op: OpUpdateStatus}, k, next, cur, nil); !errors.Is(err, errStaleRead) {
		t.Fatalf("planUpdate at another version: %v, want errStaleRead", err)
	}
	if err := apiError(fmt.Errorf("plan: %w", errStaleRead), "Widget", "w"); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("apiError(errStaleRead) = %v, want Conflict", err)
	}
}
