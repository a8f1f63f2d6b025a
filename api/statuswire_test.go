package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
)

// clientGoError decodes what cairn sends as client-go does with an error
// response body: into a metav1.Status, then apierrors.FromObject.
func clientGoError(t *testing.T, st *api.Status) error {
	t.Helper()
	raw, err := json.Marshal(api.AsStatus(st))
	if err != nil {
		t.Fatal(err)
	}
	var w metav1.Status
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("not a metav1.Status: %v: %s", err, raw)
	}
	if w.Status != metav1.StatusFailure || w.Kind != "Status" || w.APIVersion != "v1" {
		t.Fatalf("status, kind, apiVersion = %q, %q, %q; want Failure, Status, v1: %s", w.Status, w.Kind, w.APIVersion, raw)
	}
	return apierrors.FromObject(&w)
}

func TestStatus_ClientGoReadsReasonsCodesAndCauses(t *testing.T) {
	cases := []struct {
		name string
		st   *api.Status
		is   func(error) bool
		code int32
	}{
		{"not found", api.NewNotFound("Secret", "db"), apierrors.IsNotFound, http.StatusNotFound},
		{"already exists", api.NewAlreadyExists("Secret", "db"), apierrors.IsAlreadyExists, http.StatusConflict},
		{"conflict", api.NewConflict("Secret", "db", "stale"), apierrors.IsConflict, http.StatusConflict},
		{"forbidden", api.NewForbidden("Secret", "db", "no"), apierrors.IsForbidden, http.StatusForbidden},
		{"bad request", api.NewBadRequest("bad %s", "x"), apierrors.IsBadRequest, http.StatusBadRequest},
		{"expired", api.NewExpired("compacted"), apierrors.IsResourceExpired, http.StatusGone},
		{"too many", api.NewStatus(api.ReasonTooManyRequests, "slow down"), apierrors.IsTooManyRequests, http.StatusTooManyRequests},
		{"unavailable", api.NewStatus(api.ReasonUnavailable, "down"), apierrors.IsServiceUnavailable, http.StatusServiceUnavailable},
		{"timeout", api.NewStatus(api.ReasonTimeout, "late"), apierrors.IsTimeout, http.StatusGatewayTimeout},
		{"internal", api.NewInternal(errors.New("secret detail")), apierrors.IsInternalError, http.StatusInternalServerError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := clientGoError(t, c.st)
			if !c.is(err) {
				t.Fatalf("client-go does not classify %v (reason %q)", err, apierrors.ReasonForError(err))
			}
			var se apierrors.APIStatus
			if !errors.As(err, &se) || se.Status().Code != c.code {
				t.Fatalf("code = %v, want %d", se, c.code)
			}
			if got := err.Error(); got != api.AsStatus(c.st).Message {
				t.Fatalf("client-go's message %q is not the server's %q", got, api.AsStatus(c.st).Message)
			}
		})
	}
}

func TestStatus_InvalidCarriesFieldCausesToClientGo(t *testing.T) {
	st := api.NewInvalid("Installation", "web", field.ErrorList{
		field.Required(field.NewPath("spec", "blueprint"), "one of inline or ref"),
	})
	err := clientGoError(t, st)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("not Invalid: %v", err)
	}
	d := err.(apierrors.APIStatus).Status().Details
	if d == nil || d.Group != api.Group || d.Kind != "Installation" || d.Name != "web" || len(d.Causes) != 1 {
		t.Fatalf("details = %+v", d)
	}
	if c := d.Causes[0]; c.Field != "spec.blueprint" || c.Type != metav1.CauseTypeFieldValueRequired {
		t.Fatalf("cause = %+v", c)
	}
}

func TestStatus_RoundTripsThroughItsWireForm(t *testing.T) {
	in := api.NewStatus(api.ReasonTooManyRequests, "later")
	in.Details = &api.StatusDetails{RetryAfterSeconds: 3, Causes: []api.StatusCause{{Field: "f", Type: "t", Message: "m"}}}
	raw, err := json.Marshal(api.AsStatus(in))
	if err != nil {
		t.Fatal(err)
	}
	var out api.Status
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out.Reason != in.Reason || out.Code != 429 || out.Message != "later" || out.Details.RetryAfterSeconds != 3 ||
		out.Details.Causes[0] != in.Details.Causes[0] || !errors.Is(&out, api.ErrTooManyRequests) {
		t.Fatalf("round trip: %+v from %s", out, raw)
	}
}
