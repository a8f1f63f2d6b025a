package manager

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/pki"
)

// HandlerOptions configures the HTTP handler of a controller process.
type HandlerOptions struct {
	// Server is the URL of the API server that authenticates callers.
	Server string
	// HTTPClient reaches the API server; default a client of its own.
	HTTPClient *http.Client
	// Metrics is what /metrics serves.
	Metrics prometheus.Gatherer
	// Peers is cairn's CA: a client whose TLS certificate is a peer
	// certificate of it (an API server forwarding a trace request) may
	// assert its caller in identity.PeerHeader instead of sending a token;
	// the assertion is relayed to the API server, which believes it only
	// when HTTPClient presents this process's own peer certificate. Nil:
	// the header is ignored.
	Peers *x509.CertPool
	// Ready, when set, is one more check of /readyz (such as the
	// process's runtime reaching its cluster): its error is the 503's
	// message.
	Ready func(context.Context) error
}

// Handler serves what a separate controller process offers on its own
// address: /healthz, /readyz (the API server answers, and
// HandlerOptions.Ready passes), /metrics and the
// traces of its controllers under the API's paths
// (GET /apis/cairn.dev/v1alpha1/[namespaces/{ns}/]{plural}/{name}/trace),
// what a deletion would take (.../dependents) and the logs of the units its
// runtime holds (.../events/{name}/logs, .../deployitems/{name}/logs: logs.go),
// which API servers forward to the leader.
//
// It keeps no tokens of its own: every request but /healthz and /readyz
// is authenticated and authorized by the API server, with the caller's
// bearer token or, from a cairn peer, the caller it asserts. Whoever may read an object there may read its trace here;
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

	mu    sync.Mutex
	kinds []api.KindInfo // discovery, asked again when a plural is missing
}

// allowed asks the API server, with the request's bearer token, to read
// the API path p: the caller may do here what it may read there. It
// returns whether the object exists; on any answer but 200 or 404 (no
// token, a token the server rejects, a caller it forbids, a server that
// does not answer) it writes that answer and returns ok false.
func (h *handler) allowed(w http.ResponseWriter, r *http.Request, p string) (exists, ok bool) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimSuffix(h.opts.Server, "/")+p, nil)
	if err != nil {
		writeStatus(w, api.NewStatus(api.ReasonUnavailable, "the API server address is not usable"))
		return false, false
	}
	if caller, asserted := h.peerCaller(r); asserted {
		req.Header.Set(identity.PeerHeader, identity.EncodeHeader(caller))
	} else {
		scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
		if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
			writeStatus(w, api.NewStatus(api.ReasonUnauthorized, "missing bearer token: send \"Authorization: Bearer <token>\""))
			return false, false
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(token))
	}
	resp, err := h.opts.HTTPClient.Do(req)
	if err != nil {
		writeStatus(w, api.NewStatus(api.ReasonUnavailable, "the API server does not answer"))
		return false, false
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, true
	case http.StatusNotFound:
		return false, true
	}
	// Relay the API server's refusal as it is.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if v := resp.Header.Get("WWW-Authenticate"); v != "" {
		w.Header().Set("WWW-Authenticate", v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return false, false
}

// peerCaller returns the caller r asserts in identity.PeerHeader when its
// client proved with its TLS certificate to be a cairn peer; false when r
// asserts none or comes from anyone else (the header is then ignored).
func (h *handler) peerCaller(r *http.Request) (identity.User, bool) {
	v := r.Header.Get(identity.PeerHeader)
	if v == "" || h.opts.Peers == nil || r.TLS == nil {
		return identity.User{}, false
	}
	if pki.VerifyPeer(r.TLS.PeerCertificates, h.opts.Peers, x509.ExtKeyUsageClientAuth) != nil {
		return identity.User{}, false
	}
	u, err := identity.DecodeHeader(v)
	return u, err == nil
}

