package event

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// An event's system records live beside it, outside the registry's
// objects (no API request lists, watches or changes them), are created in
// the transaction that creates the Event and removed in the one that
// removes it (RemoveWrites):
//
//	<recordPrefix><ns>/<name>/secrets   the copy of the project's secrets, sealed, as a Secret owned by the Event
//	<recordPrefix><ns>/<name>/tokens    tokenRecord: the hashes of the tokens registered for its units
//
// Only admins (the scheduler) read the secrets, through the secrets
// action; the plain tokens are never stored, only their hashes (here and
// as auth registrations).
const recordPrefix = registry.SystemPrefix + "events/"

// maxTokens bounds the tokens registered for one event: its worker and
// every job, each started again a few times (a scheduler that crashed
// between registering and starting mints a new token).
const maxTokens = 4 * 128

func secretsKey(ns, name string) string { return recordPrefix + ns + "/" + name + "/secrets" }
func tokensKey(ns, name string) string  { return recordPrefix + ns + "/" + name + "/tokens" }

// tokenRecord is an event's tokens record.
type tokenRecord struct {
	// UID is the event's uid: the record (and the tokens it lists) is that
	// event's, not another's created later with the same name.
	UID string `json:"uid"`
	// Hashes are the hashes (auth.Hash) of the tokens registered for its
	// units, each registered in auth as TokenUser of the event.
	Hashes []string `json:"hashes"`
}

// adminOnly is the rule of the actions only admins call: admins are
// allowed before any rule is consulted, so it refuses everyone else.
func adminOnly(why string) authz.Rule {
	return func(context.Context, authz.Attributes) (authz.Decision, string) { return authz.Deny, why }
}

// recordWrites are the writes creating the records of ev (whose uid is
// set) with the project's secrets data, for the event's creation
// transaction, and the conditions they need (no records there yet).
func recordWrites(reg *registry.Registry, ev *api.Event, data map[string][]byte) ([]store.Cond, []store.Op, error) {
	sec := &api.Secret{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindSecret},
		ObjectMeta: api.ObjectMeta{Name: ev.Name, Namespace: ev.Namespace,
			Labels: map[string]string{api.LabelEventProject: ev.Spec.Project},
			OwnerReferences: []api.OwnerReference{{APIVersion: api.APIVersion, Kind: api.KindEvent, Name: ev.Name,
				UID: ev.UID, Controller: true}}},
		Type: "cairn.dev/event",
		Data: data,
	}
	raw, err := json.Marshal(sec)
	if err != nil {
		return nil, nil, fmt.Errorf("event: encode the secrets of %s: %w", ev.Name, err)
	}
	sk, tk := secretsKey(ev.Namespace, ev.Name), tokensKey(ev.Namespace, ev.Name)
	put, err := reg.SealedPut(sk, raw)
	if err != nil {
		return nil, nil, err
	}
	toks, _ := json.Marshal(tokenRecord{UID: ev.UID, Hashes: []string{}})
	return []store.Cond{store.Absent(sk), store.Absent(tk)}, []store.Op{put, store.Put(tk, toks)}, nil
}

// RemoveWrites is the Event kind's removal hook (registry.Spec
// RemoveWrites): removing an event removes its records and unregisters
// every token registered for its units, in the same transaction,
// conditioned on no token being registered meanwhile. It blocks on one
// store read. Errors: the store's, a record that does not decode.
func (s *Service) RemoveWrites(ctx context.Context, obj *api.Object) ([]store.Cond, []store.Op, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, nil, err
	}
	tk := tokensKey(obj.Namespace, obj.Name)
	ops := []store.Op{store.Del(secretsKey(obj.Namespace, obj.Name)), store.Del(tk)}
	kv, err := reg.Store().Get(ctx, tk)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return []store.Cond{store.Absent(tk)}, ops, nil
	case err != nil:
		return nil, nil, err
	}
	var rec tokenRecord
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return nil, nil, fmt.Errorf("event: the tokens record of %s/%s does not decode: %w", obj.Namespace, obj.Name, err)
	}
	if rec.UID == obj.UID {
		for _, h := range rec.Hashes {
			ops = append(ops, auth.RevokeHashOp(h))
		}
	}
	return []store.Cond{store.Unchanged(tk, kv.ModRevision)}, ops, nil
}

// readTokens reads the tokens record of the event ns/name with its mod
// revision. Errors: store.ErrNotFound, the store's, a record that does
// not decode.
func readTokens(ctx context.Context, st *store.Store, ns, name string) (*tokenRecord, int64, error) {
	kv, err := st.Get(ctx, tokensKey(ns, name))
	if err != nil {
		return nil, 0, err
	}
	var rec tokenRecord
	if err := json.Unmarshal(kv.Value, &rec); err != nil {
		return nil, 0, fmt.Errorf("event: the tokens record of %s/%s does not decode: %w", ns, name, err)
	}
	return &rec, kv.ModRevision, nil
}

// handleSecrets serves GET .../events/{name}/secrets (admins only): the
// event's copy of its project's secrets, as a Secret named and owned by
// the Event.
func (s *Service) handleSecrets(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	sec, err := s.Secrets(ctx, req.Namespace, req.Name)
	if err != nil {
		return registry.ActionResult{}, err
	}
	return registry.ActionResult{Object: sec}, nil
}

