package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
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
		if e.ctx.Err() != nil {
			// Cut or shut down while the watch was being set up: the
			// failure is ours to hide, not an internal error to report.
			finishStream(e)
			s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "the server ended the watch; retry"))
			return
		}
		s.writeError(w, r, err)
		return
	}
	defer wt.Stop()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Flush()

	// Events from the registry's shared watch cache carry their object's
	// JSON (Raw), encoded once for every watcher: only the line around it
	// is made here, in a buffer the stream reuses. A burst of events is
	// flushed once, after its last event.
	events := wt.Events()
	var line []byte
	for open := true; open; {
		select {
		case ev, ok := <-events:
			if !ok {
				open = false
				break
			}
			if ev.Type == api.Bookmark && !wp.bookmarks && ev.Object.Annotations[api.InitialEventsEndAnnotation] == "" {
				if len(events) == 0 {
					w.Flush() // the burst it ended
				}
				continue
			}
			if tbl != nil && (ev.Type == api.Added || ev.Type == api.Modified || ev.Type == api.Deleted) {
				// Each change as a Table of one row.
				if ev.Raw, err = tbl.table([]*api.Object{ev.Object}, api.ListMeta{ResourceVersion: ev.Object.ResourceVersion}); err != nil {
					s.log.Error("encode watch event as a table", "path", r.URL.Path, "err", err)
					open = false
					break
				}
			}
			if partial {
				if ev.Raw, err = partialObject(ev.Object); err != nil {
					s.log.Error("encode watch event as metadata", "path", r.URL.Path, "err", err)
					open = false
					break
				}
			}
			if line, err = appendWatchEvent(line[:0], ev); err != nil {
				s.log.Error("encode watch event", "path", r.URL.Path, "err", err)
				open = false
				break
			}
			if _, err := w.Write(line); err != nil {
				// The client is gone, or took nothing for the write
				// timeout: the connection is closed when the request ends.
				if errors.Is(err, os.ErrDeadlineExceeded) {
					s.metrics.watchDrops.WithLabelValues("write-timeout").Inc()
				}
				return
			}
			if len(events) == 0 {
				w.Flush()
			}
			if cap(line) > 1<<20 {
				line = nil // keep no huge buffer for the stream's life
			}
		case <-e.ctx.Done():
			open = false
		case <-expired:
			wt.Stop()
			w.Flush()
			return // timeoutSeconds: a clean end
		}
	}
	wt.Stop()
	finishStream(e)
	if e.ctx.Err() != nil {
		return // the client left, or the server ended the stream
	}
	if err := wt.Err(); err != nil {
		st := api.AsStatus(err)
		if st.Reason == api.ReasonTooManyRequests {
			s.metrics.watchDrops.WithLabelValues("behind").Inc()
		}
		switch {
		case st.Reason == api.ReasonUnavailable:
			s.log.Warn("watch ended: the store is unavailable", "path", r.URL.Path, "err", api.LogValue(err))
		case st.Code >= 500:
			s.log.Error("watch failed", "path", r.URL.Path, "err", api.LogValue(err))
		}
		_ = writeEvent(w, api.Error, st)
	}
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
