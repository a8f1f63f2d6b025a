package kinds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

func TestLease_ClusterScopedAndValidated(t *testing.T) {
	s := servertest.Start(t)
	leases := client.For[*api.Lease](s.Client(t))
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		spec    api.LeaseSpec
		invalid string // a field the error names; "" when valid
	}{
		{name: "valid", spec: api.LeaseSpec{HolderIdentity: "http://127.0.0.1:7070", LeaseDurationSeconds: 5}},
		{name: "released", spec: api.LeaseSpec{LeaseDurationSeconds: 5, LeaseTransitions: 3}},
		{name: "no duration", spec: api.LeaseSpec{HolderIdentity: "http://a"}, invalid: "spec.leaseDurationSeconds"},
		{name: "holder over 1 KiB", spec: api.LeaseSpec{HolderIdentity: strings.Repeat("h", 1025), LeaseDurationSeconds: 5},
			invalid: "spec.holderIdentity"},
		{name: "negative transitions", spec: api.LeaseSpec{LeaseDurationSeconds: 5, LeaseTransitions: -1},
			invalid: "spec.leaseTransitions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			got, err := leases.Create(ctx, &api.Lease{ObjectMeta: api.ObjectMeta{Name: name}, Spec: tc.spec})
			if tc.invalid == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				if got.Namespace != "" || got.Spec != tc.spec {
					t.Fatalf("created %q in %q with spec %+v, want cluster-scoped with %+v", got.Name, got.Namespace, got.Spec, tc.spec)
				}
				return
			}
			if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.invalid) {
				t.Fatalf("create = %v, want Invalid naming %s", err, tc.invalid)
			}
		})
	}
}
