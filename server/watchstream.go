package server

import (
	"errors"
	"net/http"
	"os"
	"time"

	"cairn.dev/cairn/api"
)

// The steps of serveWatch, in the order it takes them.

// refuseWatch answers a watch the registry would not start. A stream cut or
// shut down while the watch was being set up is aborted (a cut) or told to
// retry (a shutdown): that failure is the server's to hide, not an
// internal error to report. Otherwise err is written as its Status.
func (s *Server) refuseWatch(w *statusWriter, r *http.Request, e *stream, err error) {
	if e.ctx.Err() != nil {
		finishStream(e)
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "the server ended the watch; retry"))
		return
	}
	s.writeError(w, r, err)
}

// startWatchResponse writes the 200 header of a watch stream and flushes it,
// so the client knows the watch is established before any event.
func startWatchResponse(w *statusWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Flush()
}

// watchStream writes the events of one watch to its response.
//
// Events from the registry's shared watch cache carry their object's JSON
// (Raw), encoded once for every watcher: only the line around it is made
// here, in a buffer the stream reuses. A burst of events is flushed once,
// after its last event.
type watchStream struct {
	s         *Server
	w         *statusWriter
	r         *http.Request
	tbl       *tabler // non-nil: each change is sent as a Table of one row
	partial   bool    // each object is sent as its metadata
	bookmarks bool    // the client allows BOOKMARK events
	line      []byte  // the buffer of the line being sent
}

// pump sends the events of wt until the watch ends, the stream's context
// ends or expired fires; it blocks until then. It reports true when the
// stream is to be finished (the watch ended, the context ended, an event
// could not be encoded) and false when the response is over already: the
// client is gone (a write failed) or the timeout ended the stream cleanly.
func (ws *watchStream) pump(e *stream, wt api.Watcher, expired <-chan time.Time) bool {
	events := wt.Events()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return true
			}
			if ws.skip(ev) {
				if len(events) == 0 {
					ws.w.Flush() // the burst it ended
				}
				continue
			}
			line, ok := ws.encode(ev)
			if !ok {
				return true
			}
			if !ws.write(line) {
				return false
			}
			if len(events) == 0 {
				ws.w.Flush()
			}
		case <-e.ctx.Done():
			return true
		case <-expired:
			wt.Stop()
			ws.w.Flush()
			return false // timeoutSeconds: a clean end
		}
	}
}

// skip reports whether ev is a BOOKMARK the client did not ask for; the
// one that ends the initial events of sendInitialEvents is always sent.
func (ws *watchStream) skip(ev api.ObjectEvent) bool {
	return ev.Type == api.Bookmark && !ws.bookmarks && ev.Object.Annotations[api.InitialEventsEndAnnotation] == ""
}

// encode returns the line of ev in the stream's buffer, valid until the
// next call: its object as a Table of one row, as metadata, or as is. On
// failure it logs what could not be encoded and reports false.
func (ws *watchStream) encode(ev api.ObjectEvent) ([]byte, bool) {
	var err error
	if ws.tbl != nil && (ev.Type == api.Added || ev.Type == api.Modified || ev.Type == api.Deleted) {
		// Each change as a Table of one row.
		if ev.Raw, err = ws.tbl.table([]*api.Object{ev.Object}, api.ListMeta{ResourceVersion: ev.Object.ResourceVersion}); err != nil {
			ws.s.log.Error("encode watch event as a table", "path", ws.r.URL.Path, "err", err)
			return nil, false
		}
	}
	if ws.partial {
		if ev.Raw, err = partialObject(ev.Object); err != nil {
			ws.s.log.Error("encode watch event as metadata", "path", ws.r.URL.Path, "err", err)
			return nil, false
		}
	}
	if ws.line, err = appendWatchEvent(ws.line[:0], ev); err != nil {
		ws.s.log.Error("encode watch event", "path", ws.r.URL.Path, "err", err)
		return nil, false
	}
	return ws.line, true
}

// write sends one line, unflushed, and reports false when the client is
// gone, or took nothing for the write timeout (counted as a drop): the
// connection is closed when the request ends. A buffer grown past 1 MiB
// is let go, so none stays huge for the stream's life.
func (ws *watchStream) write(line []byte) bool {
	if _, err := ws.w.Write(line); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			ws.s.metrics.watchDrops.WithLabelValues("write-timeout").Inc()
		}
		return false
	}
	if cap(ws.line) > 1<<20 {
		ws.line = nil
	}
	return true
}

// reportWatchEnd tells the client why the registry ended its watch: an
// ERROR event carrying err's Status. A watch that fell behind counts as a
// drop; an unavailable store is logged as a warning, a server failure as
// an error. A nil err (the watch was stopped) sends nothing.
func (s *Server) reportWatchEnd(w *statusWriter, r *http.Request, err error) {
	if err == nil {
		return
	}
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
