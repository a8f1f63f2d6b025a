package server

import (
	"log/slog"
	"net/http"
	"time"

	"cairn.dev/cairn/api"
)

// writeError is the one place where an error becomes an HTTP response of
// the API server: api.WriteStatus (the api.Status of err as JSON with its
// code). Only server-side failures (5xx) are logged, with the request's
// method, path and id, never its body: a store outage (503, 504) as a
// warning, anything else as an error; a failure caused by the client
// going away is not logged.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if st := api.AsStatus(err); st.Code >= 500 && r.Context().Err() == nil {
		level := slog.LevelError
		if st.Reason == api.ReasonUnavailable || st.Reason == api.ReasonTimeout {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path, "code", st.Code,
			"requestID", w.Header().Get(RequestIDHeader), "err", api.LogValue(err))
	}
	if _, werr := api.WriteStatus(w, err); werr != nil {
		s.log.Error("encode response", "method", r.Method, "path", r.URL.Path, "err", werr)
	}
}

// writeJSON writes v as JSON with code (api.WriteJSON), logging a value
// that does not encode (a 500 is written instead).
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, code int, v any) {
	if err := api.WriteJSON(w, code, v); err != nil {
		s.log.Error("encode response", "method", r.Method, "path", r.URL.Path, "err", err)
	}
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}

// statusWriter records the response code for metrics and whether the
// header was written, and bounds each write with the write timeout
// (armDeadline).
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool

	writeTimeout time.Duration // <= 0: none
	renewAt      time.Time     // when the write deadline is next renewed
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wroteHeader {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.armDeadline()
	return w.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client.
func (w *statusWriter) Flush() {
	w.armDeadline()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// status returns the code written (200 when only a body was written).
func (w *statusWriter) status() int {
	if !w.wroteHeader {
		return http.StatusOK
	}
	return w.code
}
