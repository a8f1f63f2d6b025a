package server

import (
	"net/http"

	"cairn.dev/cairn/api"
)

// The methods of serveObject, one function each.

// getObject writes the object rt names, as a Table of one row when the
// client asks for one (never for the status subresource), as its metadata
// when it asks for that, or as is. Errors (a bad Accept, not found,
// forbidden) are written as their Status.
func (s *Server) getObject(w *statusWriter, r *http.Request, rt *route) {
	tbl, err := tableFor(r, rt)
	if err != nil || rt.target == targetStatus {
		tbl = nil
	}
	partial := wantsPartial(r, false) // metadata only (partial.go)
	var out *api.Object
	if err == nil {
		out, err = s.reg.Get(r.Context(), rt.kind.Kind, rt.ns, rt.name)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if tbl != nil {
		raw, err := tbl.table([]*api.Object{out}, api.ListMeta{ResourceVersion: out.ResourceVersion})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeAs(w, r, tbl.offer, raw)
		return
	}
	if partial {
		s.writePartial(w, r, out)
		return
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// putObject replaces the object (or, on the status subresource, its
// status through the status writer) with the request's body and returns
// what was stored. Errors: bad write options or body, and the registry's
// (conflict, invalid, forbidden...).
func (s *Server) putObject(w *statusWriter, r *http.Request, rt *route) (*api.Object, error) {
	o, err := writeOptions(r.URL.Query())
	if err != nil {
		return nil, err
	}
	obj, err := s.readObject(w, r, rt)
	if err != nil {
		return nil, err
	}
	if rt.target == targetStatus {
		return s.statuses.write(r.Context(), obj, o)
	}
	return s.reg.Update(r.Context(), obj, o)
}

// patchObject patches the object (or its status) with the request's body,
// a server-side apply when its type is apply, and returns the result with
// its code: 201 when the apply created the object, 200 otherwise. Errors:
// bad write options, patch type or body, and the registry's.
func (s *Server) patchObject(w *statusWriter, r *http.Request, rt *route) (*api.Object, int, error) {
	status := rt.target == targetStatus
	o, err := writeOptions(r.URL.Query())
	if err != nil {
		return nil, http.StatusOK, err
	}
	var patch []byte
	if patch, o.PatchType, err = s.readPatch(w, r); err != nil {
		return nil, http.StatusOK, err
	}
	if o.PatchType == api.ApplyPatch {
		out, created, err := s.reg.Apply(r.Context(), rt.kind.Kind, rt.ns, rt.name, patch, status, o)
		if created {
			return out, http.StatusCreated, err
		}
		return out, http.StatusOK, err
	}
	out, err := s.reg.Patch(r.Context(), rt.kind.Kind, rt.ns, rt.name, patch, status, o)
	return out, http.StatusOK, err
}

// deleteObject deletes the object with the options of the query and body
// and returns what the registry gave back with its code: 200 when the
// object is gone, 202 when it waits for its finalizers. Errors: bad
// options or body, and the registry's.
func (s *Server) deleteObject(w *statusWriter, r *http.Request, rt *route) (*api.Object, int, error) {
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, http.StatusOK, err
	}
	opts, err := deleteOptionsOf(r.URL.Query(), body)
	if err != nil {
		return nil, http.StatusOK, err
	}
	out, gone, err := s.reg.Delete(r.Context(), rt.kind.Kind, rt.ns, rt.name, opts)
	if !gone {
		return out, http.StatusAccepted, err
	}
	return out, http.StatusOK, err
}
