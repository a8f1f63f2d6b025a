// Package local is the in-process cairn client: it implements
// client.Interface by calling a registry in the same process, with the same
// semantics and errors as the HTTP client and no serialization. It is the
// only client-side package that links the registry (and through it the
// store): controllers import package client and are handed a local client
// by the process that runs them.
//
// A local client acts as the identity it is built with, explicitly:
// controllers inside `cairn server` use identity.System(). Nothing falls
// back to an admin.
package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
)

// localClient implements client.Interface by calling a registry
// in-process as one identity.
type localClient struct {
	r  *registry.Registry
	as identity.User
}

// New returns a client that calls reg directly and acts as the caller as:
// every call runs with as in its context (identity.From), whatever identity
// ctx carries, so the registry, its authorization and the kinds' hooks see
// as as the caller. A zero User is no identity: identity.From reports none
// and whatever checks the caller refuses it; nothing falls back to an
// admin.
func New(reg *registry.Registry, as identity.User) client.Interface {
	return &localClient{r: reg, as: as}
}

// caller returns ctx carrying the client's identity and, unless it has
// one, the API's store timeout (registry.WithStoreTimeout).
func (c *localClient) caller(ctx context.Context) context.Context {
	return identity.With(c.r.WithStoreTimeout(ctx), c.as)
}

// Create creates obj. A kind that serves its own create (a POST action on
// its collection, as Events do: the Event, its secrets and its tokens in
// one transaction) is created through that action, as over HTTP; the
// others through the registry's Create.
func (c *localClient) Create(ctx context.Context, obj *api.Object) (*api.Object, error) {
	k, a, ok := c.createAction(obj.Kind)
	if !ok {
		return c.r.Create(c.caller(ctx), obj)
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("local: create %s: encode: %w", obj.Kind, err)
	}
	res, err := c.r.Act(c.caller(ctx), k, a, registry.ActionRequest{Namespace: obj.Namespace, Body: body})
	if err != nil {
		return nil, err
	}
	if o, ok := res.Object.(*api.Object); ok {
		return o, nil
	}
	// Another answer (a fan-out's list) reads as the HTTP client reads it.
	raw, err := json.Marshal(res.Object)
	if err != nil {
		return nil, fmt.Errorf("local: create %s: encode the answer: %w", obj.Kind, err)
	}
	out := &api.Object{}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("local: create %s: decode the answer: %w", obj.Kind, err)
	}
	return out, nil
}

// createAction is the action that serves POST on kind's collection, if
// the kind has one.
func (c *localClient) createAction(kind string) (*registry.Kind, *registry.Action, bool) {
	k, err := c.r.Lookup(kind)
	if err != nil {
		return nil, nil, false
	}
	for i := range k.Actions {
		if a := &k.Actions[i]; a.Name == "" && a.Collection && a.Method == http.MethodPost {
			return k, a, true
		}
	}
	return nil, nil, false
}

func (c *localClient) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	return c.r.Get(c.caller(ctx), kind, ns, name)
}

func (c *localClient) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	return c.r.List(c.caller(ctx), kind, ns, opts)
}

func (c *localClient) Update(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return c.r.Update(c.caller(ctx), obj)
}

func (c *localClient) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	return c.r.UpdateStatus(c.caller(ctx), obj)
}

func (c *localClient) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error) {
	return c.r.Patch(c.caller(ctx), kind, ns, name, patch, status)
}

func (c *localClient) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	return c.r.Delete(c.caller(ctx), kind, ns, name, opts)
}

func (c *localClient) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	return c.r.Watch(c.caller(ctx), kind, ns, opts)
}

func (c *localClient) Kinds(context.Context) ([]api.KindInfo, error) { return c.r.Kinds(), nil }

// action finds the registered action a request addresses.
func (c *localClient) action(req client.ActionRequest) (*registry.Kind, *registry.Action, error) {
	k, err := c.r.Lookup(req.Kind)
	if err != nil {
		return nil, nil, err
	}
	for i := range k.Actions {
		a := &k.Actions[i]
		if a.Name != req.Action || a.Collection != (req.Name == "") {
			continue
		}
		if a.Method != req.HTTPMethod() {
			return nil, nil, api.NewStatus(api.ReasonMethodNotAllowed, "%s %s/%s does not accept %s", k.Kind, k.Plural, a.Name, req.HTTPMethod())
		}
		return k, a, nil
	}
	return nil, nil, api.NewStatus(api.ReasonNotFound, "%s has no action %q", k.Kind, req.Action)
}

func (c *localClient) run(ctx context.Context, req client.ActionRequest) (registry.ActionResult, error) {
	k, a, err := c.action(req)
	if err != nil {
		return registry.ActionResult{}, err
	}
	return c.r.Act(c.caller(ctx), k, a, registry.ActionRequest{
		Namespace: req.Namespace, Name: req.Name, Query: req.Query, Body: req.Body,
	})
}

func (c *localClient) Action(ctx context.Context, req client.ActionRequest) ([]byte, error) {
	res, err := c.run(ctx, req)
	if err != nil {
		return nil, err
	}
	if res.Stream != nil {
		rc := c.stream(ctx, res)
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	if res.Object == nil {
		return nil, nil
	}
	b, err := json.Marshal(res.Object)
	if err != nil {
		return nil, fmt.Errorf("local: action %s: encode result: %w", req.Action, err)
	}
	return b, nil
}

func (c *localClient) ActionStream(ctx context.Context, req client.ActionRequest) (io.ReadCloser, error) {
	res, err := c.run(ctx, req)
	if err != nil {
		return nil, err
	}
	if res.Stream == nil {
		if res.Object == nil {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		b, err := json.Marshal(res.Object)
		if err != nil {
			return nil, fmt.Errorf("local: action %s: encode result: %w", req.Action, err)
		}
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	return c.stream(ctx, res), nil
}

// stream runs an action's Stream in a goroutine writing into a pipe. The
// goroutine ends when the stream function returns, which it does when ctx
// is done or when the reader is closed (its writes then fail).
func (c *localClient) stream(ctx context.Context, res registry.ActionResult) io.ReadCloser {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	go func() {
		defer cancel()
		err := res.Stream(ctx, pw, func() {})
		pw.CloseWithError(err) // nil closes with io.EOF
	}()
	return &pipeReader{PipeReader: pr, cancel: cancel}
}

// pipeReader cancels the streaming action when the reader is closed.
type pipeReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (p *pipeReader) Close() error {
	p.cancel()
	return p.PipeReader.Close()
}