// Secrets returns the copy of its project's secrets that the event
// ns/name was created with, as a Secret with the event's name whose owner
// reference holds the event's uid. The caller must be authorized (the
// endpoint is admins' only). It blocks on two store reads. Errors:
// NotFound (the event, or its secrets: an event created otherwise than
// through the events endpoint has none), the store's.
func (s *Service) Secrets(ctx context.Context, ns, name string) (*api.Secret, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	if _, err := s.getEvent(ctx, ns, name); err != nil {
		return nil, err
	}
	raw, _, err := reg.ReadSealed(ctx, secretsKey(ns, name))
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.NewStatus(api.ReasonNotFound, "event %s/%s has no secrets: it was not created through the events endpoint", ns, name)
	}
	if err != nil {
		return nil, err
	}
	var sec api.Secret
	if err := json.Unmarshal(raw, &sec); err != nil {
		return nil, fmt.Errorf("event: the secrets of %s/%s do not decode: %w", ns, name, err)
	}
	return &sec, nil
}

// handleTokens serves POST .../events/{name}/tokens (admins only).
func (s *Service) handleTokens(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	var tr api.EventTokenRequest
	dec := json.NewDecoder(bytes.NewReader(req.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		return registry.ActionResult{}, api.NewBadRequest("the body is not a token registration ({uid, hash}): %v", err)
	}
	if err := s.RegisterToken(ctx, req.Namespace, req.Name, tr); err != nil {
		return registry.ActionResult{}, err
	}
	return registry.ActionResult{Code: http.StatusCreated, Object: tr}, nil
}

// RegisterToken registers the token whose hash is tr.Hash for a unit of
// the event ns/name whose uid is tr.UID: the token then authenticates as
// the event's worker (TokenUser) while the event exists with that uid and
// its worker is not terminal (CheckToken), and is unregistered when the
// event is removed. Registering a hash twice for the event is a no-op. The
// caller must be authorized (the endpoint is admins' only). It blocks on
// two store reads and a transaction (a few when registrations race).
// Errors: BadRequest (uid or hash missing or malformed, naming the
// field); NotFound (the event); Conflict (another uid: the event was
// deleted and created again; its worker is terminal; it is being deleted;
// it has no tokens record; too many tokens; the hash is registered to
// someone else); the store's.
func (s *Service) RegisterToken(ctx context.Context, ns, name string, tr api.EventTokenRequest) error {
	switch {
	case tr.UID == "":
		return api.NewBadRequest("uid is required: the uid of the event the token is for")
	case !auth.ValidHash(tr.Hash):
		return api.NewBadRequest("hash must be the hex SHA-256 of the token: 64 lower-case hex digits")
	}
	reg, err := s.registry()
	if err != nil {
		return err
	}
	var stop error
	err = conflict.Retry(ctx, func() error {
		done, err := s.registerOnce(ctx, reg, ns, name, tr)
		if !done && err == nil {
			return api.NewStatus(api.ReasonConflict, "the tokens of event %s/%s keep changing; retry", ns, name)
		}
		stop = err // answered: not retried, whatever it is
		return nil
	})
	if err == nil {
		err = stop
	}
	return err
}

// registerOnce is one attempt of RegisterToken: done is false when the
// transaction's conditions failed and nothing else is known.
func (s *Service) registerOnce(ctx context.Context, reg *registry.Registry, ns, name string, tr api.EventTokenRequest) (bool, error) {
	ev, err := s.getEvent(ctx, ns, name)
	if err != nil {
		return true, err
	}
	switch {
	case ev.UID != tr.UID:
		return true, api.NewConflict(api.KindEvent, name, "the event has another uid: it was deleted and created again")
	case ev.Deleting():
		return true, api.NewConflict(api.KindEvent, name, "the event is being deleted: its units get no tokens")
	case ev.Status.Worker.Phase.Terminal():
		return true, api.NewConflict(api.KindEvent, name, fmt.Sprintf("the event's worker is %s: its units get no tokens", ev.Status.Worker.Phase))
	}
	rec, rev, err := readTokens(ctx, reg.Store(), ns, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true, api.NewConflict(api.KindEvent, name, "the event has no tokens record: it was not created through the events endpoint")
	case err != nil:
		return true, err
	case rec.UID != ev.UID:
		return false, nil // the record of an event being replaced: read again
	case slices.Contains(rec.Hashes, tr.Hash):
		return true, nil
	case len(rec.Hashes) >= maxTokens:
		return true, api.NewConflict(api.KindEvent, name, fmt.Sprintf("the event already has %d tokens, the most it may have", maxTokens))
	}
	rec.Hashes = append(rec.Hashes, tr.Hash)
	raw, err := json.Marshal(rec)
	if err != nil {
		return true, err
	}
	hk := auth.HashKey(tr.Hash)
	_, err = reg.Store().Txn(ctx, []store.Cond{store.Unchanged(tokensKey(ns, name), rev), store.Absent(hk)},
		store.Put(tokensKey(ns, name), raw), auth.HashOp(tr.Hash, TokenUser(ns, name)))
	if !errors.Is(err, store.ErrPrecondition) {
		return true, err
	}
	if _, err := reg.Store().Get(ctx, hk); err == nil {
		return true, api.NewConflict(api.KindEvent, name, "this token hash is already registered")
	}
	return false, nil
}
