package event

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// handleCreate serves POST /namespaces/{ns}/events.
func (s *Service) handleCreate(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	ev, err := decodeBody(req.Body)
	if err != nil {
		return registry.ActionResult{}, err
	}
	if ev.Namespace != "" && ev.Namespace != req.Namespace {
		return registry.ActionResult{}, api.NewBadRequest("metadata.namespace %q does not match the namespace of the path %q", ev.Namespace, req.Namespace)
	}
	ev.Namespace = req.Namespace
	if ev.Spec.Project != "" {
		out, err := s.create(ctx, ev, req.Options)
		if err != nil {
			return registry.ActionResult{}, err
		}
		return registry.ActionResult{Code: http.StatusCreated, Object: out}, nil
	}
	list, err := s.FanOut(ctx, ev, req.Options)
	if err != nil {
		return registry.ActionResult{}, err
	}
	return registry.ActionResult{Code: http.StatusCreated, Object: list}, nil
}

// decodeBody reads an Event from a request body, refusing unknown fields.
func decodeBody(body []byte) (*api.Event, error) {
	var ev api.Event
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return nil, api.NewBadRequest("the body is not an Event: %v", err)
	}
	if ev.Kind != "" && ev.Kind != api.KindEvent {
		return nil, api.NewBadRequest("the body is a %s, want an Event", ev.Kind)
	}
	if ev.APIVersion != "" && ev.APIVersion != api.APIVersion {
		return nil, api.NewBadRequest("apiVersion %q is not served, want %s", ev.APIVersion, api.APIVersion)
	}
	return &ev, nil
}

// Create stores one Event for the project ev.Spec.Project, following the
// seed's "Event is Created by an API Call": the worker is copied from the
// project's template, the worker is PENDING, and the Event and its
// records (the event's secrets, a point-in-time copy of the project's
// secrets that only admins read, and an empty tokens record: the
// scheduler registers a token for each unit it starts, RegisterToken) are
// committed in one etcd transaction, guarded so that the project and its
// secrets are as they were read. Nothing is written when any part fails. The stored Event is the queue entry: the scheduler takes PENDING
// events from the store.
//
// The caller must be authorized to create events (the endpoint is); the
// writes themselves are the system's. It blocks on the store: one read of
// the project and one per secret, then the transaction (retried when a
// generated name collides or the snapshot changed meanwhile). Errors:
// Invalid (the project does not exist; a secret it names does not; two
// of its secrets share a key; the event's own fields), BadRequest,
// NotFound (the namespace), Conflict (the project kept changing), and the
// store's.
func (s *Service) Create(ctx context.Context, ev *api.Event) (*api.Event, error) {
	obj, err := s.create(ctx, ev, api.WriteOptions{})
	if err != nil {
		return nil, err
	}
	return decodeEvent(obj)
}

// create is Create, answering the stored object; with opts DryRun it
// checks everything and writes nothing.
func (s *Service) create(ctx context.Context, ev *api.Event, opts api.WriteOptions) (*api.Object, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	sys := system(ctx)
	key := ev.Namespace + "/" + ev.Spec.Project
	var (
		out     *api.Object
		attempt int
		stop    error
	)
	err = conflict.RetryIf(ctx, retriable(ev), func() error {
		// The snapshot of the last event of this project is reused: the
		// transaction is guarded on the project and its secrets being at
		// the snapshot's versions, so a stale one fails it (Conflict), and
		// the next attempt reads afresh.
		attempt++
		sn := s.cachedSnapshot(key)
		if sn == nil || attempt > 1 {
			var err error
			if sn, err = readSnapshot(sys, reg, ev.Namespace, ev.Spec.Project); err != nil {
				s.dropSnapshot(key)
				stop = err
				return nil
			}
			s.keepSnapshot(key, sn)
		}
		var err error
		out, err = s.createFor(sys, reg, ev, sn, opts)
		if errors.Is(err, api.ErrConflict) {
			s.dropSnapshot(key)
		}
		return err
	})
	if err == nil {
		err = stop
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// retriable is what a creation of ev tries again (conflict.RetryIf): a
// project or secret that changed between the snapshot and the commit
// (Conflict), or a generated name that collided.
func retriable(ev *api.Event) func(error) bool {
	return func(err error) bool {
		return errors.Is(err, api.ErrConflict) || (errors.Is(err, api.ErrAlreadyExists) && ev.Name == "")
	}
}

// snapshot is a project and its secrets as read at one time.
type snapshot struct {
	project *api.Project
	pobj    *api.Object
	secrets []*api.Object // in the order of spec.secrets

	// copy is the copy of the secrets an event gets, built once (copied).
	copyOnce sync.Once
	copy     *secretsCopy
}

// maxSnapshots bounds the snapshot cache.
const maxSnapshots = 1024

func (s *Service) cachedSnapshot(key string) *snapshot {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	return s.snaps[key]
}

func (s *Service) keepSnapshot(key string, sn *snapshot) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if len(s.snaps) >= maxSnapshots {
		clear(s.snaps)
	}
	s.snaps[key] = sn
}

func (s *Service) dropSnapshot(key string) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	delete(s.snaps, key)
}

