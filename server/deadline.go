package server

import (
	"net/http"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation"

	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// DefaultStoreTimeout is the default of Options.StoreTimeout.
const DefaultStoreTimeout = store.DefaultTimeout

// RequestIDHeader names the request id: a client may send one (a label
// value: at most 63 characters of [A-Za-z0-9._-], beginning and ending with
// a letter or digit); every API response carries the one the request was
// served under, the client's or one the server chose.
const RequestIDHeader = "X-Request-Id"

// withStoreTimeout gives r the store timeout of every request but the
// probes (/readyz has its own): each of its store calls, and each of the
// registry's operations with their retries, ends within it
// (store.WithTimeout). The store being unavailable is then a 503 with
// Retry-After, and a write whose outcome is unknown a 504 that says how to
// find out, both within about the timeout; streams (watches) are not
// bounded, only the store calls they make.
func (s *Server) withStoreTimeout(r *http.Request) *http.Request {
	return r.WithContext(store.WithTimeout(r.Context(), s.opts.StoreTimeout))
}

// withRequestID gives an API request its id: the client's X-Request-Id
// when it is a label value, else a new one. It is sent back in the
// response's X-Request-Id and carried in the request's context, where the
// registry labels a create with a generated name with it
// (api.LabelRequestID), so that a client can find the object when the
// answer is lost or says the create may have been applied.
func withRequestID(w http.ResponseWriter, r *http.Request) (*http.Request, string) {
	id := r.Header.Get(RequestIDHeader)
	if id == "" || len(validation.IsValidLabelValue(id)) > 0 {
		id = uuid.NewString()
	}
	w.Header().Set(RequestIDHeader, id)
	return r.WithContext(registry.WithRequestID(r.Context(), id)), id
}
