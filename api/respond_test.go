package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"cairn.dev/cairn/api"
)

// TestWriteStatus_WritesTheStatusWithItsHeaders serves WriteStatus and
// WriteJSON on a loopback server and reads what a client gets.
func TestWriteStatus_WritesTheStatusWithItsHeaders(t *testing.T) {
	errs := map[string]error{
		"/unauthorized": api.NewStatus(api.ReasonUnauthorized, "missing bearer token"),
		"/unavailable":  api.NewUnavailable(7, "the store does not answer"),
		"/plain":        errors.New("boom"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/unencodable" {
			if err := api.WriteJSON(w, http.StatusOK, func() {}); err == nil {
				t.Error("WriteJSON of a func returned no error")
			}
			return
		}
		if _, err := api.WriteStatus(w, errs[r.URL.Path]); err != nil {
			t.Errorf("WriteStatus: %v", err)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path, header, value string
		code                int
		reason              api.Reason
	}{
		{"/unauthorized", "WWW-Authenticate", `Bearer realm="cairn"`, http.StatusUnauthorized, api.ReasonUnauthorized},
		{"/unavailable", "Retry-After", "7", http.StatusServiceUnavailable, api.ReasonUnavailable},
		{"/plain", "X-Content-Type-Options", "nosniff", http.StatusInternalServerError, api.ReasonInternalError},
		{"/unencodable", "Content-Type", "application/json", http.StatusInternalServerError, api.ReasonInternalError},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var st api.Status
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				t.Fatalf("body is no Status: %v", err)
			}
			if resp.StatusCode != tc.code || st.Code != tc.code || st.Reason != tc.reason || st.Kind != "Status" {
				t.Fatalf("got %d %+v, want %d %s", resp.StatusCode, st, tc.code, tc.reason)
			}
			if got := resp.Header.Get(tc.header); got != tc.value {
				t.Fatalf("%s = %q, want %q", tc.header, got, tc.value)
			}
		})
	}
}
