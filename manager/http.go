package manager

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// HandlerOptions configures the HTTP handler of a controller process.
type HandlerOptions struct {
	// Server is the URL of the API server that authenticates callers.
	Server string
	// HTTPClient reaches the API server; default a client of its own.
	HTTPClient *http.Client
	// Metrics is what /metrics serves.
	Metrics prometheus.Gatherer
}

// Handler serves what a separate controller process offers on its own
// address: /healthz, /readyz (the API server answers), /metrics and the
// traces of its controllers under the API's paths
// (GET /apis/cairn.dev/v1alpha1/[namespaces/{ns}/]{plural}/{name}/trace),
// which API servers forward to the leader.
//
// It keeps no tokens of its own: every request but /healthz and /readyz
// is authenticated and authorized by the API server, with the caller's
// bearer token. Whoever may read an object there may read its trace here;
// /metrics needs a token that may read the controllers' Lease (scoped
// worker tokens may not).
func (m *Manager) Handler(opts HandlerOptions) http.Handler {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	h := &handler{m: m, opts: opts}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok\n") })
	mux.HandleFunc("GET /readyz", h.ready)
	mux.HandleFunc("GET /metrics", h.metrics)
	mux.HandleFunc("GET "+api.BasePath+"/", h.trace)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the path %q is not served by a controller manager", r.URL.Path))
	})
	return mux
}

type handler struct {
	m    *Manager
	opts HandlerOptions
}

// caller returns an API client acting with the request's bearer token, or
// writes 401 and returns nil.
func (h *handler) caller(w http.ResponseWriter, r *http.Request) client.Interface {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
		writeStatus(w, api.NewStatus(api.ReasonUnauthorized, "missing bearer token: send \"Authorization: Bearer <token>\""))
		return nil
	}
	c, err := client.NewHTTP(client.Config{Server: h.opts.Server, Token: strings.TrimSpace(token), HTTPClient: h.opts.HTTPClient})
	if err != nil {
		writeStatus(w, api.NewStatus(api.ReasonUnavailable, "the API server address is not usable"))
		return nil
	}
	return c
}

func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := h.m.opts.Client.Kinds(ctx); err != nil {
		writeStatus(w, api.NewStatus(api.ReasonUnavailable, "the API server does not answer"))
		return
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	c := h.caller(w, r)
	if c == nil {
		return
	}
	// Whoever may read the controllers' Lease may read their metrics:
	// admins, not scoped worker tokens.
	if _, err := c.Get(r.Context(), api.KindLease, "", LeaseName); err != nil && !errors.Is(err, api.ErrNotFound) {
		writeStatus(w, err)
		return
	}
	promhttp.HandlerFor(h.opts.Metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// trace serves GET .../{plural}/{name}/trace.
func (h *handler) trace(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, api.BasePath+"/"), "/")
	var ns, plural, name string
	switch {
	case len(segs) == 5 && segs[0] == "namespaces" && segs[4] == "trace":
		ns, plural, name = segs[1], segs[2], segs[3]
	case len(segs) == 3 && segs[2] == "trace":
		plural, name = segs[0], segs[1]
	default:
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the path %q is not served by a controller manager", r.URL.Path))
		return
	}
	c := h.caller(w, r)
	if c == nil {
		return
	}
	kinds, err := c.Kinds(r.Context())
	if err != nil {
		writeStatus(w, err)
		return
	}
	k, ok := api.ResolveKind(kinds, plural)
	if !ok || k.Plural != plural || k.Namespaced != (ns != "") {
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the server does not serve the resource %q here", plural))
		return
	}
	_, err = c.Get(r.Context(), k.Kind, ns, name)
	gone := errors.Is(err, api.ErrNotFound)
	if err != nil && !gone {
		writeStatus(w, err)
		return
	}
	if !h.m.Leading() {
		st := api.NewStatus(api.ReasonUnavailable, "this controller manager does not lead the controllers now; try again")
		st.Details = &api.StatusDetails{RetryAfterSeconds: 1}
		writeStatus(w, st)
		return
	}
	tr, found := h.m.Traces().Get(k.Kind, ns, name)
	if !found && gone {
		writeStatus(w, err)
		return
	}
	if tr == nil {
		tr = &api.Trace{}
	}
	tr.APIVersion, tr.Kind = api.APIVersion, api.KindTrace
	tr.Object = api.ObjectReference{Kind: k.Kind, Namespace: ns, Name: name}
	writeJSON(w, http.StatusOK, tr)
}

func writeStatus(w http.ResponseWriter, err error) {
	if errors.Is(err, client.ErrUnreachable) {
		err = api.NewStatus(api.ReasonUnavailable, "the API server does not answer")
	}
	st := api.AsStatus(err)
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(st.Details.RetryAfterSeconds))
	}
	writeJSON(w, st.Code, st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"kind":"Status","code":500,"reason":"InternalError","message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}
