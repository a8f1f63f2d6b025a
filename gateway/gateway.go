// Package gateway receives webhook deliveries for Gateways and turns them
// into Events by fan-out (DESIGN.md "Gateways"). Its decisions are pure
// functions with table tests — VerifySignature and VerifyBearer (who may
// deliver), MapGitHub and MapCloudEvent (which Event a delivery is, a fork
// or not), EventName (one Event per delivery and project) —; Handler is
// the thin HTTP endpoint around them that reads the Gateway and its
// Secret and calls the event service's fan-out.
//
// The endpoint, POST /apis/cairn.dev/v1alpha1/namespaces/{ns}/gateways/
// {name}/webhook, is served by the API server without an API token
// (server.Options.Webhooks): a delivery is authenticated by its signature
// (github) or the Gateway's bearer token (cloudevents). Secret values are
// never logged nor put in errors.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
)

// MaxBodyBytes is the largest delivery a Gateway accepts (413 beyond):
// 512 KiB, the most an Event's payload holds. (GitHub caps its payloads at
// 25 MB, but a push or pull_request delivery is a few tens of KiB.)
const MaxBodyBytes = 512 << 10

// The headers of a GitHub delivery besides its signature.
const (
	EventHeader    = "X-GitHub-Event"
	DeliveryHeader = "X-GitHub-Delivery"
)

// Options configures a Handler.
type Options struct {
	// Events creates the Events (its FanOutNamed). Required.
	Events *event.Service
	// Logger; default slog.Default(). Deliveries no project subscribes to
	// are logged at debug level.
	Logger *slog.Logger
	// Metrics is where the handler registers its collectors; nil: none
	// are registered.
	Metrics prometheus.Registerer
}

// Handler serves the webhook endpoint of every Gateway. Build it with New,
// Bind it to the registry, and give it to the API server
// (server.Options.Webhooks). It is safe for concurrent use.
type Handler struct {
	events  *event.Service
	log     *slog.Logger
	metrics *metrics
	reg     atomic.Pointer[registry.Registry]
	cache   *gatewayCache
}

// Result is the answer to a delivery that was accepted (200).
type Result struct {
	api.TypeMeta `json:",inline"`
	// Delivery is the delivery's identity (X-GitHub-Delivery, or a
	// CloudEvent's id).
	Delivery string `json:"delivery,omitempty"`
	// Events are the names of the Events created, one per subscribed
	// project; empty for a ping, an ignored or a repeated delivery, or one
	// no project subscribes to (Message says which).
	Events []string `json:"events"`
	// Outcome is created, repeated, ping, ignored or unsubscribed.
	Outcome string `json:"outcome"`
	Message string `json:"message,omitempty"`
}

// The outcomes of an accepted delivery (Result.Outcome).
const (
	OutcomeCreated      = "created"
	OutcomeRepeated     = "repeated"
	OutcomePing         = "ping"
	OutcomeIgnored      = "ignored"
	OutcomeUnsubscribed = "unsubscribed"
)

