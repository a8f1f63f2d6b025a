package api

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// internalErrorJSON is the body written when a response does not encode.
var internalErrorJSON = []byte(`{"kind":"Status","apiVersion":"v1","code":500,"reason":"InternalError","message":"internal error"}`)

// WriteStatus is the one writer of an error as an HTTP response, for the
// API server and the controller manager alike: the Status of err
// (AsStatus) as JSON with its code, with WWW-Authenticate on a 401 and
// Retry-After when the Status says when to retry. It returns the Status
// written, and the error of encoding it (then a plain 500 is written).
func WriteStatus(w http.ResponseWriter, err error) (*Status, error) {
	st := AsStatus(err)
	if st.Code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(st.Details.RetryAfterSeconds))
	}
	return st, WriteJSON(w, st.Code, st)
}

// WriteJSON writes v as JSON with code (and nosniff). When v does not
// encode it writes a 500 Status instead and returns the encoding error.
func WriteJSON(w http.ResponseWriter, code int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, internalErrorJSON
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
	return err
}
