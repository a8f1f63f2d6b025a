package server

import (
	"net/http"
	"strings"
	"time"

	"cairn.dev/cairn/api"
)

// webhookRoute reports whether the path p is a Gateway's webhook endpoint,
// {BasePath}/namespaces/{ns}/gateways/{name}/webhook, and its namespace
// and name.
func webhookRoute(p string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(p, api.BasePath+"/namespaces/")
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 4 || parts[0] == "" || parts[1] != api.Plural(api.KindGateway) || parts[2] == "" ||
		parts[3] != api.GatewayWebhookAction {
		return "", "", false
	}
	return parts[0], parts[2], true
}

// serveWebhook hands a delivery to Options.Webhooks, with the path values
// "namespace" and "name" set. It is not authenticated by an API token (the
// handler authenticates the delivery by its signature or the Gateway's
// token), but it is admitted like any request (429 beyond the cap on
// requests in flight) and counted in the request metrics.
func (s *Server) serveWebhook(w *statusWriter, r *http.Request, ns, name string) {
	start := time.Now()
	defer func() { s.metrics.observe(api.GatewayWebhookAction, api.Plural(api.KindGateway), w.status(), start) }()
	r, _ = withRequestID(w, r)
	r, release, ok := s.admit(w, r, false)
	if !ok {
		return
	}
	defer release()
	r.SetPathValue("namespace", ns)
	r.SetPathValue("name", name)
	s.opts.Webhooks.ServeHTTP(w, r)
}

// isWebhook reports whether p is a Gateway's webhook endpoint.
func isWebhook(p string) bool {
	_, _, ok := webhookRoute(p)
	return ok
}
