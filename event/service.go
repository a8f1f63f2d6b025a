// Package event holds the rules of cairn's event API (Brigade's service
// layer): creating an Event for one project or for every subscribed one,
// each together with its Secret and its worker's token in one etcd
// transaction; cancelling one or many; deleting many; the jobs a worker
// creates; the logs of workers and jobs; and what a worker's token may do.
// The HTTP server only maps requests to it: the Service's endpoints are the
// Event kind's actions (Actions), its authorization rule is a registry rule
// (Authorize) and its token check is the authenticator's (CheckToken).
//
// Persistence is the registry's (the store), processes the runtime's (the
// substrate): this package decides, they keep.
package event

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/logsource"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/runtime"
)

// Options configures a Service. The zero value is usable.
type Options struct {
	// Now is the clock of the times the service writes; default time.Now.
	Now func() time.Time
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Logs is where the logs of workers and jobs are read from; default a
	// source of its own, bound with the service (Bind).
	Logs *logsource.Source
}

// Service serves the event endpoints. Build it with New, give its Actions
// and RemoveWrites to the Event kind (kinds.Deps) and its Authorize rule to
// the registry, then Bind it to the registry built with them (and to the
// runtime holding the logs). It is safe for concurrent use.
type Service struct {
	opts Options

	mu  sync.RWMutex
	reg *registry.Registry
	rt  runtime.Runtime

	// grants caches, by token scope, what CheckToken found for it last:
	// the project's workerPermissions, for the Authorize rule (which must
	// not block). Every authenticated request of a scoped token refreshes
	// its entry first.
	grantsMu sync.Mutex
	grants   map[string]grant

	// snaps caches, by "ns/project", the last snapshot of a project and
	// its secrets that an event was created from (see Create).
	snapMu sync.Mutex
	snaps  map[string]*snapshot

	// subs caches the projects' subscriptions, for fan-outs
	// (subscriptions.go).
	subs *subscriptionCache
}

// New returns a Service that serves nothing until Bind.
func New(opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Logs == nil {
		opts.Logs = &logsource.Source{}
	}
	return &Service{opts: opts, grants: map[string]grant{}, snaps: map[string]*snapshot{}, subs: newSubscriptionCache()}
}

// Bind gives the service the registry it acts on and the runtime whose
// logs it serves first (nil: it runs no controllers, and logs come from
// the kept tails or the leader: Options.Logs). Call it once the registry
// is built, before serving.
func (s *Service) Bind(reg *registry.Registry, rt runtime.Runtime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reg, s.rt = reg, rt
	s.opts.Logs.Bind(reg, rt)
}

func (s *Service) registry() (*registry.Registry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.reg == nil {
		return nil, api.NewStatus(api.ReasonUnavailable, "the event service is not ready")
	}
	return s.reg, nil
}

// system is ctx acting as the system: the service's own reads and writes,
// after the caller was authorized for the endpoint.
func system(ctx context.Context) context.Context {
	return identity.With(api.WithoutOnBehalfOf(ctx), identity.System())
}

// Actions are the Event kind's endpoints:
//
//	POST   /namespaces/{ns}/events                  create (one, or fan-out)
//	POST   /namespaces/{ns}/events/{name}/cancel    cancel one
//	POST   /namespaces/{ns}/events/cancel           cancel many (?project=&phases=)
//	DELETE /namespaces/{ns}/events                  delete many (?project=&phases=)
//	POST   /namespaces/{ns}/events/{name}/jobs      a worker creates a job
//	GET    /namespaces/{ns}/events/{name}/logs      worker or job logs (?job=&follow=)
//	GET    /namespaces/{ns}/events/search           list by project, source, type, phases, labels
//	GET    /namespaces/{ns}/events/{name}/secrets   the event's secrets (admins only: the scheduler)
//	POST   /namespaces/{ns}/events/{name}/tokens    register a unit's token by its hash (admins only)
func (s *Service) Actions() []registry.Action {
	return []registry.Action{
		{Name: "", Method: http.MethodPost, Collection: true, Handle: s.handleCreate,
			Params: []string{"dryRun", "fieldManager", "fieldValidation"}},
		{Name: "cancel", Method: http.MethodPost, Handle: s.handleCancel},
		{Name: "cancel", Method: http.MethodPost, Collection: true, Handle: s.handleCancelMany, Params: criteriaParams},
		{Name: "", Method: http.MethodDelete, Collection: true, Handle: s.handleDeleteMany, Params: criteriaParams},
		{Name: "jobs", Method: http.MethodPost, Handle: s.handleJob},
		{Name: "logs", Method: http.MethodGet, Handle: s.handleLogs, Params: []string{"job", "follow"}},
		{Name: "search", Method: http.MethodGet, Collection: true, Handle: s.handleSearch,
			Params: []string{"project", "source", "type", "phases", "labelSelector"}},
		{Name: api.ActionEventSecrets, Method: http.MethodGet, Handle: s.handleSecrets,
			Authorize: adminOnly("an event's secrets are the scheduler's: only admins read them")},
		{Name: api.ActionEventTokens, Method: http.MethodPost, Handle: s.handleTokens,
			Authorize: adminOnly("only admins (the scheduler) register the tokens of an event's units")},
	}
}

// criteriaParams are the query parameters of cancel-many and delete-many.
var criteriaParams = []string{"project", "phases"}

// getEvent reads the event ns/name as the system.
func (s *Service) getEvent(ctx context.Context, ns, name string) (*api.Event, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	obj, err := reg.Get(system(ctx), api.KindEvent, ns, name)
	if err != nil {
		return nil, err
	}
	return decodeEvent(obj)
}

func decodeEvent(obj *api.Object) (*api.Event, error) {
	var ev api.Event
	if err := obj.Into(&ev); err != nil {
		return nil, fmt.Errorf("event: stored event %q does not decode: %w", obj.Name, err)
	}
	return &ev, nil
}

// eventList is the EventList of evs.
func eventList(evs []*api.Object) *api.List {
	if evs == nil {
		evs = []*api.Object{}
	}
	return &api.List{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent + "List"}, Items: evs}
}

// Logs is the source the service reads the logs of workers and jobs from
// (Options.Logs): the process wires the deploy items' logs and the
// forwarding to the controllers' leader on it too.
func (s *Service) Logs() *logsource.Source { return s.opts.Logs }
