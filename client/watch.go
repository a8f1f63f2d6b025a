package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"cairn.dev/cairn/api"
)

func (c *httpClient) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	p, err := c.path(ctx, kind, ns, "")
	if err != nil {
		return nil, err
	}
	q := listQuery(api.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
	q.Set("watch", "true")
	// Bookmarks keep the watcher's version current, as the in-process
	// client's watches do.
	q.Set("allowWatchBookmarks", "true")
	if opts.ResourceVersion != "" {
		q.Set("resourceVersion", opts.ResourceVersion)
	}
	if s := opts.SendInitialEvents; s != nil {
		q.Set("sendInitialEvents", strconv.FormatBool(*s))
	}
	wctx, cancel := context.WithCancel(ctx)
	resp, err := c.do(wctx, http.MethodGet, p, q, nil, "")
	if err != nil {
		cancel()
		return nil, err
	}
	w := &httpWatcher{events: make(chan api.ObjectEvent, 64), cancel: cancel, done: make(chan struct{})}
	go w.run(wctx, resp.Body)
	return w, nil
}

// httpWatcher decodes a newline-delimited JSON watch stream into events.
type httpWatcher struct {
	events chan api.ObjectEvent
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error // set before done is closed
}

func (w *httpWatcher) Events() <-chan api.ObjectEvent { return w.events }

func (w *httpWatcher) Err() error {
	<-w.done
	return w.err
}

func (w *httpWatcher) Stop() {
	w.once.Do(w.cancel)
	<-w.done
}

// run reads the stream until it ends, ctx is done, or an ERROR event
// arrives; it sends each event on w.events and then closes it.
func (w *httpWatcher) run(ctx context.Context, body io.ReadCloser) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		var we api.WatchEvent
		if err := dec.Decode(&we); err != nil {
			switch {
			case ctx.Err() != nil:
				// Stopped by the caller: not an error.
			case errors.Is(err, io.EOF):
				w.err = ErrWatchClosed
			default:
				w.err = fmt.Errorf("client: watch stream broken: %w", err)
			}
			return
		}
		if we.Type == api.Error {
			w.err = decodeStatus(we.Object)
			return
		}
		obj := &api.Object{}
		if err := json.Unmarshal(we.Object, obj); err != nil {
			w.err = fmt.Errorf("client: watch: decode %s event: %w", we.Type, err)
			return
		}
		select {
		case w.events <- api.ObjectEvent{Type: we.Type, Object: obj}:
		case <-ctx.Done():
			return
		}
	}
}

// decodeStatus decodes the object of an ERROR event.
func decodeStatus(raw json.RawMessage) error {
	st := &api.Status{}
	if err := json.Unmarshal(raw, st); err != nil || st.Reason == "" {
		return api.NewStatus(api.ReasonInternalError, "watch ended with an undecodable error: %s", string(raw))
	}
	if st.Code == 0 {
		st.Code = st.Reason.Code()
	}
	return st
}