// New returns a Handler that answers 503 until Bind. Errors: its metrics
// cannot be registered (already registered there).
func New(opts Options) (*Handler, error) {
	if opts.Events == nil {
		return nil, errors.New("gateway: Options.Events is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	return &Handler{events: opts.Events, log: opts.Logger, metrics: m, cache: newGatewayCache(time.Now)}, nil
}

// Bind gives the handler the registry it reads Gateways and Secrets from.
// Call it once, before serving.
func (h *Handler) Bind(reg *registry.Registry) {
	h.reg.Store(reg)
}

// ServeHTTP serves one delivery to the Gateway named by the request's path
// values "namespace" and "name" (the API server sets them). It blocks on
// reading the body, two store reads (the Gateway, its Secret; a Gateway
// read in the last 2 s is not read again) and the fan-out. Answers: 200 with a Result (created, repeated, ping, ignored,
// no project subscribed), 400 (not JSON, not a CloudEvent, a header
// missing), 401 (signature or token), 404 (no such Gateway), 405, 413,
// 503 (not bound, the Gateway's Secret unreadable), and the fan-out's
// errors as api.Status.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	res, gwType, err := h.serve(r, ns, name)
	outcome := outcomeOf(res, err)
	h.metrics.deliveries.WithLabelValues(string(gwType), outcome).Inc()
	if err != nil {
		st := api.AsStatus(err)
		if st.Code >= 500 {
			h.log.Error("gateway: delivery failed", "namespace", ns, "gateway", name, "error", api.LogValue(err))
		}
		_, _ = api.WriteStatus(w, st)
		return
	}
	res.TypeMeta = api.TypeMeta{APIVersion: api.APIVersion, Kind: "WebhookResult"}
	_ = api.WriteJSON(w, http.StatusOK, res)
}

// serve is ServeHTTP's work: the result or the error to answer.
func (h *Handler) serve(r *http.Request, ns, name string) (*Result, api.GatewayType, error) {
	if r.Method != http.MethodPost {
		return nil, "", api.NewStatus(api.ReasonMethodNotAllowed, "a Gateway's webhook takes POST, not %s", r.Method)
	}
	reg := h.reg.Load()
	if reg == nil {
		return nil, "", api.NewUnavailable(1, "the gateway is not ready")
	}
	body, err := readBody(r)
	if err != nil {
		return nil, "", err
	}
	ctx := identity.With(api.WithoutOnBehalfOf(r.Context()), identity.System())
	gw, secret, err := h.cache.get(ctx, reg, ns, name)
	if err != nil {
		return nil, "", err
	}
	var res *Result
	switch gw.Spec.Type {
	case api.GatewayGitHub:
		res, err = h.serveGitHub(ctx, gw, secret, r.Header, body)
	case api.GatewayCloudEvents:
		res, err = h.serveCloudEvent(ctx, gw, secret, r.Header, body)
	default:
		err = api.NewStatus(api.ReasonInternalError, "the Gateway has the unknown type %q", gw.Spec.Type)
	}
	return res, gw.Spec.Type, err
}

// readBody reads r's body up to MaxBodyBytes. Errors: RequestEntityTooLarge
// beyond it, BadRequest when it cannot be read.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, api.NewBadRequest("the delivery's body could not be read: %v", err)
	}
	if len(body) > MaxBodyBytes {
		return nil, api.NewStatus(api.ReasonTooLarge, "the delivery is larger than a Gateway's limit of %d bytes "+
			"(the most an Event's payload holds)", MaxBodyBytes)
	}
	return body, nil
}

// readGateway reads the Gateway ns/name and the value of its secret.
// Errors: NotFound (no such Gateway), Unavailable (its Secret or key is
// missing: the message names them, never a value), the store's.
func readGateway(ctx context.Context, reg *registry.Registry, ns, name string) (*api.Gateway, []byte, error) {
	obj, err := reg.Get(ctx, api.KindGateway, ns, name)
	if err != nil {
		return nil, nil, err
	}
	var gw api.Gateway
	if err := obj.Into(&gw); err != nil {
		return nil, nil, fmt.Errorf("gateway: stored Gateway %s/%s does not decode: %w", ns, name, err)
	}
	ref := gw.Spec.SecretRef
	sobj, err := reg.Get(ctx, api.KindSecret, ns, ref.Name)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil, api.NewUnavailable(10, "the Gateway's spec.secretRef names Secret %s, which does not exist", ref.Name)
	}
	if err != nil {
		return nil, nil, err
	}
	var sec api.Secret
	if err := sobj.Into(&sec); err != nil {
		return nil, nil, fmt.Errorf("gateway: stored Secret %s/%s does not decode: %w", ns, ref.Name, err)
	}
	v, ok := sec.Data[ref.Key]
	if !ok || len(v) == 0 {
		return nil, nil, api.NewUnavailable(10, "the Gateway's Secret %s has no key %s (spec.secretRef.key)", ref.Name, ref.Key)
	}
	return &gw, v, nil
}

