package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestExports_ReadsObjectsAndValues(t *testing.T) {
	cm := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "a", Namespace: "ns"}
	g := mapGetter{cm: obj(t, `{"apiVersion":"v1","kind":"ConfigMap","data":{"url":"http://x"},"spec":{"ports":[{"port":80},{"port":443}]}}`)}
	values := map[string]any{"image": map[string]any{"tag": "1.2"}}
	got, err := Exports(context.Background(), g, values, []Export{
		{Key: "url", Resource: &cm, JSONPath: ".data.url"},
		{Key: "ports", Resource: &cm, JSONPath: "{.spec.ports[*].port}"},
		{Key: "tag", FromValues: ".image.tag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"ports":[80,443],"tag":"1.2","url":"http://x"}` {
		t.Fatalf("exports = %s", got)
	}
	missing := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "b", Namespace: "ns"}
	for _, c := range []struct {
		ex   Export
		want string
	}{
		{Export{Key: "x", Resource: &missing, JSONPath: ".data"}, "exports[0] (key x): ConfigMap ns/b does not exist"},
		{Export{Key: "y", Resource: &cm, JSONPath: ".data.nope"}, "exports[0] (key y): ConfigMap ns/a: kube: JSONPath names nothing"},
	} {
		if _, err := Exports(context.Background(), g, nil, []Export{c.ex}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Exports = %v, want %q", err, c.want)
		}
	}
}

func TestUnreachable_TellsNoAnswerFromARefusal(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{context.DeadlineExceeded, true},
		{apierrors.NewServiceUnavailable("down"), true},
		{apierrors.NewNotFound(gr, "a"), false},
		{apierrors.NewForbidden(gr, "a", errors.New("no")), false},
		{apierrors.NewConflict(gr, "a", errors.New("field")), false},
		{errors.Join(errors.New("discovery"), syscall.ECONNREFUSED), true},
	}
	for _, c := range cases {
		if got := Unreachable(c.err); got != c.want {
			t.Errorf("Unreachable(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}
