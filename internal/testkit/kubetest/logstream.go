package kubetest

import (
	"net/http"
	"sync"
)

// logStream is the output of a pod's process as it grows: a writer for
// the process, read by the node's log endpoint.
type logStream struct {
	mu   sync.Mutex
	buf  []byte
	done bool
	more chan struct{} // closed and replaced on every write and at the end
}

func newLogStream() *logStream { return &logStream{more: make(chan struct{})} }

// Write appends p; it never fails.
func (s *logStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	close(s.more)
	s.more = make(chan struct{})
	return len(p), nil
}

// end marks the output complete: followers stop once they have it all.
func (s *logStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done = true
		close(s.more)
	}
}

// from returns the output after the first off bytes, whether the stream
// has ended, and a channel closed on the next change.
func (s *logStream) from(off int) ([]byte, bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.buf[off:]...), s.done, s.more
}

// serve writes the output to w: what there is, or, when follow, all of it
// as it comes until the stream ends or the request does. It blocks.
func (s *logStream) serve(w http.ResponseWriter, r *http.Request, follow bool) {
	flusher, _ := w.(http.Flusher)
	off := 0
	for {
		b, done, more := s.from(off)
		if _, err := w.Write(b); err != nil {
			return
		}
		off += len(b)
		if flusher != nil {
			flusher.Flush()
		}
		if done || !follow {
			return
		}
		select {
		case <-more:
		case <-r.Context().Done():
			return
		}
	}
}
