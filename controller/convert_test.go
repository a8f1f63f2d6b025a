package controller_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
)

// sampleExecution is an Execution as an informer cache holds it.
func sampleExecution(t testing.TB) *api.Object {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	obj, err := api.FromResource(&api.Execution{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindExecution},
		ObjectMeta: api.ObjectMeta{Name: "shop", Namespace: "default", UID: "u-1", ResourceVersion: "42", Generation: 2,
			CreationTimestamp: now, DeletionTimestamp: &now, Labels: map[string]string{"a": "b"},
			Annotations: map[string]string{api.AnnotationOperation: api.OperationReconcile}, Finalizers: []string{api.FinalizerExecution},
			OwnerReferences: []api.OwnerReference{{APIVersion: api.APIVersion, Kind: api.KindInstallation, Name: "shop", UID: "u-0", Controller: true}}},
		Spec: api.ExecutionSpec{DeployItems: []api.DeployItemTemplate{
			{Name: "a", Type: "mock", Config: json.RawMessage(`{"export":{"port":5432}}`)},
			{Name: "b", Type: "mock", DependsOn: []string{"a"}, Timeout: &api.Duration{Duration: time.Minute}},
		}},
		Status: api.ExecutionStatus{Phase: api.DeployProgressing, ObservedGeneration: 1, Ready: "1/2",
			DeployItems: []api.DeployItemRef{{Name: "a", Ref: "shop-a", ExecutionGeneration: 1, DeployItemGeneration: 1}},
			LastError:   &api.LastError{Reason: "R", Message: "m", Time: now}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestDecode_GivesWhatIntoGivesAndSharesNothing(t *testing.T) {
	for _, obj := range []*api.Object{
		sampleExecution(t),
		{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindExecution}, ObjectMeta: api.ObjectMeta{Name: "bare"}},
	} {
		var want api.Execution
		if err := obj.Into(&want); err != nil {
			t.Fatal(err)
		}
		got, err := controller.Decode[*api.Execution](obj)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("Decode = %+v\nInto   = %+v", *got, want)
		}
		if obj.Labels != nil {
			got.Labels["a"], got.Finalizers[0] = "changed", "changed"
			if obj.Labels["a"] != "b" || obj.Finalizers[0] != api.FinalizerExecution {
				t.Fatal("the decoded object shares its metadata with the cached one")
			}
		}
	}
	bad := sampleExecution(t)
	bad.SetField(api.FieldSpec, json.RawMessage(`{"deployItems":"not a list"}`))
	if _, err := controller.Decode[*api.Execution](bad); err == nil {
		t.Fatal("a spec that does not fit decoded without an error")
	}
}

func TestStatusUpdate_CarriesTheMetadataAndTheStatusAlone(t *testing.T) {
	e, err := controller.Decode[*api.Execution](sampleExecution(t))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := controller.StatusUpdate(e, e.Status)
	if err != nil {
		t.Fatal(err)
	}
	if obj.Kind != api.KindExecution || obj.ResourceVersion != "42" || obj.Name != "shop" || obj.UID != "u-1" {
		t.Fatalf("metadata %+v %+v", obj.TypeMeta, obj.ObjectMeta)
	}
	if _, ok := obj.Fields[api.FieldSpec]; ok || len(obj.Fields) != 1 {
		t.Fatalf("fields %v: want the status alone", obj.Fields)
	}
	var st api.ExecutionStatus
	if err := json.Unmarshal(obj.Field(api.FieldStatus), &st); err != nil || !reflect.DeepEqual(st, e.Status) {
		t.Fatalf("status %s (%v), want %+v", obj.Field(api.FieldStatus), err, e.Status)
	}
	obj.Labels["a"] = "changed"
	if e.Labels["a"] != "b" {
		t.Fatal("the status write shares its metadata with the object")
	}
}

func BenchmarkDecode(b *testing.B) {
	obj := sampleExecution(b)
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := controller.Decode[*api.Execution](obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Into", func(b *testing.B) {
		for b.Loop() {
			var e api.Execution
			if err := obj.Into(&e); err != nil {
				b.Fatal(err)
			}
		}
	})
}
