package server

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/labels"

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
	}
	defer func() { s.metrics.observe(verb, resource, w.status(), start) }()

	r, release, ok := s.admit(w, r, watch)
	if !ok {
		return
	}
	defer release()
	r, ok = s.authenticate(w, r)
	if !ok {
		return
	}
	if rerr != nil {
		s.writeError(w, r, rerr)
		return
	}
	switch rt.target {
	case targetDiscovery:
		// Every authenticated caller may learn which kinds are served (a
		// worker's CLI resolves kind names through it); it names kinds,
		// never objects.
		s.writeJSON(w, r, http.StatusOK, api.Discovery{
			TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Discovery"},
			Kinds:    s.reg.Kinds(),
		})
	case targetCollection:
		s.serveCollection(w, r, rt)
	case targetObject, targetStatus:
		s.serveObject(w, r, rt)
	case targetAction:
		s.serveAction(w, r, rt)
	case targetTrace:
		s.serveTrace(w, r, rt)
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
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if watch {
			s.serveWatch(w, r, rt, opts)
			return
		}
		s.serveList(w, r, rt, opts)
	case http.MethodPost:
		obj, err := s.readObject(w, r, rt)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		out, err := s.reg.Create(ctx, obj)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeJSON(w, r, http.StatusCreated, out)
	}
}

func (s *Server) serveObject(w *statusWriter, r *http.Request, rt *route) {
	ctx := r.Context()
	status := rt.target == targetStatus
	var (
		out  *api.Object
		err  error
		code = http.StatusOK
	)
	switch r.Method {
	case http.MethodGet:
		out, err = s.reg.Get(ctx, rt.kind.Kind, rt.ns, rt.name)
	case http.MethodPut:
		var obj *api.Object
		if obj, err = s.readObject(w, r, rt); err != nil {
			break
		}
		if status {
			out, err = s.reg.UpdateStatus(ctx, obj)
		} else {
			out, err = s.reg.Update(ctx, obj)
		}
	case http.MethodPatch:
		var patch []byte
		if patch, err = s.readPatch(w, r); err != nil {
			break
		}
		out, err = s.reg.Patch(ctx, rt.kind.Kind, rt.ns, rt.name, patch, status)
	case http.MethodDelete:
		var opts api.DeleteOptions
		if opts, err = s.deleteOptions(w, r); err != nil {
			break
		}
		var gone bool
		out, gone, err = s.reg.Delete(ctx, rt.kind.Kind, rt.ns, rt.name, opts)
		if !gone {
			code = http.StatusAccepted
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, code, out)
}

// readObject reads and decodes an object body and checks it against rt.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request, rt *route) (*api.Object, error) {
	m, err := requestMedia(r, false)
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

// readPatch reads a JSON merge patch and checks it (decodePatch).
func (s *Server) readPatch(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if _, err := requestMedia(r, true); err != nil {
		return nil, err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := decodePatch(body); err != nil {
		return nil, err
	}
	return body, nil
}

// deleteOptions reads force and preconditions from the query or a JSON
// body. (The registry's Authorizer allows only admins to force.)
func (s *Server) deleteOptions(w http.ResponseWriter, r *http.Request) (api.DeleteOptions, error) {
	q := r.URL.Query()
	var opts api.DeleteOptions
	force, err := boolParam(q, "force")
	if err != nil {
		return opts, err
	}
	opts.Force = force
	opts.Preconditions = api.Preconditions{UID: q.Get("uid"), ResourceVersion: q.Get("resourceVersion")}
	body, err := s.readBody(w, r)
	if err != nil {
		return opts, err
	}
	d, err := decodeDeleteBody(body)
	if err != nil {
		return opts, err
	}
	if p := d.Preconditions; p != nil {
		if err := mergePrecondition(&opts.Preconditions.UID, p.UID, "uid"); err != nil {
			return opts, err
		}
		if err := mergePrecondition(&opts.Preconditions.ResourceVersion, p.ResourceVersion, "resourceVersion"); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

func mergePrecondition(dst *string, body, name string) error {
	switch {
	case body == "":
	case *dst == "":
		*dst = body
	case *dst != body:
		return badField("preconditions."+name, "the body and the query parameter %s disagree", name)
	}
	return nil
}

// listOptions reads labelSelector, limit, continue and resourceVersion.
func listOptions(q url.Values) (api.ListOptions, error) {
	opts := api.ListOptions{
		LabelSelector:   q.Get("labelSelector"),
		Continue:        q.Get("continue"),
		ResourceVersion: q.Get("resourceVersion"),
	}
	if opts.LabelSelector != "" {
		if _, err := labels.Parse(opts.LabelSelector); err != nil {
			return opts, badField("labelSelector", "invalid selector: %v", err)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, badField("limit", "must be a non-negative integer, not %q", short(v))
		}
		opts.Limit = n
	}
	return opts, nil
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
	res, err := s.reg.Act(r.Context(), rt.kind, rt.action, req)
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
