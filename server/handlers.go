package server

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// serveAPI serves everything under api.BasePath: authenticate, route,
// dispatch, and record metrics.
func (s *Server) serveAPI(w *statusWriter, r *http.Request) {
	start := time.Now()
	rt, rerr := s.parseRoute(r.Method, r.URL.EscapedPath())
	verb, resource := "unknown", "unknown"
	watch := false
	if rt != nil {
		w, _ := boolParam(r.URL.Query(), "watch")
		watch = w && rt.target == targetCollection && r.Method == http.MethodGet
		verb, resource = rt.verb(r.Method, watch), rt.resourceLabel()
		if verb == "list" && wantsPhaseCount(r) {
			verb = "count"
		}
	}
	defer func() { s.metrics.observe(verb, resource, w.status(), start) }()

	r, _ = withRequestID(w, r)
	r, release, ok := s.admit(w, r, watch)
	if !ok {
		return
	}
	defer release()
	r, ok = s.authenticate(w, r)
	if !ok {
		return
	}
	if r, ok = s.fenced(w, r); !ok {
		return
	}
	if r, ok = s.actingFor(w, r); !ok {
		return
	}
	if rerr != nil {
		s.writeError(w, r, rerr)
		return
	}
	if rt.target != targetDiscovery {
		q := r.URL.Query()
		err := checkParams(q, paramsFor(rt, r.Method)...)
		var timeout time.Duration
		if err == nil {
			timeout, err = requestTimeout(q)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if timeout > 0 && !watch {
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
	}
	switch rt.target {
	case targetDiscovery:
		// Every authenticated caller may learn which kinds are served (a
		// worker's CLI resolves kind names through it); it names kinds,
		// never objects.
		s.serveGroupVersion(w, r)
	case targetCollection:
		s.serveCollection(w, r, rt)
	case targetObject, targetStatus:
		s.serveObject(w, r, rt)
	case targetAction:
		s.serveAction(w, r, rt)
	case targetTrace:
		s.serveTrace(w, r, rt)
	case targetDependents:
		s.serveDependents(w, r, rt)
	}
}

func (s *Server) serveCollection(w *statusWriter, r *http.Request, rt *route) {
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		watch, err := boolParam(q, "watch")
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		opts, err := listOptions(q)
		if err == nil {
			err = checkPhaseCount(r, watch, opts)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if watch {
			wp, err := readWatchParams(q, opts)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			s.serveWatch(w, r, rt, opts, wp)
			return
		}
		if wantsPhaseCount(r) {
			s.servePhaseCount(w, r, rt, opts)
			return
		}
		s.serveList(w, r, rt, opts)
	case http.MethodPost:
		o, err := writeOptions(r.URL.Query())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		obj, err := s.readObject(w, r, rt)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.reg.Create(ctx, obj, o)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusCreated, out)
	case http.MethodDelete:
		s.serveDeleteCollection(w, r, rt)
	}
}

// serveDeleteCollection deletes the objects of a collection that the
// label and field selectors select, with the delete options of the query
// and body, and answers the list of them as the deletions left them.
func (s *Server) serveDeleteCollection(w *statusWriter, r *http.Request, rt *route) {
	q := r.URL.Query()
	lo, err := listOptions(q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// uid and resourceVersion of the query name a list's version and one
	// object's preconditions: neither fits a collection.
	q.Del("uid")
	q.Del("resourceVersion")
	do, err := deleteOptionsOf(q, body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.reg.DeleteCollection(r.Context(), rt.kind.Kind, rt.ns, lo, do)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, out)
}

// serveObject serves one object (or its status subresource): GET reads
// it, PUT replaces it, PATCH patches or applies it, DELETE deletes it.
// Each write answers with the object it left (201 when an apply created
// it, 202 when a delete waits for finalizers); errors are written as their
// Status.
func (s *Server) serveObject(w *statusWriter, r *http.Request, rt *route) {
	if r.Method == http.MethodGet {
		s.getObject(w, r, rt)
		return
	}
	var (
		out  *api.Object
		err  error
		code = http.StatusOK
	)
	switch r.Method {
	case http.MethodPut:
		out, err = s.putObject(w, r, rt)
	case http.MethodPatch:
		out, code, err = s.patchObject(w, r, rt)
	case http.MethodDelete:
		out, code, err = s.deleteObject(w, r, rt)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, code, out)
}

// readObject reads and decodes an object body and checks it against rt.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request, rt *route) (*api.Object, error) {
	m, err := requestMedia(r)
	if err != nil {
		return nil, err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	obj, err := decodeObject(body, m)
	if err != nil {
		return nil, err
	}
	if err := checkObject(obj, rt); err != nil {
		return nil, err
	}
	return obj, nil
}

// readPatch reads a patch and its type (patchMedia) and checks it
// (decodePatch).
func (s *Server) readPatch(w http.ResponseWriter, r *http.Request) ([]byte, api.PatchType, error) {
	pt, err := patchMedia(r)
	if err != nil {
		return nil, "", err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, "", err
	}
	if body, err = decodePatch(body, pt); err != nil {
		return nil, "", err
	}
	return body, pt, nil
}

// boolParam reads an optional boolean query parameter.
func boolParam(q url.Values, name string) (bool, error) {
	if !q.Has(name) {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badField(name, "must be true or false, not %q", short(v))
	}
	return b, nil
}

// serveAction calls a kind's action. A streaming result is copied to the
// client as it is written, and ends like a watch when the server shuts
// down or cuts streams.
func (s *Server) serveAction(w *statusWriter, r *http.Request, rt *route) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := registry.ActionRequest{Namespace: rt.ns, Name: rt.name, Query: r.URL.Query(), Body: body}
	if slices.Contains(rt.action.Params, "dryRun") {
		if req.Options, err = writeOptions(req.Query); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	ctx := r.Context()
	if r.Header.Get(ForwardedHeader) != "" {
		ctx = api.WithForwarded(ctx) // answered here, never forwarded again
	}
	res, err := s.reg.Act(ctx, rt.kind, rt.action, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case res.Stream != nil:
		s.serveStream(w, r, res)
	case res.Object != nil:
		s.writeJSON(w, r, orDefault(res.Code, http.StatusOK), res.Object)
	default:
		w.WriteHeader(orDefault(res.Code, http.StatusNoContent))
	}
}

func (s *Server) serveStream(w *statusWriter, r *http.Request, res registry.ActionResult) {
	e, err := s.openStream(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer s.closeStream(e)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(orDefault(res.Code, http.StatusOK))
	w.Flush()
	err = res.Stream(e.ctx, w, w.Flush)
	finishStream(e)
	if err != nil && e.ctx.Err() == nil && api.AsStatus(err).Code >= 500 {
		s.log.Error("stream failed", "path", r.URL.Path, "err", api.LogValue(err))
	}
}

func orDefault(code, def int) int {
	if code == 0 {
		return def
	}
	return code
}
