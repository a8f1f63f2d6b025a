package manager

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// logs serves GET .../namespaces/{ns}/{events|deployitems}/{name}/logs on
// a controller process's own address (Handler), for API servers that
// forward it to the leader: the output of the event's worker (?job=: of
// one of its jobs) or of the container deploy item's last run (?delete=
// true: of its delete command), read from this process's runtime
// (?follow=true: streamed until the unit ends). Whoever may read the
// object at the API server may read its logs here. A unit this runtime
// does not hold is NotFound: the API server serves ended units from the
// tail kept through the API.
func (h *handler) logs(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, api.BasePath+"/"), "/")
	if len(segs) != 5 || segs[0] != "namespaces" || (segs[2] != api.Plural(api.KindEvent) && segs[2] != api.Plural(api.KindDeployItem)) {
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the path %q is not served by a controller manager", r.URL.Path))
		return
	}
	ns, plural, name := segs[1], segs[2], segs[3]
	exists, ok := h.allowed(w, r, strings.TrimSuffix(r.URL.Path, "/"+api.ActionLogs))
	if !ok {
		return
	}
	kind := api.KindEvent
	if plural == api.Plural(api.KindDeployItem) {
		kind = api.KindDeployItem
	}
	if !exists {
		writeStatus(w, api.NewNotFound(kind, name))
		return
	}
	rt := h.m.opts.Runtime
	if rt == nil {
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "this controller manager runs no units: it holds no logs"))
		return
	}
	id, err := h.logUnit(r, kind, ns, name)
	if err != nil {
		writeStatus(w, err)
		return
	}
	rc, err := rt.Logs(r.Context(), id, runtime.LogOptions{Follow: r.URL.Query().Get("follow") == "true"})
	if errors.Is(err, runtime.ErrNotFound) {
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "no logs for %s here: it has not started", id))
		return
	}
	if err != nil {
		writeStatus(w, api.NewStatus(api.ReasonUnavailable, "the runtime cannot read the logs of %s: %v", id, err))
		return
	}
	defer rc.Close()
	stream(w, r, rc)
}

// logUnit reads kind ns/name through the API (as the controllers) and
// returns the unit whose logs the request asks for. Errors: the API's;
// NotFound for a job the event does not have or an item that never ran.
func (h *handler) logUnit(r *http.Request, kind, ns, name string) (string, error) {
	obj, err := h.m.opts.Client.Get(r.Context(), kind, ns, name)
	if err != nil {
		return "", err
	}
	q := r.URL.Query()
	if kind == api.KindEvent {
		var ev api.Event
		if err := obj.Into(&ev); err != nil {
			return "", err
		}
		return api.EventLogUnit(&ev, q.Get("job"))
	}
	var d api.DeployItem
	if err := obj.Into(&d); err != nil {
		return "", err
	}
	return api.DeployItemLogUnit(&d, q.Get("delete") == "true")
}

// stream copies rc to w as it is read, flushing every chunk, until rc
// ends or the client goes (then rc is closed).
func stream(w http.ResponseWriter, r *http.Request, rc io.ReadCloser) {
	stop := context.AfterFunc(r.Context(), func() { rc.Close() })
	defer stop()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := rc.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}