// serveGitHub checks and maps a GitHub delivery, then fans it out.
func (h *Handler) serveGitHub(ctx context.Context, gw *api.Gateway, secret []byte, hdr http.Header, body []byte) (*Result, error) {
	if err := VerifySignature(secret, body, hdr.Get(SignatureHeader)); err != nil {
		return nil, err
	}
	if err := checkJSON(hdr, body); err != nil {
		return nil, err
	}
	typ, id := hdr.Get(EventHeader), hdr.Get(DeliveryHeader)
	if typ == "" {
		return nil, api.NewBadRequest("the delivery has no %s header", EventHeader)
	}
	d, err := MapGitHub(typ, body)
	if err != nil {
		return nil, err
	}
	switch {
	case d.Ping:
		return &Result{Delivery: id, Events: []string{}, Outcome: OutcomePing, Message: "pong"}, nil
	case d.Ignored != "":
		h.metrics.ignored.WithLabelValues(string(api.GatewayGitHub), typ).Inc()
		return &Result{Delivery: id, Events: []string{}, Outcome: OutcomeIgnored, Message: d.Ignored}, nil
	case id == "":
		return nil, api.NewBadRequest("the delivery has no %s header: it names the delivery, so that a repeated one "+
			"creates nothing", DeliveryHeader)
	}
	return h.fanOut(ctx, gw, id, d)
}

// serveCloudEvent checks and maps a CloudEvents delivery, then fans it
// out.
func (h *Handler) serveCloudEvent(ctx context.Context, gw *api.Gateway, token []byte, hdr http.Header, body []byte) (*Result, error) {
	if err := VerifyBearer(token, hdr.Get("Authorization")); err != nil {
		return nil, err
	}
	d, id, err := MapCloudEvent(hdr, body)
	if err != nil {
		return nil, err
	}
	return h.fanOut(ctx, gw, id, d)
}

// checkJSON refuses a body that is not JSON. Errors: BadRequest naming the
// content type to set.
func checkJSON(hdr http.Header, body []byte) error {
	if ct := hdr.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return api.NewBadRequest("the delivery's Content-Type is %q: set the webhook's content type in GitHub "+
				"to application/json", ct)
		}
	}
	if !jsonValid(body) {
		return api.NewBadRequest("the delivery's body is not JSON: set the webhook's content type in GitHub to application/json")
	}
	return nil
}

// fanOut creates the Events of delivery id (mapped to d) for every
// subscribed project of gw's namespace, named by EventName. A repeated
// delivery (its Events exist) and one no project subscribes to are
// answered, not errors.
func (h *Handler) fanOut(ctx context.Context, gw *api.Gateway, id string, d Delivery) (*Result, error) {
	ev := &api.Event{ObjectMeta: api.ObjectMeta{Namespace: gw.Namespace,
		Annotations: map[string]string{AnnotationGateway: gw.Name}},
		Spec: api.EventSpec{Source: d.Source, Type: d.Type, Qualifiers: d.Qualifiers, Labels: d.Labels,
			Payload: d.Payload, ShortTitle: d.Title}}
	name := func(project string) string { return EventName(gw.Namespace, gw.Name, id, project) }
	out, err := h.events.FanOutNamed(ctx, ev, name, api.WriteOptions{})
	if errors.Is(err, api.ErrAlreadyExists) {
		h.metrics.repeated.WithLabelValues(string(gw.Spec.Type)).Inc()
		return &Result{Delivery: id, Events: []string{}, Outcome: OutcomeRepeated, Message: "a repeated delivery: its events exist"}, nil
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Delivery: id, Events: []string{}, Outcome: OutcomeCreated}
	for _, p := range out.Projects {
		if p.Event != "" {
			res.Events = append(res.Events, p.Event)
		}
	}
	if len(out.Projects) == 0 {
		h.log.Debug("gateway: no project subscribes to the delivery", "namespace", gw.Namespace, "gateway", gw.Name,
			"delivery", id, "source", d.Source, "type", d.Type, "qualifiers", d.Qualifiers)
		res.Outcome, res.Message = OutcomeUnsubscribed, "no project subscribes to this event"
	}
	return res, nil
}

// AnnotationGateway is set on the Events a Gateway creates: the Gateway's
// name (in the Event's namespace).
const AnnotationGateway = "cairn.dev/gateway"
