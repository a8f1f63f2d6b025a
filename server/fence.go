package server

import (
	"net/http"

	"cairn.dev/cairn/api"
)

// fenced returns r with the fence its Cairn-Fence header names, if any, in
// its context (api.WithFence): every write the request makes then commits
// only while that leadership term holds, checked by the registry in the
// write's own transaction. A controller manager talking to the API over
// HTTP sends it with every write it makes as leader. A malformed header is
// answered 400 (ok false).
func (s *Server) fenced(w *statusWriter, r *http.Request) (*http.Request, bool) {
	v := r.Header.Get(api.HeaderFence)
	if v == "" {
		return r, true
	}
	f, err := api.ParseFence(v)
	if err != nil {
		s.writeError(w, r, err)
		return r, false
	}
	return r.WithContext(api.WithFence(r.Context(), f)), true
}

// actingFor returns r with the object its Cairn-On-Behalf-Of header names,
// if any, in its context (api.WithOnBehalfOf): the registry then
// authorizes the request as the caller and as that object's creator. A
// controller acting for a user's object sends it, so that it never lends
// its own authority. The header only restricts the request that carries
// it. A malformed header is answered 400 (ok false).
func (s *Server) actingFor(w *statusWriter, r *http.Request) (*http.Request, bool) {
	v := r.Header.Get(api.HeaderOnBehalfOf)
	if v == "" {
		return r, true
	}
	b, err := api.ParseOnBehalfOf(v)
	if err != nil {
		s.writeError(w, r, err)
		return r, false
	}
	return r.WithContext(api.WithOnBehalfOf(r.Context(), b)), true
}
