package api

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A Status travels as Kubernetes' meta.k8s.io/v1 Status, so that every
// Kubernetes client reads cairn's errors as it reads the apiserver's:
// client-go's apierrors.IsConflict, IsInvalid, ReasonForError and the
// messages kubectl prints all come from these fields.

// MarshalJSON writes s as a metav1.Status: "status":"Failure", metadata,
// code, reason, message and details (group, kind, name, causes,
// retryAfterSeconds).
func (s Status) MarshalJSON() ([]byte, error) { return json.Marshal(s.Wire()) }

// UnmarshalJSON reads a metav1.Status (cairn's or any Kubernetes
// server's).
func (s *Status) UnmarshalJSON(b []byte) error {
	var w metav1.Status
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Status{TypeMeta: TypeMeta{APIVersion: w.APIVersion, Kind: w.Kind}, Code: int(w.Code),
		Reason: Reason(w.Reason), Message: w.Message}
	if d := w.Details; d != nil {
		s.Details = &StatusDetails{Kind: d.Kind, Name: d.Name, RetryAfterSeconds: int(d.RetryAfterSeconds)}
		for _, c := range d.Causes {
			s.Details.Causes = append(s.Details.Causes, StatusCause{Field: c.Field, Type: string(c.Type), Message: c.Message})
		}
	}
	return nil
}

// Wire returns s as the metav1.Status sent to clients.
func (s Status) Wire() *metav1.Status {
	w := &metav1.Status{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
		Status:   metav1.StatusFailure,
		Code:     int32(s.Code),
		Reason:   metav1.StatusReason(s.Reason),
		Message:  s.Message,
	}
	if s.Code == 0 && s.Reason != "" {
		w.Code = int32(s.Reason.Code())
	}
	if d := s.Details; d != nil {
		w.Details = &metav1.StatusDetails{Kind: d.Kind, Name: d.Name, RetryAfterSeconds: int32(d.RetryAfterSeconds)}
		if d.Kind != "" {
			w.Details.Group = Group
		}
		for _, c := range d.Causes {
			w.Details.Causes = append(w.Details.Causes, metav1.StatusCause{
				Type: metav1.CauseType(c.Type), Message: c.Message, Field: c.Field})
		}
	}
	return w
}
