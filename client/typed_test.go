package client_test

import (
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

func TestFor_PanicsOnNonKindTypes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("For[*api.Object] did not panic")
		}
	}()
	client.For[*api.Object](nil)
}

func TestConvert_DecodesCachedObjects(t *testing.T) {
	o := testkit.Secret("default", "c", nil)
	o.SetField("data", []byte(`{"k":"dg=="}`))
	s, err := client.Convert[*api.Secret](o)
	if err != nil || string(s.Data["k"]) != "v" || s.Name != "c" {
		t.Fatalf("Convert = %+v, %v", s, err)
	}
	o.SetField("data", []byte(`"not a map"`))
	if _, err := client.Convert[*api.Secret](o); err == nil {
		t.Error("Convert of a bad object succeeded")
	}
}
