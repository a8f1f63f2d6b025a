package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"cairn.dev/cairn/api"
)

// Why a stream's context was canceled by the server.
var (
	errShutdown = errors.New("server: shutting down")
	errCut      = errors.New("server: connection cut")
)

// serveState belongs to one Serve call; its requests find it in their
// context.
type serveState struct {
	closing bool // guarded by Server.mu
}

type serveKey struct{}

// stream is one open long-running response (a watch or a streaming action).
type stream struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	state  *serveState // nil when not served through Serve
}

// openStream registers a long-running response, which then counts against
// the cap on long-running requests. Errors: ServiceUnavailable when the
// Serve that received the request is shutting down, TooManyRequests at
// the cap.
func (s *Server) openStream(r *http.Request) (*stream, error) {
	if err := s.longRunning(r); err != nil {
		return nil, err
	}
	st, _ := r.Context().Value(serveKey{}).(*serveState)
	ctx, cancel := context.WithCancelCause(r.Context())
	e := &stream{ctx: ctx, cancel: cancel, state: st}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st != nil && st.closing {
		cancel(errShutdown)
		return nil, api.NewStatus(api.ReasonUnavailable, "the server is shutting down")
	}
	s.streams[e] = struct{}{}
	return e, nil
}

func (s *Server) closeStream(e *stream) {
	s.mu.Lock()
	delete(s.streams, e)
	s.mu.Unlock()
	e.cancel(nil)
}

// endStreams cancels the streams of st (all streams when st is nil) with
// cause; with errShutdown it also refuses new streams on st.
func (s *Server) endStreams(st *serveState, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st != nil {
		st.closing = true
	}
	for e := range s.streams {
		if st == nil || e.state == st {
			e.cancel(cause)
		}
	}
}

// finishStream ends a stream's handler: a cut connection is aborted so the
// client sees it drop; otherwise the response ends normally.
func finishStream(e *stream) {
	if errors.Is(context.Cause(e.ctx), errCut) {
		panic(http.ErrAbortHandler)
	}
}

// serveWatch streams the changes of a collection as newline-delimited JSON
// watch events, one flush per event. The registry refuses a compacted
// resourceVersion before the stream starts (410); a compaction that
// overtakes the stream later ends it with an ERROR event carrying the Status.
// BOOKMARK events are sent only when the client allows them (the one that
// ends the initial events of sendInitialEvents always is); with a timeout
// the stream ends cleanly after it, and the client watches again.
func (s *Server) serveWatch(w *statusWriter, r *http.Request, rt *route, opts api.ListOptions, wp watchParams) {
	tbl, err := tableFor(r, rt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	partial := tbl == nil && wantsPartial(r, false) // every event's object, BOOKMARKs too
	e, err := s.openStream(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer s.closeStream(e)
	var expired <-chan time.Time
	if wp.timeout > 0 {
		t := time.NewTimer(wp.timeout)
		defer t.Stop()
		expired = t.C
	}
	gauge := s.metrics.watches.WithLabelValues(rt.resourceLabel())
	gauge.Inc()
	defer gauge.Dec()

	wt, err := s.reg.Watch(e.ctx, rt.kind.Kind, rt.ns, opts)
	if err != nil {
		s.refuseWatch(w, r, e, err)
		return
	}
	defer wt.Stop()
	startWatchResponse(w)
	ws := &watchStream{s: s, w: w, r: r, tbl: tbl, partial: partial, bookmarks: wp.bookmarks}
	if !ws.pump(e, wt, expired) {
		return
	}
	wt.Stop()
	finishStream(e)
	if e.ctx.Err() != nil {
		return // the client left, or the server ended the stream
	}
	s.reportWatchEnd(w, r, wt.Err())
}

// appendWatchEvent appends the newline-terminated JSON of
// api.WatchEvent{Type: ev.Type, Object: <ev.Object as JSON>} to b, byte for
// byte what json.Marshal gives, from ev.Raw when the registry has encoded
// the object already.
func appendWatchEvent(b []byte, ev api.ObjectEvent) ([]byte, error) {
	raw := []byte(ev.Raw)
	if raw == nil {
		var err error
		if raw, err = json.Marshal(ev.Object); err != nil {
			return b, err
		}
	}
	b = append(b, `{"type":`...)
	b = appendJSONString(b, ev.Type)
	b = append(b, `,"object":`...)
	b = append(b, raw...)
	return append(b, "}\n"...), nil
}

// appendJSONString appends s as a JSON string, as json.Marshal would.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// writeEvent writes one watch event line and flushes it.
func writeEvent(w *statusWriter, typ string, obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	line, err := json.Marshal(api.WatchEvent{Type: typ, Object: raw})
	if err != nil {
		return err
	}
	if _, err := w.Write(append(line, '\n')); err != nil {
		return nil // the client is gone; its context ends the stream
	}
	w.Flush()
	return nil
}