// kind resolves a plural through the API's discovery, asked once and
// again only for a plural it does not know.
func (h *handler) kind(ctx context.Context, plural string) (api.KindInfo, bool, error) {
	for attempt := 0; attempt < 2; attempt++ {
		h.mu.Lock()
		kinds := h.kinds
		h.mu.Unlock()
		if attempt == 1 || kinds == nil {
			var err error
			if kinds, err = h.m.opts.Client.Kinds(ctx); err != nil {
				return api.KindInfo{}, false, err
			}
			h.mu.Lock()
			h.kinds = kinds
			h.mu.Unlock()
		}
		if k, ok := api.ResolveKind(kinds, plural); ok && k.Plural == plural {
			return k, true, nil
		}
	}
	return api.KindInfo{}, false, nil
}

func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := h.m.opts.Client.Kinds(ctx); err != nil {
		writeStatus(w, api.NewStatus(api.ReasonUnavailable, "the API server does not answer"))
		return
	}
	if h.opts.Ready != nil {
		if err := h.opts.Ready(ctx); err != nil {
			writeStatus(w, api.NewStatus(api.ReasonUnavailable, "%s", err.Error()))
			return
		}
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (h *handler) metrics(w http.ResponseWriter, r *http.Request) {
	// Whoever may read the controllers' Lease may read their metrics:
	// admins, not scoped worker tokens.
	if _, ok := h.allowed(w, r, api.BasePath+"/"+api.Plural(api.KindLease)+"/"+LeaseName); !ok {
		return
	}
	promhttp.HandlerFor(h.opts.Metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// trace serves GET .../{plural}/{name}/trace.
func (h *handler) trace(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/"+api.ActionDependents) {
		h.dependents(w, r) // dependents.go
		return
	}
	if strings.HasSuffix(r.URL.Path, "/"+api.ActionLogs) {
		h.logs(w, r) // logs.go
		return
	}
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, api.BasePath+"/"), "/")
	var ns, plural, name string
	switch {
	case len(segs) == 5 && segs[0] == "namespaces" && segs[4] == api.ActionTrace:
		ns, plural, name = segs[1], segs[2], segs[3]
	case len(segs) == 3 && segs[2] == api.ActionTrace:
		plural, name = segs[0], segs[1]
	default:
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the path %q is not served by a controller manager", r.URL.Path))
		return
	}
	// The caller may read the trace of what it may read.
	exists, ok := h.allowed(w, r, strings.TrimSuffix(r.URL.Path, "/"+api.ActionTrace))
	if !ok {
		return
	}
	k, known, err := h.kind(r.Context(), plural)
	if err != nil {
		writeStatus(w, err)
		return
	}
	if !known || k.Namespaced != (ns != "") {
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the server does not serve the resource %q here", plural))
		return
	}
	if !h.m.Leading() {
		st := api.NewStatus(api.ReasonUnavailable, "this controller manager does not lead the controllers now; try again")
		st.Details = &api.StatusDetails{RetryAfterSeconds: 1}
		writeStatus(w, st)
		return
	}
	tr, found := h.m.Traces().Get(k.Kind, ns, name)
	if !found && !exists {
		writeStatus(w, api.NewNotFound(k.Kind, name))
		return
	}
	if tr == nil {
		tr = api.NewTrace(api.ObjectReference{Kind: k.Kind, Namespace: ns, Name: name})
	}
	writeJSON(w, http.StatusOK, tr)
}

// writeStatus writes err as the API server does (api.WriteStatus); an
// API server that does not answer is a 503.
func writeStatus(w http.ResponseWriter, err error) {
	if errors.Is(err, client.ErrUnreachable) {
		err = api.NewStatus(api.ReasonUnavailable, "the API server does not answer")
	}
	_, _ = api.WriteStatus(w, err)
}

func writeJSON(w http.ResponseWriter, code int, v any) { _ = api.WriteJSON(w, code, v) }

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}
