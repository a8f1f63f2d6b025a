package api_test

import (
	"testing"

	"cairn.dev/cairn/api"
)

func TestOwnerRefTo_NamesTheOwnerForTypedAndGenericObjects(t *testing.T) {
	typed := &api.Secret{TypeMeta: api.TypeMeta{Kind: "Secret"}, ObjectMeta: api.ObjectMeta{Name: "db", UID: "u1"}}
	generic := &api.Object{TypeMeta: api.TypeMeta{Kind: "Namespace"}, ObjectMeta: api.ObjectMeta{Name: "team", UID: "u2"}}
	for _, tc := range []struct {
		owner      api.Resource
		controller bool
		want       api.OwnerReference
	}{
		{typed, true, api.OwnerReference{APIVersion: api.APIVersion, Kind: "Secret", Name: "db", UID: "u1", Controller: true}},
		{generic, false, api.OwnerReference{APIVersion: api.APIVersion, Kind: "Namespace", Name: "team", UID: "u2"}},
	} {
		if got := api.OwnerRefTo(tc.owner, tc.controller); got != tc.want {
			t.Errorf("OwnerRefTo(%s) = %+v, want %+v", tc.want.Name, got, tc.want)
		}
	}
}
