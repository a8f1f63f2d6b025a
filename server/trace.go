package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
)

// traceSubresource is the path segment of an object's trace:
// GET .../{plural}/{name}/trace.
const traceSubresource = api.ActionTrace

// ForwardedHeader marks a trace request forwarded to the controllers'
// leader, so that it is never forwarded twice.
const ForwardedHeader = "X-Cairn-Forwarded"

// maxTraceBytes bounds a forwarded trace response.
const maxTraceBytes = 4 << 20

// TraceSource gives the server the traces the controllers keep in memory.
// They live in the process that leads the controllers: this server, or
// another `cairn server` or `cairn controller-manager`.
type TraceSource interface {
	// Trace returns the traces this process's controllers keep for the
	// object (nil when there are none) and true, or false when this
	// process does not lead the controllers now (ask Leader). It does not
	// block.
	Trace(kind, ns, name string) (*api.Trace, bool)
	// Leader returns the base URL of the process leading the controllers,
	// "" when none does. It blocks on one read of the API; errors are the
	// API's.
	Leader(ctx context.Context) (string, error)
}

// serveTrace answers GET .../{plural}/{name}/trace: the steps the
// controllers took in the last reconciles of the object, of this object
// only when one of its name existed before (api.Trace.Of). Whoever may read
// the object may read its trace. The traces are served from this process
// when it leads the controllers, else the request is forwarded to the
// leader, a verified cairn peer, for the caller (peer.go); the caller's
// bearer token is never sent on.
func (s *Server) serveTrace(w *statusWriter, r *http.Request, rt *route) {
	ctx := r.Context()
	obj, err := s.reg.Get(ctx, rt.kind.Kind, rt.ns, rt.name)
	gone := errors.Is(err, api.ErrNotFound)
	if err != nil && !gone {
		s.writeError(w, r, err)
		return
	}
	src := s.opts.Traces
	if src == nil {
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "this server keeps no controller traces"))
		return
	}
	if tr, leading := src.Trace(rt.kind.Kind, rt.ns, rt.name); leading {
		if tr == nil && gone {
			s.writeError(w, r, err)
			return
		}
		if tr == nil {
			tr = api.NewTrace(api.ObjectReference{Kind: rt.kind.Kind, Namespace: rt.ns, Name: rt.name})
		}
		if obj != nil {
			// A predecessor of the same name is another object.
			tr = tr.Of(obj.UID, obj.CreationTimestamp)
		}
		s.writeJSON(w, r, http.StatusOK, tr)
		return
	}
	if r.Header.Get(ForwardedHeader) != "" {
		s.writeError(w, r, unavailable("this server does not lead the controllers any more; try again"))
		return
	}
	leader, err := src.Leader(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if leader == "" {
		s.writeError(w, r, unavailable("no process leads the controllers now, and traces are kept by the leader: "+
			"start `cairn server` with controllers or a `cairn controller-manager`"))
		return
	}
	s.forwardTrace(w, r, leader)
}

// forwardTrace relays the request to the leader at base, a cairn peer
// proven in the TLS handshake, asserting the caller in
// identity.PeerHeader, and copies its answer. An address that is no such
// peer is refused (503) before anything is sent.
func (s *Server) forwardTrace(w *statusWriter, r *http.Request, base string) {
	if err := s.checkPeerAddress(base); err != nil {
		s.writeError(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	u := strings.TrimSuffix(base, "/") + r.URL.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		s.writeError(w, r, unavailable(fmt.Sprintf("the controllers' leader has an unusable address %q", base)))
		return
	}
	caller, _ := identity.From(r.Context())
	req.Header.Set(identity.PeerHeader, identity.EncodeHeader(caller))
	req.Header.Set(ForwardedHeader, "1")
	req.Header.Set("Accept", "application/json")
	resp, err := s.forwarder.Do(req)
	if err != nil {
		s.log.Warn("cannot forward a trace request to the controllers' leader", "leader", base, "err", err)
		s.writeError(w, r, peerRefusal(base, err))
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTraceBytes))
	if err != nil {
		s.writeError(w, r, unavailable(fmt.Sprintf("the controllers' leader at %s did not answer in full; try again", base)))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// unavailable is a ServiceUnavailable answer that says when to retry.
func unavailable(msg string) *api.Status {
	st := api.NewStatus(api.ReasonUnavailable, "%s", msg)
	st.Details = &api.StatusDetails{RetryAfterSeconds: 1}
	return st
}
