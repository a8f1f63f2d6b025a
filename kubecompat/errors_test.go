package kubecompat_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"cairn.dev/cairn/api"
)

// lease is a Lease held by holder, as client-go sends it.
func lease(name, holder string, duration int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": api.Group + "/" + api.Version, "kind": "Lease",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"holderIdentity": holder, "leaseDurationSeconds": duration},
	}}
}

// TestErrors_ClientGoReadsTheServersStatus makes the server refuse in
// each way and checks that client-go's apierrors classify the error and
// carry the server's own message, reason, details and causes (not
// client-go's fallback for a body it cannot read).
func TestErrors_ClientGoReadsTheServersStatus(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	leases := c.dynamic(t).Resource(gvr("leases"))
	l, err := leases.Create(ctx, lease("l", "alice", 15), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Apply(ctx, "l", lease("l", "alice", 15), metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatal(err)
	}
	stale := l.DeepCopy()
	stale.SetLabels(map[string]string{"x": "y"})

	tests := []struct {
		name        string
		op          func() error
		is          func(error) bool
		reason      metav1.StatusReason
		code        int32
		message     string // in the message
		causeField  string // a cause's field, when there must be one
		detailsName string
	}{
		{"not found", func() error { _, err := leases.Get(ctx, "nope", metav1.GetOptions{}); return err },
			apierrors.IsNotFound, metav1.StatusReasonNotFound, 404, `Lease "nope" not found`, "", "nope"},
		{"already exists", func() error { _, err := leases.Create(ctx, lease("l", "bob", 15), metav1.CreateOptions{}); return err },
			apierrors.IsAlreadyExists, metav1.StatusReasonAlreadyExists, 409, `Lease "l" already exists`, "", "l"},
		{"stale update", func() error { _, err := leases.Update(ctx, stale, metav1.UpdateOptions{}); return err },
			apierrors.IsConflict, metav1.StatusReasonConflict, 409,
			`operation on Lease "l" failed: the object has been modified`, "", "l"},
		{"invalid", func() error { _, err := leases.Create(ctx, lease("m", "bob", 0), metav1.CreateOptions{}); return err },
			apierrors.IsInvalid, metav1.StatusReasonInvalid, 422,
			`Lease "m" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be at least 1`, "spec.leaseDurationSeconds", "m"},
		{"apply conflict", func() error {
			_, err := leases.Apply(ctx, "l", lease("l", "bob", 15), metav1.ApplyOptions{FieldManager: "bob"})
			return err
		}, apierrors.IsConflict, metav1.StatusReasonConflict, 409,
			"conflicts with \"alice\":\n- .spec.holderIdentity", ".spec.holderIdentity", "l"},
		{"uid precondition", func() error {
			return leases.Delete(ctx, "l", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("other"))}})
		}, apierrors.IsConflict, metav1.StatusReasonConflict, 409, "uid", "", "l"},
		{"unsupported field selector", func() error {
			_, err := leases.List(ctx, metav1.ListOptions{FieldSelector: "spec.holderIdentity=alice"})
			return err
		}, apierrors.IsBadRequest, metav1.StatusReasonBadRequest, 400, "spec.holderIdentity", "", ""},
		{"bad patch", func() error {
			_, err := leases.Patch(ctx, "l", types.JSONPatchType, []byte(`{"not":"a json patch"}`), metav1.PatchOptions{})
			return err
		}, apierrors.IsBadRequest, metav1.StatusReasonBadRequest, 400, "", "", ""},
		{"strategic merge patch", func() error {
			_, err := leases.Patch(ctx, "l", types.StrategicMergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}, apierrors.IsUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType, 415, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if err == nil {
				t.Fatal("no error")
			}
			if !tt.is(err) || apierrors.ReasonForError(err) != tt.reason {
				t.Errorf("error %v: reason %q, want %q", err, apierrors.ReasonForError(err), tt.reason)
			}
			var st apierrors.APIStatus
			if !errorsAs(err, &st) {
				t.Fatalf("%T is no APIStatus", err)
			}
			s := st.Status()
			if s.Status != metav1.StatusFailure || s.Code != tt.code || s.Message == "" {
				t.Errorf("status %+v", s)
			}
			if !strings.Contains(s.Message, tt.message) {
				t.Errorf("message\n%q, want one with\n%q", s.Message, tt.message)
			}
			if s.Details != nil {
				for _, cause := range s.Details.Causes {
					if cause.Type == metav1.CauseTypeUnexpectedServerResponse {
						t.Errorf("client-go could not read the server's Status: %+v", s)
					}
				}
			}
			if tt.detailsName != "" && (s.Details == nil || s.Details.Name != tt.detailsName || s.Details.Group != api.Group) {
				t.Errorf("details %+v, want name %q in group %s", s.Details, tt.detailsName, api.Group)
			}
			if tt.causeField != "" && (s.Details == nil || !hasCause(s.Details.Causes, tt.causeField)) {
				t.Errorf("details %+v lack a cause for %s", s.Details, tt.causeField)
			}
		})
	}
}

func hasCause(causes []metav1.StatusCause, field string) bool {
	for _, c := range causes {
		if strings.Contains(c.Field, field) {
			return true
		}
	}
	return false
}

// errorsAs is errors.As for the APIStatus interface.
func errorsAs(err error, target *apierrors.APIStatus) bool { return errors.As(err, target) }

// TestErrors_CompactedHistoryIsExpired: a continue token or a watch
// from before a compaction is 410 with reason Expired, which client-go's
// reflector takes as "list again".
func TestErrors_CompactedHistoryIsExpired(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	leases := c.dynamic(t).Resource(gvr("leases"))
	for _, n := range []string{"a", "b", "c"} {
		if _, err := leases.Create(ctx, lease(n, n, 15), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := leases.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || page.GetContinue() == "" {
		t.Fatalf("first page: %v, %v", page, err)
	}
	old := page.GetResourceVersion()
	last, err := leases.Patch(ctx, "c", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"z"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rev, _ := strconv.ParseInt(last.GetResourceVersion(), 10, 64)
	if err := c.srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	_, err = leases.List(ctx, metav1.ListOptions{Limit: 1, Continue: page.GetContinue()})
	if !apierrors.IsResourceExpired(err) || apierrors.ReasonForError(err) != metav1.StatusReasonExpired {
		t.Errorf("a continue token from before the compaction: %v (%s)", err, apierrors.ReasonForError(err))
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: old})
	if err == nil {
		// The refusal may come as the watch's first event.
		defer w.Stop()
		select {
		case e := <-w.ResultChan():
			err = apierrors.FromObject(e.Object)
		case <-time.After(5 * time.Second):
			t.Fatal("no event on a watch from a compacted version")
		}
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("a watch from a compacted version: %v (%s)", err, apierrors.ReasonForError(err))
	}
}