// readSnapshot reads the project ns/name and the secrets it names.
// Errors: Invalid when the project or one of its secrets does not exist.
func readSnapshot(ctx context.Context, reg *registry.Registry, ns, name string) (*snapshot, error) {
	p, pobj, err := readProject(ctx, reg, ns, name)
	if err != nil {
		return nil, err
	}
	sn := &snapshot{project: p, pobj: pobj}
	for i, sname := range p.Spec.Secrets {
		obj, err := reg.Get(ctx, api.KindSecret, ns, sname)
		if errors.Is(err, api.ErrNotFound) {
			return nil, api.NewInvalid(api.KindEvent, "", field.ErrorList{field.Invalid(field.NewPath("spec", "project"), p.Name,
				fmt.Sprintf("the project's spec.secrets[%d] names Secret %s, which does not exist", i, sname))})
		}
		if err != nil {
			return nil, err
		}
		sn.secrets = append(sn.secrets, obj)
	}
	return sn, nil
}

func readProject(ctx context.Context, reg *registry.Registry, ns, name string) (*api.Project, *api.Object, error) {
	obj, err := reg.Get(ctx, api.KindProject, ns, name)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil, api.NewInvalid(api.KindEvent, "", field.ErrorList{field.NotFound(field.NewPath("spec", "project"), name)})
	}
	if err != nil {
		return nil, nil, err
	}
	var p api.Project
	if err := obj.Into(&p); err != nil {
		return nil, nil, fmt.Errorf("event: stored project %q does not decode: %w", name, err)
	}
	return &p, obj, nil
}

// createFor is one attempt of Create over the snapshot sn.
func (s *Service) createFor(ctx context.Context, reg *registry.Registry, in *api.Event, sn *snapshot, opts api.WriteOptions) (*api.Object, error) {
	w, err := prepare(in, sn)
	if err != nil {
		return nil, err
	}
	txn := reg.Txn()
	if err := w.addTo(txn, reg); err != nil {
		return nil, err
	}
	res, err := txn.Commit(ctx, opts)
	if err != nil {
		return nil, err
	}
	return res[0].Object, nil
}

// eventWrite is one Event ready to be created: the object, the copy of its
// project's secrets, and the conditions its transaction needs (the project
// and its secrets as read).
type eventWrite struct {
	ev    *api.Event
	obj   *api.Object
	data  map[string][]byte
	conds []store.Cond
}

// prepare builds the Event in for the project of sn: its worker copied
// from the template, a name when it has none, the project's label, and the
// copy of the project's secrets. Errors: Invalid (a worker given in the
// request; two of the project's Secrets with the same key), a stored
// object that does not decode.
func prepare(in *api.Event, sn *snapshot) (*eventWrite, error) {
	if len(in.Spec.Worker.Command) > 0 || in.Spec.Worker.Image != "" {
		return nil, api.NewInvalid(api.KindEvent, in.Name, field.ErrorList{field.Forbidden(field.NewPath("spec", "worker"),
			"the worker is copied from the project's workerTemplate")})
	}
	p := sn.project
	cp := sn.copied()
	conds := []store.Cond{cp.project}
	data := map[string][]byte{} // a fork's event: none of the project's secrets
	if SharesSecrets(p, in) {
		if cp.invalid != nil {
			return nil, api.NewInvalid(api.KindEvent, in.Name, field.ErrorList{cp.invalid})
		}
		if cp.err != nil {
			return nil, cp.err
		}
		data = cp.data
		conds = append(conds, cp.secrets...)
	}
	ev := &api.Event{ObjectMeta: in.ObjectMeta, Spec: in.Spec}
	ev.APIVersion, ev.Kind = api.APIVersion, api.KindEvent
	ev.Spec.Worker = *p.Spec.WorkerTemplate.DeepCopy()
	if ev.Name == "" {
		prefix := ev.GenerateName
		if prefix == "" {
			prefix = p.Name + "-"
		}
		if len(prefix) > 58 {
			prefix = prefix[:58]
		}
		ev.Name = prefix + suffix()
	}
	ev.GenerateName = ""
	ev.Labels = maps.Clone(ev.Labels)
	if ev.Labels == nil {
		ev.Labels = map[string]string{}
	}
	ev.Labels[api.LabelEventProject] = p.Name
	obj, err := api.FromResource(ev)
	if err != nil {
		return nil, err
	}
	return &eventWrite{ev: ev, obj: obj, data: data, conds: conds}, nil
}

// addTo adds the Event's creation and its records' (recordWrites) to txn.
// Errors: the records' encoding or sealing.
func (w *eventWrite) addTo(txn *registry.Txn, reg *registry.Registry) error {
	pending := txn.Create(w.obj)
	ev := *w.ev
	ev.UID = pending.UID
	rconds, rops, err := recordWrites(reg, &ev, w.data)
	if err != nil {
		return err
	}
	txn.Also(append(slices.Clone(w.conds), rconds...), rops...)
	return nil
}

// TokenUser is the identity an event's worker token is registered as.
func TokenUser(ns, name string) identity.User {
	return identity.User{Name: "event:" + ns + "/" + name, Scope: ns + "/" + name}
}

// unchanged guards a transaction on obj (of kind) being as it was read.
func unchanged(kind string, obj *api.Object) store.Cond {
	rev, _ := strconv.ParseInt(obj.ResourceVersion, 10, 64)
	return store.Unchanged(registry.KeyPrefix+api.Plural(kind)+"/"+obj.Namespace+"/"+obj.Name, rev)
}

// suffix is a random name suffix of 5 lower-case letters and digits.
func suffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
